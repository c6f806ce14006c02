//! Discovery (`/api`, `/apis`, the resource lists of every served group/version, built from
//! the registry, so custom resources appear once their CRD is stored; `/version`), health
//! paths, the Node object, namespaces (every name exists), the TokenRequest API and
//! SelfSubjectAccessReview.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Api, Target, aggregated, objects};
use crate::auth::{Attributes, Decision, Subject};
use crate::http::{Req, Resp, full, json as json_resp};
use crate::registry::ResourceType;
use crate::status::{ApiError, NODES};

/// One `APIResource` of a legacy discovery list.
fn entry(name: &str, kind: &str, namespaced: bool, verbs: &[&str], short: &[String]) -> Value {
    let mut r =
        json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs});
    if !short.is_empty() {
        r["shortNames"] = json!(short);
    }
    r
}

/// The `APIResource`s of a registry type: the resource, then its subresources.
fn entries(t: &ResourceType) -> Vec<Value> {
    let kind = t.resource.kind.as_ref();
    let plural = t.resource.plural.as_ref();
    let mut main = entry(plural, kind, t.namespaced, &t.verbs, &t.short_names);
    main["singularName"] = json!(t.singular);
    if !t.categories.is_empty() {
        main["categories"] = json!(t.categories);
    }
    let mut out = vec![main];
    if plural == "pods" {
        out.push(entry("pods/log", "Pod", true, &["get"], &[]));
        out.push(entry(
            "pods/exec",
            "PodExecOptions",
            true,
            &["create", "get"],
            &[],
        ));
        out.push(entry("pods/status", "Pod", true, &["get"], &[]));
    } else if t.status {
        out.push(entry(
            &format!("{plural}/status"),
            kind,
            t.namespaced,
            &["get", "patch", "update"],
            &[],
        ));
    }
    out
}

/// The legacy `APIResourceList` of `group`/`version`.
fn resource_list(api: &Api, group: &str, version: &str) -> Option<Value> {
    let mut resources: Vec<Value> = api
        .registry
        .in_group_version(group, version)
        .iter()
        .flat_map(|t| entries(t))
        .collect();
    match (group, version) {
        ("", "v1") => {
            resources.push(entry("nodes", "Node", false, &["get", "list"], &["no".into()]));
            resources.push(entry("namespaces", "Namespace", false, &["get"], &["ns".into()]));
            resources.push(entry(
                "serviceaccounts/token",
                "TokenRequest",
                true,
                &["create"],
                &[],
            ));
        }
        ("authorization.k8s.io", "v1") => {
            resources.push(entry(
                "selfsubjectaccessreviews",
                "SelfSubjectAccessReview",
                false,
                &["create"],
                &[],
            ));
        }
        _ if resources.is_empty() => return None,
        _ => {}
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

/// Every API group (not the core one) with its versions, the preferred one first.
fn api_groups(api: &Api) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = api
        .registry
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .collect();
    groups.push(("authorization.k8s.io".into(), vec!["v1".into()]));
    groups
}

/// Answer a non-resource path (`accept`: the request's `Accept`).
pub(super) fn non_resource(api: &Arc<Api>, path: &str, accept: &str) -> Result<Resp, ApiError> {
    if let (Some(version), "/api" | "/apis") = (aggregated::wanted(accept), path) {
        let doc = aggregated::document(api, path == "/api", &api_groups(api), version);
        let body = serde_json::to_vec(&doc).unwrap_or_default();
        return Ok(full(200, &aggregated::media_type(version), body));
    }
    let v = match path {
        "/api" => json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.1:{}", api.api_port)}]}),
        "/apis" => {
            let groups: Vec<Value> = api_groups(api).iter().map(|(g, vs)| group(g, vs)).collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        "/version" => json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0+argoexec-local",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "", "compiler": "rustc", "platform": "linux/amd64"}),
        "/healthz" | "/livez" | "/readyz" => return Ok(full(200, "text/plain; charset=utf-8", "ok")),
        p if p.starts_with("/openapi/v3") => return super::openapi::v3(api, p),
        p => {
            let segs: Vec<&str> = p.trim_matches('/').split('/').collect();
            match segs.as_slice() {
                ["api", v] => resource_list(api, "", v).ok_or_else(ApiError::no_route)?,
                ["apis", g] => {
                    let groups = api_groups(api);
                    let (name, vs) = groups
                        .iter()
                        .find(|(n, _)| n == g)
                        .ok_or_else(ApiError::no_route)?;
                    group(name, vs)
                }
                ["apis", g, v] => resource_list(api, g, v).ok_or_else(ApiError::no_route)?,
                _ => return Err(ApiError::no_route()),
            }
        }
    };
    Ok(json_resp(200, &v))
}

fn group(name: &str, versions: &[String]) -> Value {
    let gvs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = gvs.first().cloned().unwrap_or(Value::Null);
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": gvs, "preferredVersion": preferred})
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
