//! The resource types the API endpoint serves, keyed by `(group, plural)`: the built-in
//! ones (pods, ConfigMaps, Secrets, Services, ServiceAccounts, Events, Jobs, Deployments,
//! CustomResourceDefinitions, and Argo's WorkflowTaskResults, WorkflowArtifactGCTasks and
//! WorkflowTaskSets — the last two with a status subresource, as Argo's CRDs) and whatever
//! custom resources the stored CustomResourceDefinitions define. Discovery, routing, the
//! store and the patch strategies all read a type from here.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};

use crate::status::Resource;

/// Every verb of a fully served resource.
pub const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// One served resource type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// Group, plural and kind (errors name the type by these).
    pub resource: Resource,
    /// Served versions, the storage version first.
    pub versions: Vec<String>,
    /// Singular name (`pod`).
    pub singular: String,
    /// Namespaced (else cluster-scoped).
    pub namespaced: bool,
    /// Short names (`cm`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether it has a `status` subresource: writes to the object keep its status, writes
    /// to `/status` change only the status.
    pub status: bool,
    /// Built into the API server (strategic merge patch allowed); custom resources are not.
    pub built_in: bool,
    /// `metadata.generation` is kept: 1 on create, bumped by every change outside
    /// `metadata` (and outside `status` when there is a status subresource).
    pub generation: bool,
    /// The verbs discovery lists.
    pub verbs: Vec<&'static str>,
    /// A DELETE answers with the deleted object (Services, ServiceAccounts), not a
    /// `Status`, as the API server's storage for them does.
    pub delete_returns_object: bool,
    /// The CustomResourceDefinition that defined it (`<plural>.<group>`); `None` for the
    /// types the node predefines, which are never replaced or removed.
    pub crd: Option<String>,
}

/// A shared resource type.
pub type Kind = Arc<ResourceType>;

/// A type's key: `(group, plural)`.
pub type GroupResource = (String, String);

impl ResourceType {
    /// The key of this type.
    pub fn key(&self) -> GroupResource {
        (self.resource.group.to_string(), self.resource.plural.to_string())
    }

    /// The storage (and preferred) version.
    pub fn storage_version(&self) -> &str {
        self.versions.first().map_or("v1", String::as_str)
    }

    /// `apiVersion` of `version` in this type's group.
    pub fn api_version(&self, version: &str) -> String {
        if self.resource.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.resource.group)
        }
    }

    /// `(apiVersion, kind)` of stored objects (the storage version).
    pub fn type_meta(&self) -> (String, &str) {
        (
            self.api_version(self.storage_version()),
            self.resource.kind.as_ref(),
        )
    }

    /// Whether `version` is served.
    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// Whether `verb` is served on the main resource.
    pub fn allows(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }
}

/// The table of the built-in types.
struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
    status: bool,
    generation: bool,
}

const fn b(
    group: &'static str,
    version: &'static str,
    (plural, singular, kind): (&'static str, &'static str, &'static str),
    short: &'static [&'static str],
    status: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        singular,
        kind,
        short,
        status,
        generation: status,
    }
}

const BUILTINS: [Builtin; 12] = [
    b("", "v1", ("pods", "pod", "Pod"), &["po"], true),
    b("", "v1", ("configmaps", "configmap", "ConfigMap"), &["cm"], false),
    b("", "v1", ("secrets", "secret", "Secret"), &[], false),
    b("", "v1", ("services", "service", "Service"), &["svc"], true),
    b(
        "",
        "v1",
        ("serviceaccounts", "serviceaccount", "ServiceAccount"),
        &["sa"],
        false,
    ),
    b("", "v1", ("events", "event", "Event"), &["ev"], false),
    b("batch", "v1", ("jobs", "job", "Job"), &[], true),
    b(
        "apps",
        "v1",
        ("deployments", "deployment", "Deployment"),
        &["deploy"],
        true,
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        (
            "customresourcedefinitions",
            "customresourcedefinition",
            "CustomResourceDefinition",
        ),
        &["crd", "crds"],
        true,
    ),
    b(
        "argoproj.io",
        "v1alpha1",
        ("workflowtaskresults", "workflowtaskresult", "WorkflowTaskResult"),
        &["wftr"],
        false,
    ),
    b(
        "argoproj.io",
        "v1alpha1",
        (
            "workflowartifactgctasks",
            "workflowartifactgctask",
            "WorkflowArtifactGCTask",
        ),
        &["wfat"],
        true,
    ),
    b(
        "argoproj.io",
        "v1alpha1",
        ("workflowtasksets", "workflowtaskset", "WorkflowTaskSet"),
        &["wfts"],
        true,
    ),
];

