//! Which API resource an object or a flag names: group/version/kind → plural and scope by
//! kube-rs discovery (`kube::discovery::pinned_kind`, one request for the group version),
//! and resource types written as kubectl reads them (`pods`, `pod`, `po`, `Pod`,
//! `deployment.apps`) by searching the discovery lists (the core group first).

use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};

use crate::ResourceError;

/// A resource kind on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Namespaced (true) or cluster-scoped.
    pub namespaced: bool,
}

impl Target {
    /// Built into Kubernetes (core, `apps`, `*.k8s.io`, …) rather than a custom resource: a
    /// CRD's group always has a dot and is not `*.k8s.io` without an API review.
    pub fn is_builtin(&self) -> bool {
        let g = &self.resource.group;
        !g.contains('.') || g.ends_with(".k8s.io")
    }

    /// The collection path, in `namespace` for a namespaced kind.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let r = &self.resource;
        let base = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", r.plural),
            None => format!("{base}/{}", r.plural),
        }
    }
}

/// One object: its kind, namespace (none for cluster-scoped kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// The kind.
    pub target: Target,
    /// The namespace, for namespaced kinds.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectRef {
    /// A dynamic API for the object's collection.
    pub fn api(&self, client: &Client) -> Api<DynamicObject> {
        match &self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &self.target.resource),
            None => Api::all_with(client.clone(), &self.target.resource),
        }
    }

    /// Argo's resource name, `kind.group/name` with the kind in lower case (`configmap./x`,
    /// `job.batch/x`), as its executor logs it and passes to `kubectl get`.
    pub fn argo_name(&self) -> String {
        let r = &self.target.resource;
        format!("{}.{}/{}", r.kind.to_lowercase(), r.group, self.name)
    }

    /// For messages: `configmap./x in namespace argo`.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} in namespace {ns}", self.argo_name()),
            None => self.argo_name(),
        }
    }
}

/// Resolve `apiVersion` + `kind` through discovery.
///
/// # Errors
/// [`ResourceError::UnknownKind`] naming group, version and kind.
pub async fn for_kind(client: &Client, api_version: &str, kind: &str) -> Result<Target, ResourceError> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let unknown = |source| ResourceError::UnknownKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        source,
    };
    match crate::retry::transient(|| kube::discovery::pinned_kind(client, &gvk)).await {
        Ok((resource, caps)) => Ok(Target {
            resource,
            namespaced: caps.scope == Scope::Namespaced,
        }),
        Err(e @ kube::Error::Api(_)) if crate::retry::status(&e) != Some(404) => Err(ResourceError::Api {
            action: "discover",
            object: format!("{api_version} {kind}"),
            source: Box::new(e),
        }),
        Err(e @ kube::Error::Api(_)) => Err(unknown(Some(Box::new(e)))),
        Err(kube::Error::Discovery(_)) => Err(unknown(None)),
        Err(e) => Err(ResourceError::Api {
            action: "discover",
            object: format!("{api_version} {kind}"),
            source: Box::new(e),
        }),
    }
}

/// Resolve a resource type as kubectl reads it: plural, singular, kind or short name,
/// optionally `.group`.
///
/// # Errors
/// [`ResourceError::UnknownType`]; API errors of discovery.
pub async fn for_type(client: &Client, word: &str) -> Result<Target, ResourceError> {
    let (name, group) = match word.split_once('.') {
        Some((n, g)) => (n, Some(g)),
        None => (word, None),
    };
    let api_err = |source| ResourceError::Api {
        action: "discover",
        object: format!("resource type {word:?}"),
        source: Box::new(source),
    };
    let mut versions: Vec<String> = Vec::new();
    if group.is_none_or(str::is_empty) {
        versions.push("v1".into());
    }
    if group.is_none_or(|g| !g.is_empty()) {
        let groups = crate::retry::transient(|| client.list_api_groups())
            .await
            .map_err(api_err)?;
        for g in groups.groups {
            if group.is_some_and(|want| want != g.name) {
                continue;
            }
            if let Some(v) = g.preferred_version.or_else(|| g.versions.into_iter().next()) {
                versions.push(v.group_version);
            }
        }
    }
    for gv in versions {
        let list = if gv == "v1" {
            crate::retry::transient(|| client.list_core_api_resources("v1")).await
        } else {
            crate::retry::transient(|| client.list_api_group_resources(&gv)).await
        }
        .map_err(api_err)?;
        let found = list.resources.into_iter().find(|r| {
            !r.name.contains('/')
                && (r.name == name
                    || r.singular_name == name
                    || r.kind.eq_ignore_ascii_case(name)
                    || r.short_names
                        .as_ref()
                        .is_some_and(|s| s.iter().any(|s| s == name)))
        });
        if let Some(r) = found {
            let (g, v) = match gv.split_once('/') {
                Some((g, v)) => (g.to_string(), v.to_string()),
                None => (String::new(), gv.clone()),
            };
            let gvk = GroupVersionKind::gvk(&g, &v, &r.kind);
            return Ok(Target {
                resource: ApiResource::from_gvk_with_plural(&gvk, &r.name),
                namespaced: r.namespaced,
            });
        }
    }
    Err(ResourceError::UnknownType(word.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(group: &str, kind: &str, plural: &str, namespaced: bool) -> Target {
        Target {
            resource: ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural),
            namespaced,
        }
    }

    #[test]
    fn builtin_paths_and_argo_names() {
        let cm = target("", "ConfigMap", "configmaps", true);
        assert!(cm.is_builtin());
        assert!(target("apps", "Deployment", "deployments", true).is_builtin());
        assert!(target("networking.k8s.io", "Ingress", "ingresses", true).is_builtin());
        assert!(!target("argoproj.io", "Workflow", "workflows", true).is_builtin());
        assert_eq!(cm.collection_path(Some("ns")), "/api/v1/namespaces/ns/configmaps");
        let ns = target("", "Namespace", "namespaces", false);
        assert_eq!(ns.collection_path(Some("ignored")), "/api/v1/namespaces");
        let wf = target("argoproj.io", "Workflow", "workflows", true);
        assert_eq!(
            wf.collection_path(Some("a")),
            "/apis/argoproj.io/v1/namespaces/a/workflows"
        );
        let obj = ObjectRef {
            target: cm,
            namespace: Some("argo".into()),
            name: "x".into(),
        };
        assert_eq!(obj.argo_name(), "configmap./x");
        assert_eq!(obj.describe(), "configmap./x in namespace argo");
        let obj = ObjectRef {
            target: wf,
            namespace: None,
            name: "w".into(),
        };
        assert_eq!(obj.argo_name(), "workflow.argoproj.io/w");
    }
}
