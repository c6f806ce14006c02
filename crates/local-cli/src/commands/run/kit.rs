//! The executor RBAC of a run comes from the deploy kit (`deploy/rbac/`), the files a cluster
//! applies: the rules are the kit's, word for word, so a rule missing from the kit fails a
//! test on the local node. Only the binding is fitted to the run: the objects' namespace, the
//! subject's service account and namespace, and a ClusterRoleBinding's name (one per
//! namespace and service account).
//!
//! Which files, least per version (as `docs/deploy.md` tells a cluster): v3.6+ emissary
//! `executor.yaml` (task results create and patch, nothing else); v3.4/v3.5 emissary
//! `executor-v3.5.yaml` (+ pods patch for the annotation fallback); v3.3 and every other
//! executor `executor-legacy.yaml` (Argo's quick-start executor role), plus
//! `executor-k8sapi.yaml` (pods/exec) or `executor-kubelet.yaml` (nodes/proxy). The
//! artifact-GC pod of `--artifact-gc` gets `artifact-gc.yaml`.

use argoexec_core::{ArgoVersion, ExecutorKind};
use serde_json::{Value, json};

/// One kit file: its name under `deploy/rbac/` and its text.
type KitFile = (&'static str, &'static str);

const EXECUTOR: KitFile = (
    "executor.yaml",
    include_str!("../../../../../deploy/rbac/executor.yaml"),
);
const EXECUTOR_V35: KitFile = (
    "executor-v3.5.yaml",
    include_str!("../../../../../deploy/rbac/executor-v3.5.yaml"),
);
const LEGACY: KitFile = (
    "executor-legacy.yaml",
    include_str!("../../../../../deploy/rbac/executor-legacy.yaml"),
);
const K8SAPI: KitFile = (
    "executor-k8sapi.yaml",
    include_str!("../../../../../deploy/rbac/executor-k8sapi.yaml"),
);
const KUBELET: KitFile = (
    "executor-kubelet.yaml",
    include_str!("../../../../../deploy/rbac/executor-kubelet.yaml"),
);

const ARTIFACT_GC: KitFile = (
    "artifact-gc.yaml",
    include_str!("../../../../../deploy/rbac/artifact-gc.yaml"),
);

const AGENT: KitFile = (
    "agent.yaml",
    include_str!("../../../../../deploy/rbac/agent.yaml"),
);

/// The kit files a pod of `version` with `executor` needs.
pub fn files(executor: ExecutorKind, version: ArgoVersion) -> Vec<KitFile> {
    let mut files = vec![
        if version == ArgoVersion::V3_3 || executor != ExecutorKind::Emissary {
            LEGACY
        } else if version.has_annotation_fallback() {
            EXECUTOR_V35
        } else {
            EXECUTOR
        },
    ];
    match executor {
        ExecutorKind::K8sApi => files.push(K8SAPI),
        ExecutorKind::Kubelet => files.push(KUBELET),
        _ => {}
    }
    files
}

/// The verbs `argoexec resource ACTION` needs on the manifest's resources: the action's
/// own (and `get` where the action reads the object first, as kubectl does), plus `get`,
/// `list` and `watch` when it waits for conditions (a watch, re-listed on `410 Gone`) and
/// `get` when it reads outputs. The table is in docs/resource-templates.md and
/// deploy/rbac/resource-example.yaml.
pub fn resource_verbs(action: &str, waits: bool, outputs: bool) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = match action {
        "get" => vec!["get"],
        "create" => vec!["create"],
        "apply" => vec!["get", "create", "patch"],
        "replace" => vec!["get", "update"],
        "patch" => vec!["get", "patch"],
        "delete" => vec!["delete"],
        _ => vec![],
    };
    if waits {
        v.extend(["get", "list", "watch"]);
    }
    if outputs {
        v.push("get");
    }
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|x| seen.insert(*x));
    v
}

/// A Role (namespaced resources) and a ClusterRole (cluster-scoped ones), each bound to
/// service account `sa` of `ns`, granting `verbs` on `targets` (group, plural, namespaced):
/// what a resource template's manifest acts on, and nothing more.
pub fn resource_rbac(ns: &str, sa: &str, verbs: &[&str], targets: &[(String, String, bool)]) -> String {
    let rules = |namespaced: bool| -> Vec<Value> {
        targets
            .iter()
            .filter(|t| t.2 == namespaced)
            .map(|(g, p, _)| json!({"apiGroups": [g], "resources": [p], "verbs": verbs}))
            .collect()
    };
    let name = format!("argoexec-resource-{sa}");
    let mut docs = Vec::new();
    let subject = json!([{"kind": "ServiceAccount", "name": sa, "namespace": ns}]);
    let (ns_rules, cluster_rules) = (rules(true), rules(false));
    if !ns_rules.is_empty() {
        docs.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": ns}, "rules": ns_rules}),
        );
        docs.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subject}),
        );
    }
    if !cluster_rules.is_empty() {
        let cname = format!("{name}-{ns}");
        docs.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": cname}, "rules": cluster_rules}),
        );
        docs.push(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": cname},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cname},
            "subjects": subject}),
        );
    }
    docs.iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// A kit file that does not parse (a broken kit: the unit tests catch it first).
#[derive(Debug, thiserror::Error)]
#[error("deploy/rbac/{file} does not parse")]
pub struct KitError {
    file: &'static str,
    #[source]
    source: Box<serde_saphyr::Error>,
}

