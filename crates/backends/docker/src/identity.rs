//! Container identity: pod container names → Docker container IDs.
//!
//! Kubernetes on Docker (dockershim, cri-dockerd, and this project's local node) labels
//! every container with `io.kubernetes.pod.uid`, `io.kubernetes.pod.name`,
//! `io.kubernetes.pod.namespace` and `io.kubernetes.container.name`. A [`PodRef`] selects
//! the pod's containers by its UID and name when the UID is known (`ARGO_POD_UID`, which
//! every Argo version sets; no namespace needed), else by its namespace and name. The
//! containers are listed (exited ones included) with those label filters, the pause
//! container (`POD`) is skipped, and when a name appears more than once (a restarted
//! container is re-created, the old one stays exited) the newest by `Created` wins.
//!
//! The listing is repeated on every call rather than cached: it is one cheap request, and a
//! fresh listing follows re-created containers without any background refresher.

use std::collections::HashMap;
use std::fmt;

use argoexec_runtime::RuntimeError;
use bollard::models::{ContainerSummary, ContainerSummaryStateEnum};
use bollard::query_parameters::ListContainersOptionsBuilder;

use crate::DockerExecutor;
use crate::errors::map_err;

/// Label holding the pod namespace.
pub const LABEL_NAMESPACE: &str = "io.kubernetes.pod.namespace";
/// Label holding the pod name.
pub const LABEL_POD: &str = "io.kubernetes.pod.name";
/// Label holding the pod UID.
pub const LABEL_POD_UID: &str = "io.kubernetes.pod.uid";
/// Label holding the container name within the pod.
pub const LABEL_CONTAINER: &str = "io.kubernetes.container.name";
/// The container name of the pod's pause (sandbox) container.
pub const PAUSE_CONTAINER: &str = "POD";

/// Neither the pod's UID nor its namespace is known, so its containers cannot be told from
/// those of a pod of the same name elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot tell which Docker containers belong to pod {pod:?}: neither its UID nor its namespace is known"
)]
pub struct NoPodIdentity {
    /// The pod name.
    pub pod: String,
}

/// The pod whose containers the docker backend works on: its name, and its UID or
/// namespace (the UID wins when both are known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    name: String,
    key: Key,
}

/// What tells the pod from others of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// The UID (the namespace kept for messages, when known).
    Uid { uid: String, namespace: Option<String> },
    /// The namespace, UID unknown.
    Namespace(String),
}

impl PodRef {
    /// The pod `name` with its `uid` (`ARGO_POD_UID`) and/or `namespace`; the containers are
    /// found by UID and name when the UID is known, else by namespace and name.
    ///
    /// # Errors
    /// [`NoPodIdentity`] when both are `None` (or blank).
    pub fn new(
        name: impl Into<String>,
        uid: Option<String>,
        namespace: Option<String>,
    ) -> Result<Self, NoPodIdentity> {
        let name = name.into();
        let keep = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let key = match (keep(uid), keep(namespace)) {
            (Some(uid), namespace) => Key::Uid { uid, namespace },
            (None, Some(ns)) => Key::Namespace(ns),
            (None, None) => return Err(NoPodIdentity { pod: name }),
        };
        Ok(Self { name, key })
    }

    /// The pod `name` with UID `uid`.
    pub fn by_uid(name: impl Into<String>, uid: impl Into<String>) -> Self {
        let uid = uid.into();
        Self {
            name: name.into(),
            key: Key::Uid { uid, namespace: None },
        }
    }

    /// The pod `namespace`/`name`, UID unknown.
    pub fn by_namespace(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            key: Key::Namespace(namespace.into()),
        }
    }

    /// The pod name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pod UID, when known.
    pub fn uid(&self) -> Option<&str> {
        match &self.key {
            Key::Uid { uid, .. } => Some(uid),
            Key::Namespace(_) => None,
        }
    }

    /// The pod namespace, when known.
    pub fn namespace(&self) -> Option<&str> {
        match &self.key {
            Key::Uid { namespace, .. } => namespace.as_deref(),
            Key::Namespace(ns) => Some(ns),
        }
    }

    /// The `label` filters selecting this pod's containers: UID and name when the UID is
    /// known, else namespace and name.
    pub fn label_filters(&self) -> Vec<String> {
        let key = match &self.key {
            Key::Uid { uid, .. } => format!("{LABEL_POD_UID}={uid}"),
            Key::Namespace(ns) => format!("{LABEL_NAMESPACE}={ns}"),
        };
        vec![key, format!("{LABEL_POD}={}", self.name)]
    }
}

/// `pod <name> (uid <uid>, namespace <ns>)`, with what is known.
impl fmt::Display for PodRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pod {}", self.name)?;
        match &self.key {
            Key::Uid {
                uid,
                namespace: Some(ns),
            } => write!(f, " (uid {uid}, namespace {ns})"),
            Key::Uid { uid, namespace: None } => write!(f, " (uid {uid})"),
            Key::Namespace(ns) => write!(f, " (namespace {ns})"),
        }
    }
}

/// One container of the pod as the daemon lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodContainer {
    /// Container name (the `io.kubernetes.container.name` label).
    pub name: String,
    /// Docker container ID.
    pub id: String,
    /// Creation time, seconds since the epoch.
    pub created: i64,
    /// Listed state.
    pub state: Option<ContainerSummaryStateEnum>,
}

