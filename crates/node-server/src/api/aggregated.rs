//! Aggregated discovery (`apidiscovery.k8s.io` `APIGroupDiscoveryList`, v2 and v2beta1),
//! which kubectl ≥ 1.26 asks `/api` and `/apis` for first: every group, version and
//! resource in one document, built from the same registry as the legacy lists. A client
//! that asks for neither gets the legacy documents.

use serde_json::{Value, json};

use super::Api;
use crate::registry::ResourceType;

/// The aggregated format version `accept` asks for, if any (`v2` preferred).
pub(super) fn wanted(accept: &str) -> Option<&'static str> {
    let offers = |v: &str| {
        accept.split(',').any(|a| {
            let parts: Vec<&str> = a.split(';').map(str::trim).collect();
            parts.contains(&"g=apidiscovery.k8s.io")
                && parts.contains(&format!("v={v}").as_str())
                && parts.contains(&"as=APIGroupDiscoveryList")
        })
    };
    ["v2", "v2beta1"].into_iter().find(|v| offers(v))
}

/// The media type of an answer in format `version`.
pub(super) fn media_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

fn kind_ref(t: &ResourceType, version: &str, kind: &str) -> Value {
    json!({"group": t.resource.group, "version": version, "kind": kind})
}

/// One `APIResourceDiscovery`.
fn resource(t: &ResourceType, version: &str) -> Value {
    let kind = t.resource.kind.as_ref();
    let mut subs = Vec::new();
    if t.resource.plural == "pods" && t.resource.group.is_empty() {
        subs.push(
            json!({"subresource": "log", "responseKind": kind_ref(t, version, "Pod"), "verbs": ["get"]}),
        );
        subs.push(json!({"subresource": "exec", "responseKind": kind_ref(t, version, "PodExecOptions"), "verbs": ["create", "get"]}));
        subs.push(
            json!({"subresource": "status", "responseKind": kind_ref(t, version, "Pod"), "verbs": ["get"]}),
        );
    } else if t.status {
        subs.push(json!({"subresource": "status", "responseKind": kind_ref(t, version, kind), "verbs": ["get", "patch", "update"]}));
    }
    let mut r = json!({
        "resource": t.resource.plural,
        "responseKind": kind_ref(t, version, kind),
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": t.verbs,
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    if !subs.is_empty() {
        r["subresources"] = json!(subs);
    }
    r
}

/// Resources the node serves outside the registry, by group/version.
fn extra(group: &str, version: &str) -> Vec<Value> {
    let k = |kind: &str| json!({"group": group, "version": version, "kind": kind});
    match (group, version) {
        ("", "v1") => vec![
            json!({"resource": "nodes", "responseKind": k("Node"), "scope": "Cluster", "singularResource": "node", "verbs": ["get", "list"], "shortNames": ["no"]}),
            json!({"resource": "namespaces", "responseKind": k("Namespace"), "scope": "Cluster", "singularResource": "namespace", "verbs": ["get"], "shortNames": ["ns"]}),
        ],
        ("authorization.k8s.io", "v1") => vec![
            json!({"resource": "selfsubjectaccessreviews", "responseKind": k("SelfSubjectAccessReview"), "scope": "Cluster", "singularResource": "selfsubjectaccessreview", "verbs": ["create"]}),
        ],
        _ => Vec::new(),
    }
}

fn group_doc(api: &Api, group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let mut resources: Vec<Value> = api
                .registry
                .in_group_version(group, v)
                .iter()
                .map(|t| resource(t, v))
                .collect();
            resources.extend(extra(group, v));
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let meta = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": meta, "versions": versions})
}

/// The document of `/api` (`core`) or `/apis`, in format `version`.
pub(super) fn document(api: &Api, core: bool, groups: &[(String, Vec<String>)], version: &str) -> Value {
    let items: Vec<Value> = if core {
        vec![group_doc(api, "", &["v1".to_string()])]
    } else {
        groups.iter().map(|(g, vs)| group_doc(api, g, vs)).collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_header_chooses_the_format() {
        let kubectl_133 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wanted(kubectl_133), Some("v2"));
        let kubectl_127 =
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wanted(kubectl_127), Some("v2beta1"));
        assert_eq!(wanted("application/json, */*"), None);
    }

    #[test]
    fn resources_carry_scope_kind_and_subresources() {
        let r = resource(&crate::registry::CRDS, "v1");
        assert_eq!(r["scope"], "Cluster");
        assert_eq!(r["responseKind"]["kind"], "CustomResourceDefinition");
        assert_eq!(r["subresources"][0]["subresource"], "status");
        assert_eq!(r["shortNames"], json!(["crd", "crds"]));
    }
}
