//! Discovery (`/api`, `/apis`, resource lists, `/version`), health paths, the Node object,
//! namespaces (every name exists), the TokenRequest API and SelfSubjectAccessReview.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Api, Target, objects};
use crate::auth::{Attributes, Decision, Subject};
use crate::http::{Req, Resp, full, json as json_resp};
use crate::status::{ApiError, NODES};

fn resource(name: &str, kind: &str, namespaced: bool, verbs: &[&str], short: &[&str]) -> Value {
    let mut r =
        json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs});
    if !short.is_empty() {
        r["shortNames"] = json!(short);
    }
    r
}

/// Answer a non-resource path.
pub(super) fn non_resource(api: &Arc<Api>, path: &str) -> Result<Resp, ApiError> {
    let v = match path {
        "/api" => json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.1:{}", api.api_port)}]}),
        "/apis" => json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            group("argoproj.io", "v1alpha1"), group("authorization.k8s.io", "v1")]}),
        "/apis/argoproj.io" => group("argoproj.io", "v1alpha1"),
        "/apis/authorization.k8s.io" => group("authorization.k8s.io", "v1"),
        "/api/v1" => json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            resource("pods", "Pod", true, &["create", "delete", "get", "list", "patch", "watch"], &["po"]),
            resource("pods/log", "Pod", true, &["get"], &[]),
            resource("pods/exec", "PodExecOptions", true, &["create", "get"], &[]),
            resource("configmaps", "ConfigMap", true,
                &["create", "delete", "get", "list", "patch", "update", "watch"], &["cm"]),
            resource("secrets", "Secret", true,
                &["create", "delete", "get", "list", "patch", "update", "watch"], &[]),
            resource("nodes", "Node", false, &["get", "list"], &["no"]),
            resource("namespaces", "Namespace", false, &["get"], &["ns"]),
            resource("serviceaccounts/token", "TokenRequest", true, &["create"], &[]),
        ]}),
        "/apis/argoproj.io/v1alpha1" => {
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "argoproj.io/v1alpha1", "resources": [
                resource("workflowtaskresults", "WorkflowTaskResult", true,
                    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"], &["wftr"]),
            ]})
        }
        "/apis/authorization.k8s.io/v1" => {
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "authorization.k8s.io/v1", "resources": [
                resource("selfsubjectaccessreviews", "SelfSubjectAccessReview", false, &["create"], &[]),
            ]})
        }
        "/version" => json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0+argoexec-local",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "", "compiler": "rustc", "platform": "linux/amd64"}),
        "/openapi/v3" => json!({"paths": {
            "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=argoexec1"},
            "apis/argoproj.io/v1alpha1": {"serverRelativeURL": "/openapi/v3/apis/argoproj.io/v1alpha1?hash=argoexec1"},
        }}),
        "/openapi/v3/api/v1" => openapi_v3(
            "",
            "v1",
            &[
                ("Pod", "/api/v1/namespaces/{namespace}/pods/{name}"),
                ("ConfigMap", "/api/v1/namespaces/{namespace}/configmaps/{name}"),
                ("Secret", "/api/v1/namespaces/{namespace}/secrets/{name}"),
            ],
        ),
        "/openapi/v3/apis/argoproj.io/v1alpha1" => openapi_v3(
            "argoproj.io",
            "v1alpha1",
            &[(
                "WorkflowTaskResult",
                "/apis/argoproj.io/v1alpha1/namespaces/{namespace}/workflowtaskresults/{name}",
            )],
        ),
        "/healthz" | "/livez" | "/readyz" => return Ok(full(200, "text/plain; charset=utf-8", "ok")),
        _ => return Err(ApiError::no_route()),
    };
    Ok(json_resp(200, &v))
}

/// A minimal OpenAPI v3 document: just enough for kubectl to see that the PATCH of each
/// kind takes `fieldValidation`, so it validates on the server (which accepts any fields)
/// instead of downloading full schemas for client-side validation.
fn openapi_v3(group: &str, version: &str, kinds: &[(&str, &str)]) -> Value {
    let param = json!({"name": "fieldValidation", "in": "query", "schema": {"type": "string"}});
    let paths: serde_json::Map<String, Value> = kinds
        .iter()
        .map(|(kind, path)| {
            let gvk = json!({"group": group, "version": version, "kind": kind});
            let ops = json!({
                "get": {"x-kubernetes-group-version-kind": gvk, "responses": {}},
                "patch": {"x-kubernetes-group-version-kind": gvk, "parameters": [param], "responses": {}}
            });
            ((*path).to_string(), ops)
        })
        .collect();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "argoexec local node", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": {}}
    })
}