fn builtin(x: &Builtin) -> ResourceType {
    let custom = x.group == "argoproj.io";
    let verbs = match x.plural {
        // The pods handler serves these (no update, no deletecollection).
        "pods" => vec!["create", "delete", "get", "list", "patch", "watch"],
        _ => ALL_VERBS.to_vec(),
    };
    ResourceType {
        resource: Resource::of(x.group, x.plural, x.kind),
        versions: vec![x.version.to_string()],
        singular: x.singular.to_string(),
        namespaced: x.plural != "customresourcedefinitions",
        short_names: x.short.iter().map(|s| (*s).to_string()).collect(),
        categories: Vec::new(),
        status: x.status,
        // Argo's task results are a CRD in a cluster: custom-resource rules (generation on
        // every change outside metadata, no strategic merge).
        built_in: !custom,
        generation: x.generation || custom,
        verbs,
        delete_returns_object: matches!(x.plural, "services" | "serviceaccounts"),
        crd: None,
    }
}

fn find_builtin(plural: &str) -> Kind {
    let x = BUILTINS
        .iter()
        .find(|x| x.plural == plural)
        .expect("a built-in type");
    Arc::new(builtin(x))
}

/// `v1` `pods`.
pub static PODS: LazyLock<Kind> = LazyLock::new(|| find_builtin("pods"));
/// `v1` `configmaps`.
pub static CONFIG_MAPS: LazyLock<Kind> = LazyLock::new(|| find_builtin("configmaps"));
/// `v1` `secrets`.
pub static SECRETS: LazyLock<Kind> = LazyLock::new(|| find_builtin("secrets"));
/// `argoproj.io/v1alpha1` `workflowtaskresults`.
pub static TASK_RESULTS: LazyLock<Kind> = LazyLock::new(|| find_builtin("workflowtaskresults"));
/// `apiextensions.k8s.io/v1` `customresourcedefinitions`.
pub static CRDS: LazyLock<Kind> = LazyLock::new(|| find_builtin("customresourcedefinitions"));

/// The served types.
pub struct Registry {
    types: RwLock<BTreeMap<GroupResource, Kind>>,
}

impl Default for Registry {
    fn default() -> Self {
        let mut types = BTreeMap::new();
        for x in &BUILTINS {
            let t = find_builtin(x.plural);
            types.insert(t.key(), t);
        }
        Self {
            types: RwLock::new(types),
        }
    }
}