/// The kit's RBAC for the run, bound to service account `sa` of namespace `ns`: YAML
/// documents (JSON, one per document) for the node's RBAC loader.
pub fn executor_rbac(
    ns: &str,
    sa: &str,
    executor: ExecutorKind,
    version: ArgoVersion,
) -> Result<String, KitError> {
    fitted(&files(executor, version), ns, sa)
}

/// The objects of `files` fitted to `ns` and `sa`, as YAML documents.
fn fitted(files: &[KitFile], ns: &str, sa: &str) -> Result<String, KitError> {
    let mut docs = Vec::new();
    for &(file, text) in files {
        let parsed: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| KitError {
            file,
            source: Box::new(e),
        })?;
        docs.extend(parsed.into_iter().map(|d| fit(d, ns, sa).to_string()));
    }
    Ok(docs.join("\n---\n"))
}

/// The kit's artifact-GC role (`artifact-gc.yaml`) bound to service account `sa` of `ns`.
pub fn artifact_gc_rbac(ns: &str, sa: &str) -> Result<String, KitError> {
    fitted(&[ARTIFACT_GC], ns, sa)
}

/// The kit's agent role (`deploy/rbac/agent.yaml`) bound to `sa` in `ns`.
///
/// # Errors
/// [`KitError`] when the kit file does not parse.
pub fn agent_rbac(ns: &str, sa: &str) -> Result<String, KitError> {
    fitted(&[AGENT], ns, sa)
}

/// Fit one kit object to the run's namespace and service account.
fn fit(mut doc: Value, ns: &str, sa: &str) -> Value {
    let kind = doc["kind"].as_str().unwrap_or_default().to_string();
    match kind.as_str() {
        "Role" | "RoleBinding" => doc["metadata"]["namespace"] = json!(ns),
        "ClusterRoleBinding" => {
            let role = doc["roleRef"]["name"].as_str().unwrap_or_default().to_string();
            doc["metadata"]["name"] = json!(format!("{role}-{ns}-{sa}"));
        }
        _ => {}
    }
    if let Some(subjects) = doc["subjects"].as_array_mut() {
        for s in subjects.iter_mut().filter(|s| s["kind"] == "ServiceAccount") {
            s["name"] = json!(sa);
            s["namespace"] = json!(ns);
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(r: &str) -> Vec<Value> {
        let docs: Vec<Value> = serde_saphyr::from_multiple(r).unwrap();
        docs.iter()
            .filter(|d| d["kind"] == "Role" || d["kind"] == "ClusterRole")
            .flat_map(|d| d["rules"].as_array().unwrap().clone())
            .collect()
    }

    fn resources(r: &str) -> Vec<String> {
        rules(r)
            .iter()
            .flat_map(|r| {
                r["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn least_rbac_per_version_and_executor() {
        let v41 = executor_rbac("ns", "sa", ExecutorKind::Emissary, ArgoVersion::V4_1).unwrap();
        assert_eq!(resources(&v41), ["workflowtaskresults"], "{v41}");
        let v35 = executor_rbac("ns", "sa", ExecutorKind::Emissary, ArgoVersion::V3_5).unwrap();
        assert_eq!(resources(&v35), ["workflowtaskresults", "pods"], "{v35}");
        assert_eq!(rules(&v35)[1]["verbs"], json!(["patch"]));
        let k = executor_rbac("ns", "sa", ExecutorKind::Kubelet, ArgoVersion::V3_3).unwrap();
        assert_eq!(
            resources(&k),
            ["workflowtaskresults", "pods", "pods/log", "nodes/proxy"],
            "{k}"
        );
        let a = executor_rbac("ns", "sa", ExecutorKind::K8sApi, ArgoVersion::V3_3).unwrap();
        assert!(resources(&a).contains(&"pods/exec".to_string()), "{a}");
    }

    #[test]
    fn resource_roles_grant_the_action_and_no_more() {
        assert_eq!(resource_verbs("create", false, false), ["create"]);
        assert_eq!(
            resource_verbs("create", true, true),
            ["create", "get", "list", "watch"]
        );
        assert_eq!(resource_verbs("apply", false, true), ["get", "create", "patch"]);
        assert_eq!(resource_verbs("delete", false, false), ["delete"]);
        let targets = [
            (String::new(), "configmaps".to_string(), true),
            ("example.com".to_string(), "widgets".to_string(), false),
        ];
        let r = resource_rbac("ns", "sa", &["get"], &targets);
        let docs: Vec<Value> = serde_saphyr::from_multiple(&r).unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]
        );
        assert_eq!(
            docs[0]["rules"],
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}])
        );
        assert_eq!(docs[2]["rules"][0]["resources"], json!(["widgets"]));
        assert_eq!(docs[3]["subjects"][0]["namespace"], "ns");
        assert!(resource_rbac("ns", "sa", &["get"], &[]).is_empty());
    }

    #[test]
    fn bindings_are_fitted_to_the_run() {
        let k = executor_rbac("team-a", "runner", ExecutorKind::Kubelet, ArgoVersion::V3_3).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&k).unwrap();
        let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
        assert_eq!(role["metadata"]["namespace"], "team-a");
        let crb = docs.iter().find(|d| d["kind"] == "ClusterRoleBinding").unwrap();
        assert_eq!(crb["metadata"]["name"], "argoexec-kubelet-team-a-runner");
        for b in docs.iter().filter(|d| d["subjects"].is_array()) {
            assert_eq!(
                b["subjects"][0],
                json!({"kind": "ServiceAccount", "name": "runner", "namespace": "team-a"})
            );
        }
    }
}