/// An OpenAPI v2 document without paths or definitions. kubectl before 1.30 downloads it
/// (as protobuf) to validate manifests; with no schema for a kind it skips client-side
/// validation, and the server accepts the object as it is.
pub(super) fn openapi_v2(req: &Req) -> Resp {
    let proto = req
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("protobuf"));
    if proto {
        // gnostic openapi_v2.Document { swagger (1): "2.0", info (2): { title (1), version (2) } }
        let title = b"argoexec local node";
        let version = b"v1.33.0";
        let mut info = vec![0x0a, title.len() as u8];
        info.extend_from_slice(title);
        info.extend_from_slice(&[0x12, version.len() as u8]);
        info.extend_from_slice(version);
        let mut doc = vec![0x0a, 3, b'2', b'.', b'0', 0x12, info.len() as u8];
        doc.extend_from_slice(&info);
        return full(200, "application/octet-stream", doc);
    }
    json_resp(
        200,
        &json!({"swagger": "2.0", "info": {"title": "argoexec local node", "version": "v1.33.0"}, "paths": {}}),
    )
}

fn group(name: &str, version: &str) -> Value {
    let gv = json!({"groupVersion": format!("{name}/{version}"), "version": version});
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": [gv.clone()], "preferredVersion": gv})
}

/// The Node object.
fn node(api: &Api) -> Value {
    let name = api.pods.node_name();
    json!({
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": api.kubelet_port}},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
            "nodeInfo": {"containerRuntimeVersion": "docker://local", "kubeletVersion": "v1.33.0+argoexec-local", "operatingSystem": "linux", "architecture": "amd64"}
        }
    })
}

/// `nodes` get and list.
pub(super) fn nodes(api: &Arc<Api>, t: &Target) -> Result<Resp, ApiError> {
    let n = node(api);
    match t.name.as_deref() {
        None => Ok(json_resp(
            200,
            &json!({"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": [n]}),
        )),
        Some(name) if name == api.pods.node_name() => Ok(json_resp(200, &n)),
        Some(name) => Err(ApiError::not_found(&NODES, name)),
    }
}

/// `namespaces/{name}`: every namespace exists and is active.
pub(super) fn namespace(t: &Target) -> Result<Resp, ApiError> {
    let Some(name) = &t.name else {
        return Err(ApiError::method_not_allowed("list namespaces"));
    };
    Ok(json_resp(
        200,
        &json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
    ))
}

/// `POST serviceaccounts/{sa}/token`: a TokenRequest.
pub(super) async fn token_request(api: &Arc<Api>, req: Req, t: &Target) -> Result<Resp, ApiError> {
    let (Some(ns), Some(sa)) = (t.namespace.as_deref(), t.name.as_deref()) else {
        return Err(ApiError::no_route());
    };
    let body = objects::object_body(req).await.unwrap_or_else(|_| json!({}));
    let secs = body["spec"]["expirationSeconds"]
        .as_u64()
        .unwrap_or(3600)
        .max(600);
    let token = api
        .tokens
        .issue(Subject::service_account(ns, sa), Some(Duration::from_secs(secs)));
    let exp = argoexec_node::status::now().0.as_second() + i64::try_from(secs).unwrap_or(0);
    let expires = k8s_openapi::jiff::Timestamp::from_second(exp)
        .map(|t| t.to_string())
        .unwrap_or_default();
    Ok(json_resp(
        201,
        &json!({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": sa, "namespace": ns},
                "spec": {"audiences": ["https://kubernetes.default.svc.cluster.local"], "expirationSeconds": secs},
                "status": {"token": token, "expirationTimestamp": expires}}),
    ))
}

/// `POST selfsubjectaccessreviews`.
pub(super) async fn self_review(api: &Arc<Api>, req: Req, who: &Subject) -> Result<Resp, ApiError> {
    let mut body = objects::object_body(req).await?;
    let ra = body["spec"]["resourceAttributes"].clone();
    let s = |k: &str| ra[k].as_str().unwrap_or("").to_string();
    let (verb, group, resource, sub, ns, name) = (
        s("verb"),
        s("group"),
        s("resource"),
        s("subresource"),
        s("namespace"),
        s("name"),
    );
    let a = Attributes {
        verb: &verb,
        group: &group,
        resource: &resource,
        subresource: (!sub.is_empty()).then_some(sub.as_str()),
        namespace: (!ns.is_empty()).then_some(ns.as_str()),
        name: (!name.is_empty()).then_some(name.as_str()),
        path: "",
    };
    let status = match api.rbac.authorize(who, &a) {
        Decision::Allow(reason) => json!({"allowed": true, "reason": reason}),
        Decision::Deny => json!({"allowed": false}),
    };
    body["status"] = status;
    body["apiVersion"] = json!("authorization.k8s.io/v1");
    body["kind"] = json!("SelfSubjectAccessReview");
    Ok(json_resp(201, &body))
}
