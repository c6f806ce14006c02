//! Container identity: pod container names → Docker container IDs.
//!
//! Kubernetes on Docker (dockershim, cri-dockerd) labels every container with
//! `io.kubernetes.pod.namespace`, `io.kubernetes.pod.name` and `io.kubernetes.container.name`.
//! The pod's containers are listed (exited ones included) filtered by the first two labels,
//! the pause container (`POD`) is skipped, and when a name appears more than once (a restarted
//! container is re-created, the old one stays exited) the newest by `Created` wins.
//!
//! The listing is repeated on every call rather than cached: it is one cheap request, and a
//! fresh listing follows re-created containers without any background refresher.

use std::collections::HashMap;

use argoexec_runtime::RuntimeError;
use bollard::models::{ContainerSummary, ContainerSummaryStateEnum};
use bollard::query_parameters::ListContainersOptionsBuilder;

use crate::DockerExecutor;
use crate::errors::map_err;

/// Label holding the pod namespace.
pub const LABEL_NAMESPACE: &str = "io.kubernetes.pod.namespace";
/// Label holding the pod name.
pub const LABEL_POD: &str = "io.kubernetes.pod.name";
/// Label holding the container name within the pod.
pub const LABEL_CONTAINER: &str = "io.kubernetes.container.name";
/// The container name of the pod's pause (sandbox) container.
pub const PAUSE_CONTAINER: &str = "POD";

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
    /// The label filters selecting this pod's containers.
    pub(crate) fn pod_label_filters(&self) -> Vec<String> {
        vec![
            format!("{LABEL_NAMESPACE}={}", self.namespace),
            format!("{LABEL_POD}={}", self.pod_name),
        ]
    }

    /// Every container of the pod (newest per name), keyed by container name.
    pub(crate) async fn pod_containers(
        &self,
        action: &'static str,
        container: &str,
    ) -> Result<HashMap<String, PodContainer>, RuntimeError> {
        let filters = HashMap::from([("label", self.pod_label_filters())]);
        let opts = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_containers(Some(opts))
            .await
            .map_err(|e| map_err(e, &self.socket, action, container))?;
        Ok(newest_by_name(list))
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
                    "no container named {name:?} in pod {}/{} (labels {LABEL_NAMESPACE}, {LABEL_POD})",
                    self.namespace, self.pod_name
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
}
