//! The patch strategies of list fields in the built-in types, as the Go types declare them
//! (`patchStrategy` and `patchMergeKey` struct tags in `k8s.io/api`): which lists merge
//! element by element by a key, which merge as sets of primitives, and which are replaced
//! whole (atomic, the default). A field is named by its path of field names from the
//! object's root (list indices left out) and the object's kind, since the same name means
//! different things in different places (a Service's `spec.ports` against a container's
//! `ports`).

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replaced whole.
    Atomic,
    /// A list of maps merged element by element, elements matched by this key.
    MergeKey(&'static str),
    /// A list of primitives merged as a set (`finalizers`).
    Set,
}

/// The kinds whose pod template sits at `spec.template.spec`.
const TEMPLATED: [&str; 6] = [
    "Deployment",
    "Job",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "ReplicationController",
];

/// The strategy of the list at `path` in an object of `kind`.
pub fn list_strategy(kind: &str, path: &[&str]) -> ListStrategy {
    use ListStrategy::{Atomic, MergeKey, Set};
    let n = path.len();
    // ObjectMeta, wherever it is (pod templates carry one too).
    if n >= 2 && path[n - 2] == "metadata" {
        return match path[n - 1] {
            "finalizers" => Set,
            "ownerReferences" => MergeKey("uid"),
            _ => Atomic,
        };
    }
    if let Some(rest) = pod_spec_rest(kind, path) {
        return pod_spec_list(rest);
    }
    match (kind, path) {
        ("Service", ["spec", "ports"]) => MergeKey("port"),
        ("ServiceAccount", ["secrets" | "imagePullSecrets"]) => MergeKey("name"),
        (_, [.., "status", "conditions"]) => MergeKey("type"),
        _ => Atomic,
    }
}

/// The part of `path` inside the pod spec of `kind`, when it is inside one.
fn pod_spec_rest<'a>(kind: &str, path: &'a [&'a str]) -> Option<&'a [&'a str]> {
    let prefix: &[&str] = match kind {
        "Pod" => &["spec"],
        "PodTemplate" => &["template", "spec"],
        "CronJob" => &["spec", "jobTemplate", "spec", "template", "spec"],
        k if TEMPLATED.contains(&k) => &["spec", "template", "spec"],
        _ => return None,
    };
    path.strip_prefix(prefix)
}

fn is_container_list(field: &str) -> bool {
    matches!(field, "containers" | "initContainers" | "ephemeralContainers")
}

/// PodSpec (`k8s.io/api/core/v1`): lists by name, containers' env, ports, mounts.
fn pod_spec_list(rest: &[&str]) -> ListStrategy {
    use ListStrategy::{Atomic, MergeKey};
    match rest {
        [f] if is_container_list(f) => MergeKey("name"),
        ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => MergeKey("name"),
        ["hostAliases"] => MergeKey("ip"),
        ["topologySpreadConstraints"] => MergeKey("topologyKey"),
        [c, "env"] if is_container_list(c) => MergeKey("name"),
        [c, "ports"] if is_container_list(c) => MergeKey("containerPort"),
        [c, "volumeMounts"] if is_container_list(c) => MergeKey("mountPath"),
        [c, "volumeDevices"] if is_container_list(c) => MergeKey("devicePath"),
        // tolerations, command, args, envFrom, readinessGates, …: atomic.
        _ => Atomic,
    }
}

#[cfg(test)]
mod tests {
    use super::ListStrategy::{Atomic, MergeKey, Set};
    use super::*;

    #[test]
    fn pod_spec_lists_have_their_keys_in_every_template() {
        for (kind, root) in [
            ("Pod", vec!["spec"]),
            ("Deployment", vec!["spec", "template", "spec"]),
            ("Job", vec!["spec", "template", "spec"]),
            ("CronJob", vec!["spec", "jobTemplate", "spec", "template", "spec"]),
        ] {
            let at = |tail: &[&str]| {
                let p: Vec<&str> = root.iter().copied().chain(tail.iter().copied()).collect();
                list_strategy(kind, &p)
            };
            assert_eq!(at(&["containers"]), MergeKey("name"), "{kind}");
            assert_eq!(at(&["initContainers"]), MergeKey("name"));
            assert_eq!(at(&["ephemeralContainers"]), MergeKey("name"));
            assert_eq!(at(&["volumes"]), MergeKey("name"));
            assert_eq!(at(&["imagePullSecrets"]), MergeKey("name"));
            assert_eq!(at(&["containers", "env"]), MergeKey("name"));
            assert_eq!(at(&["initContainers", "ports"]), MergeKey("containerPort"));
            assert_eq!(at(&["containers", "volumeMounts"]), MergeKey("mountPath"));
            assert_eq!(at(&["containers", "volumeDevices"]), MergeKey("devicePath"));
            assert_eq!(at(&["containers", "args"]), Atomic);
            assert_eq!(at(&["containers", "envFrom"]), Atomic);
            assert_eq!(at(&["tolerations"]), Atomic);
            assert_eq!(at(&["hostAliases"]), MergeKey("ip"));
        }
    }

    #[test]
    fn metadata_services_and_conditions() {
        assert_eq!(list_strategy("ConfigMap", &["metadata", "finalizers"]), Set);
        assert_eq!(
            list_strategy("Secret", &["metadata", "ownerReferences"]),
            MergeKey("uid")
        );
        assert_eq!(
            list_strategy("Deployment", &["spec", "template", "metadata", "finalizers"]),
            Set
        );
        assert_eq!(list_strategy("Service", &["spec", "ports"]), MergeKey("port"));
        assert_eq!(list_strategy("Service", &["spec", "externalIPs"]), Atomic);
        assert_eq!(list_strategy("Pod", &["status", "conditions"]), MergeKey("type"));
        assert_eq!(
            list_strategy("Deployment", &["status", "conditions"]),
            MergeKey("type")
        );
        assert_eq!(list_strategy("ServiceAccount", &["secrets"]), MergeKey("name"));
        // A ConfigMap has no pod spec: `spec.containers` means nothing there.
        assert_eq!(list_strategy("ConfigMap", &["spec", "containers"]), Atomic);
    }
}
