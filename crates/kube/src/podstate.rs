//! Reading a Pod's status the way the wait flow needs it: which named containers have
//! terminated (with their exit codes), which have not and why, and whether the pod's
//! `activeDeadlineSeconds` ended it (`status.reason == "DeadlineExceeded"`, Argo #7093).
//!
//! Rules (Argo v3.3 kubelet/k8sapi, made explicit): a container is done when its status is
//! `terminated`; a container missing from the statuses, `waiting` or `running` is pending —
//! unless the pod is already in a terminal phase (`Succeeded`/`Failed`), when nothing more
//! will happen and every name counts as done (exit code unknown when never reported).
//! A container that failed to start is reported `terminated` (`StartError`,
//! `ContainerCannotRun`) and so counts as done with its code.

use argoexec_runtime::ContainerExit;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// The state of one container, from the pod status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerState {
    /// No status for this name yet.
    Missing,
    /// `waiting`, with its reason.
    Waiting(String),
    /// `running`.
    Running,
    /// `terminated`.
    Terminated {
        /// Exit code.
        exit_code: i32,
        /// Reason (`Completed`, `Error`, `OOMKilled`, …).
        reason: Option<String>,
    },
}

/// The status of the container `name` (regular or init container).
pub fn container_status<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    let st = pod.status.as_ref()?;
    st.container_statuses
        .iter()
        .flatten()
        .chain(st.init_container_statuses.iter().flatten())
        .find(|c| c.name == name)
}

/// The state of the container `name`.
pub fn state_of(pod: &Pod, name: &str) -> ContainerState {
    let Some(cs) = container_status(pod, name) else {
        return ContainerState::Missing;
    };
    let Some(state) = &cs.state else {
        return ContainerState::Missing;
    };
    if let Some(t) = &state.terminated {
        return ContainerState::Terminated {
            exit_code: t.exit_code,
            reason: t.reason.clone(),
        };
    }
    if state.running.is_some() {
        return ContainerState::Running;
    }
    ContainerState::Waiting(
        state
            .waiting
            .as_ref()
            .and_then(|w| w.reason.clone())
            .unwrap_or_else(|| "waiting".into()),
    )
}

/// Whether the pod is in a terminal phase.
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Whether the pod's deadline ended it.
pub fn deadline_exceeded(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("DeadlineExceeded")
}

/// One evaluation of the named containers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evaluation {
    /// The terminated names, in the order asked.
    pub exits: Vec<ContainerExit>,
    /// The others, with why (`running`, `waiting: ContainerCreating`, `no status yet`).
    pub pending: Vec<(String, String)>,
    /// The pod's deadline passed.
    pub deadline_exceeded: bool,
}

impl Evaluation {
    /// Nothing left to wait for: every name terminated, or the deadline ended the pod.
    pub fn done(&self) -> bool {
        self.pending.is_empty() || self.deadline_exceeded
    }

    /// `name (why), …` of the pending names.
    pub fn describe_pending(&self) -> String {
        self.pending
            .iter()
            .map(|(n, w)| format!("{n} ({w})"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Evaluate `names` against `pod`.
pub fn evaluate(pod: &Pod, names: &[String]) -> Evaluation {
    let terminal = is_terminal(pod);
    let mut e = Evaluation {
        deadline_exceeded: deadline_exceeded(pod),
        ..Default::default()
    };
    for name in names {
        match state_of(pod, name) {
            ContainerState::Terminated { exit_code, .. } => e.exits.push(ContainerExit {
                name: name.clone(),
                exit_code: Some(exit_code),
            }),
            _ if terminal => e.exits.push(ContainerExit {
                name: name.clone(),
                exit_code: None,
            }),
            ContainerState::Missing => e.pending.push((name.clone(), "no status yet".into())),
            ContainerState::Running => e.pending.push((name.clone(), "running".into())),
            ContainerState::Waiting(r) => e.pending.push((name.clone(), format!("waiting: {r}"))),
        }
    }
    e
}

/// Names of every container in the pod's spec, regular ones first, then init containers.
pub fn container_names(pod: &Pod) -> Vec<String> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .map(|c| c.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(phase: &str, reason: Option<&str>, statuses: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "wait"}, {"name": "main"}, {"name": "side"}],
                     "initContainers": [{"name": "init"}]},
            "status": {"phase": phase, "reason": reason, "containerStatuses": statuses}
        }))
        .unwrap()
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn terminated_running_waiting_missing() {
        let p = pod(
            "Running",
            None,
            json!([
                {"name": "main", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 3, "reason": "Error"}}},
                {"name": "side", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                 "state": {"running": {}}},
                {"name": "wait", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "ContainerCreating"}}}
            ]),
        );
        let e = evaluate(&p, &names(&["main", "side", "wait", "ghost"]));
        assert_eq!(
            e.exits,
            vec![ContainerExit {
                name: "main".into(),
                exit_code: Some(3)
            }]
        );
        assert_eq!(
            e.describe_pending(),
            "side (running), wait (waiting: ContainerCreating), ghost (no status yet)"
        );
        assert!(!e.done());
        assert!(evaluate(&p, &names(&["main"])).done());
        assert_eq!(
            state_of(&p, "main"),
            ContainerState::Terminated {
                exit_code: 3,
                reason: Some("Error".into())
            }
        );
        assert_eq!(container_names(&p), names(&["wait", "main", "side", "init"]));
    }

    #[test]
    fn deadline_and_terminal_phase_end_the_wait() {
        let running = json!([{"name": "main", "image": "i", "imageID": "", "ready": true,
                              "restartCount": 0, "state": {"running": {}}}]);
        let p = pod("Running", Some("DeadlineExceeded"), running.clone());
        let e = evaluate(&p, &names(&["main"]));
        assert!(e.deadline_exceeded && e.done() && e.exits.is_empty());
        let p = pod("Failed", None, json!([]));
        let e = evaluate(&p, &names(&["main"]));
        assert!(e.done());
        assert_eq!(e.exits[0].exit_code, None);
        assert!(!evaluate(&pod("Pending", None, running), &names(&["main"])).done());
    }
}