/// Tie-break for containers created in the same second: a live one is the newer.
fn state_rank(s: Option<ContainerSummaryStateEnum>) -> u8 {
    use ContainerSummaryStateEnum as S;
    match s {
        Some(S::RUNNING | S::RESTARTING | S::PAUSED) => 2,
        Some(S::CREATED) => 1,
        _ => 0,
    }
}

/// Reduce a raw listing to the newest container per name, without the pause container.
pub(crate) fn newest_by_name(list: Vec<ContainerSummary>) -> HashMap<String, PodContainer> {
    let mut out: HashMap<String, PodContainer> = HashMap::new();
    for c in list {
        let (Some(id), Some(labels)) = (c.id, c.labels) else {
            continue;
        };
        let Some(name) = labels.get(LABEL_CONTAINER) else {
            continue;
        };
        if id.is_empty() || name.is_empty() || name == PAUSE_CONTAINER {
            continue;
        }
        let pc = PodContainer {
            name: name.clone(),
            id,
            created: c.created.unwrap_or(0),
            state: c.state,
        };
        let newer =
            |old: &PodContainer| (pc.created, state_rank(pc.state)) > (old.created, state_rank(old.state));
        match out.get(name) {
            Some(old) if !newer(old) => {}
            _ => {
                out.insert(name.clone(), pc);
            }
        }
    }
    out
}

impl DockerExecutor {
    /// Every container carrying this pod's labels, as listed (pause container included).
    pub(crate) async fn list_pod(
        &self,
        action: &'static str,
        container: &str,
    ) -> Result<Vec<ContainerSummary>, RuntimeError> {
        let filters = HashMap::from([("label", self.pod.label_filters())]);
        let opts = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        self.docker
            .list_containers(Some(opts))
            .await
            .map_err(|e| map_err(e, &self.socket, action, container))
    }

    /// Every container of the pod (newest per name), keyed by container name.
    pub(crate) async fn pod_containers(
        &self,
        action: &'static str,
        container: &str,
    ) -> Result<HashMap<String, PodContainer>, RuntimeError> {
        Ok(newest_by_name(self.list_pod(action, container).await?))
    }

    /// The ID of the newest container called `name`, or `None` when it does not exist (yet).
    pub(crate) async fn container_id(
        &self,
        action: &'static str,
        name: &str,
    ) -> Result<Option<String>, RuntimeError> {
        Ok(self
            .pod_containers(action, name)
            .await?
            .remove(name)
            .map(|c| c.id))
    }

    /// Like [`Self::container_id`], but a missing container is a `NotFound` error.
    pub(crate) async fn require_id(&self, action: &'static str, name: &str) -> Result<String, RuntimeError> {
        self.container_id(action, name).await?.ok_or_else(|| {
            crate::errors::error(
                argoexec_runtime::ErrorKind::NotFound,
                action,
                name,
                format!(
                    "no container named {name:?} in {} (labels {})",
                    self.pod,
                    self.pod.label_filters().join(", ")
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, name: &str, created: i64, state: ContainerSummaryStateEnum) -> ContainerSummary {
        ContainerSummary {
            id: Some(id.into()),
            created: Some(created),
            state: Some(state),
            labels: Some(HashMap::from([(LABEL_CONTAINER.to_string(), name.to_string())])),
            ..Default::default()
        }
    }

    #[test]
    fn newest_wins_and_pause_is_skipped() {
        use ContainerSummaryStateEnum as S;
        let m = newest_by_name(vec![
            summary("a", "main", 10, S::EXITED),
            summary("b", "main", 20, S::RUNNING),
            summary("c", "main", 15, S::EXITED),
            summary("p", "POD", 1, S::RUNNING),
            summary("w", "wait", 5, S::RUNNING),
            summary("x", "tie", 7, S::EXITED),
            summary("y", "tie", 7, S::CREATED),
        ]);
        assert_eq!(m["main"].id, "b");
        assert_eq!(m["wait"].id, "w");
        assert_eq!(m["tie"].id, "y");
        assert!(!m.contains_key("POD"));
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn the_uid_selects_the_pod_when_known() {
        let both = PodRef::new("p", Some("u-1".into()), Some("argo".into())).unwrap();
        assert_eq!(
            both.label_filters(),
            ["io.kubernetes.pod.uid=u-1", "io.kubernetes.pod.name=p"]
        );
        assert_eq!(both.to_string(), "pod p (uid u-1, namespace argo)");
        assert_eq!(PodRef::by_uid("p", "u-1").label_filters(), both.label_filters());
        let ns = PodRef::new("p", None, Some("argo".into())).unwrap();
        assert_eq!(
            ns.label_filters(),
            ["io.kubernetes.pod.namespace=argo", "io.kubernetes.pod.name=p"]
        );
        assert_eq!(ns, PodRef::by_namespace("argo", "p"));
        assert_eq!(ns.to_string(), "pod p (namespace argo)");
    }

    #[test]
    fn no_uid_and_no_namespace_is_refused() {
        let e = PodRef::new("p", None, Some(" ".into())).unwrap_err();
        assert_eq!(e, NoPodIdentity { pod: "p".into() });
        assert!(e.to_string().contains("neither its UID nor its namespace"), "{e}");
        let uid_only = PodRef::new("p", Some("u".into()), None).unwrap();
        assert_eq!((uid_only.uid(), uid_only.namespace()), (Some("u"), None));
    }
}