impl Registry {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<GroupResource, Kind>> {
        self.types.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<GroupResource, Kind>> {
        self.types.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The type served at `/<group>/<version>/<plural>`, if any.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<Kind> {
        self.read()
            .get(&(group.to_string(), plural.to_string()))
            .filter(|t| t.serves(version))
            .cloned()
    }

    /// The type of `(group, plural)`, whatever its versions.
    pub fn get(&self, group: &str, plural: &str) -> Option<Kind> {
        self.read().get(&(group.to_string(), plural.to_string())).cloned()
    }

    /// Every type, ordered by group and plural.
    pub fn all(&self) -> Vec<Kind> {
        self.read().values().cloned().collect()
    }

    /// Register (or replace) a custom resource type.
    ///
    /// # Errors
    /// A built-in type of the same group and plural is never replaced.
    pub fn register(&self, t: ResourceType) -> Result<Kind, String> {
        let mut g = self.write();
        let key = t.key();
        if g.get(&key).is_some_and(|cur| cur.crd.is_none()) {
            return Err(format!("{}.{} is built in", key.1, key.0));
        }
        let t = Arc::new(t);
        g.insert(key, t.clone());
        Ok(t)
    }

    /// Remove the custom resource type defined by the CRD `crd`; returns it.
    pub fn unregister(&self, crd: &str) -> Option<Kind> {
        let mut g = self.write();
        let key = g
            .iter()
            .find(|(_, t)| t.crd.as_deref() == Some(crd))
            .map(|(k, _)| k.clone())?;
        g.remove(&key)
    }

    /// The group/versions served, ordered (`""` is the core group): `(group, versions)`,
    /// the preferred version first.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.read().values() {
            let g = t.resource.group.to_string();
            let entry = match out.iter_mut().find(|(n, _)| *n == g) {
                Some(e) => e,
                None => {
                    out.push((g, Vec::new()));
                    out.last_mut().expect("just pushed")
                }
            };
            for v in &t.versions {
                if !entry.1.contains(v) {
                    entry.1.push(v.clone());
                }
            }
        }
        out
    }

    /// The types served in `group`/`version`.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Kind> {
        self.read()
            .values()
            .filter(|t| t.resource.group == group && t.serves(version))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn custom(group: &str, plural: &str, versions: &[&str]) -> ResourceType {
        ResourceType {
            resource: Resource::owned(group, plural, "Widget"),
            versions: versions.iter().map(|v| (*v).to_string()).collect(),
            singular: "widget".into(),
            namespaced: true,
            short_names: vec!["wd".into()],
            categories: Vec::new(),
            status: true,
            built_in: false,
            generation: true,
            verbs: ALL_VERBS.to_vec(),
            delete_returns_object: false,
            crd: Some(format!("{plural}.{group}")),
        }
    }

    #[test]
    fn builtins_resolve_by_group_version_and_plural() {
        let r = Registry::default();
        let deploy = r.resolve("apps", "v1", "deployments").unwrap();
        assert_eq!(deploy.resource.kind, "Deployment");
        assert!(deploy.built_in && deploy.status && deploy.namespaced);
        assert_eq!(deploy.type_meta().0, "apps/v1");
        assert!(r.resolve("apps", "v1beta1", "deployments").is_none());
        assert!(r.resolve("", "v1", "deployments").is_none());
        let crd = r
            .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        assert!(!crd.namespaced);
        let tr = r
            .resolve("argoproj.io", "v1alpha1", "workflowtaskresults")
            .unwrap();
        assert!(!tr.built_in && tr.generation && !tr.status);
        for plural in ["workflowartifactgctasks", "workflowtasksets"] {
            let t = r.resolve("argoproj.io", "v1alpha1", plural).unwrap();
            assert!(!t.built_in && t.status && t.namespaced, "{plural}");
        }
        assert_eq!(
            PODS.verbs,
            vec!["create", "delete", "get", "list", "patch", "watch"]
        );
        assert!(!PODS.allows("update"));
    }

    #[test]
    fn custom_types_register_and_unregister_but_builtins_stay() {
        let r = Registry::default();
        let t = r
            .register(custom("example.com", "widgets", &["v1", "v1beta1"]))
            .unwrap();
        assert_eq!(t.storage_version(), "v1");
        assert!(r.resolve("example.com", "v1beta1", "widgets").is_some());
        assert!(r.resolve("example.com", "v2", "widgets").is_none());
        assert!(
            r.groups()
                .contains(&("example.com".into(), vec!["v1".into(), "v1beta1".into()]))
        );
        assert_eq!(r.in_group_version("example.com", "v1").len(), 1);
        assert!(r.register(custom("apps", "deployments", &["v1"])).is_err());
        assert!(r.unregister("workflowtaskresults.argoproj.io").is_none());
        assert_eq!(
            r.unregister("widgets.example.com").unwrap().resource.plural,
            "widgets"
        );
        assert!(r.get("example.com", "widgets").is_none());
        assert!(r.get("argoproj.io", "workflowtaskresults").is_some());
    }
}
