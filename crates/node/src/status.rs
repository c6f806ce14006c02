//! The live [`PodStatus`] of a pod on the local node: its initial shape, and the container
//! state transitions (waiting → running → terminated) built from the runtime's view of a
//! container, with the kubelet's reasons (`Completed`, `Error`, `OOMKilled`,
//! `ContainerCannotRun`; waiting `CreateContainerConfigError`) and termination messages.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    Pod, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::downward::NODE_IP;

/// Pod phase `Pending`.
pub const PENDING: &str = "Pending";
/// Pod phase `Running`.
pub const RUNNING: &str = "Running";
/// Pod phase `Succeeded`.
pub const SUCCEEDED: &str = "Succeeded";
/// Pod phase `Failed`.
pub const FAILED: &str = "Failed";

/// The kubelet truncates termination messages to this many bytes.
pub const MAX_TERMINATION_MESSAGE: usize = 4096;

/// Whether `phase` is terminal.
pub fn is_terminal(phase: Option<&str>) -> bool {
    matches!(phase, Some(SUCCEEDED | FAILED))
}

/// Now as a Kubernetes time.
pub fn now() -> Time {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let nanos = i128::try_from(d.as_nanos()).unwrap_or(0);
    Time(Timestamp::from_nanosecond(nanos).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// A pending status: every init container `PodInitializing`… waiting, every container waiting.
pub fn initial(pod: &Pod) -> PodStatus {
    let spec = pod.spec.as_ref();
    let has_init = spec
        .and_then(|s| s.init_containers.as_ref())
        .is_some_and(|v| !v.is_empty());
    let waiting_all = |cs: Option<&Vec<k8s_openapi::api::core::v1::Container>>, reason: &str| {
        cs.map(|v| {
            v.iter()
                .map(|c| waiting(&c.name, c.image.as_deref().unwrap_or(""), reason))
                .collect()
        })
    };
    PodStatus {
        phase: Some(PENDING.into()),
        host_ip: Some(NODE_IP.into()),
        pod_ip: Some(NODE_IP.into()),
        start_time: Some(now()),
        init_container_statuses: waiting_all(
            spec.and_then(|s| s.init_containers.as_ref()),
            "PodInitializing",
        ),
        container_statuses: waiting_all(
            spec.map(|s| &s.containers),
            if has_init {
                "PodInitializing"
            } else {
                "ContainerCreating"
            },
        ),
        ..Default::default()
    }
}

/// A waiting container status.
pub fn waiting(name: &str, image: &str, reason: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        image: image.into(),
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Mark container `name` running, with its status `containerID` (`<scheme>://<id>`).
pub fn set_running(status: &mut PodStatus, name: &str, id: &str) {
    if let Some(cs) = find(status, name) {
        cs.container_id = Some(id.to_string());
        cs.started = Some(true);
        cs.ready = true;
        cs.state = Some(ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(now()),
            }),
            ..Default::default()
        });
    }
}

/// Container `name` failed and waits to be started again (`OnFailure`): its terminated state
/// becomes `lastState`, it waits in `CrashLoopBackOff`, its `restartCount` goes up.
pub fn set_back_off(status: &mut PodStatus, name: &str, backoff: std::time::Duration) {
    if let Some(cs) = find(status, name) {
        cs.last_state = cs.state.take();
        cs.restart_count += 1;
        cs.ready = false;
        cs.started = Some(false);
        cs.state = Some(ContainerState {
            waiting: Some(k8s_openapi::api::core::v1::ContainerStateWaiting {
                reason: Some("CrashLoopBackOff".into()),
                message: Some(format!(
                    "back-off {}s restarting failed container={name}",
                    backoff.as_secs()
                )),
            }),
            ..Default::default()
        });
    }
}

/// Mark container `name` (status `containerID` `id`) terminated as the runtime saw it end
/// (`None`: the runtime could not say; `fallback_exit` is the code), with its termination
/// message.
pub fn set_terminated(
    status: &mut PodStatus,
    name: &str,
    id: &str,
    exit: Option<&crate::runtime::Exit>,
    message: Option<String>,
    fallback_exit: i32,
) {
    let exit_code = exit.map_or(fallback_exit, |e| i32::try_from(e.code).unwrap_or(fallback_exit));
    let reason = if exit.is_some_and(|e| e.oom_killed) {
        "OOMKilled"
    } else if exit_code == 0 {
        "Completed"
    } else {
        "Error"
    };
    let end = End {
        exit_code,
        reason,
        message,
        started_at: exit.and_then(|e| e.started_at).map(Time),
        finished_at: exit.and_then(|e| e.finished_at).map(Time).or_else(|| Some(now())),
        image_id: exit.map(|e| e.image_id.clone()).unwrap_or_default(),
    };
    terminate(status, name, id, end);
}

/// Mark container `name` as one that could not run (`ContainerCannotRun`, exit code 128
/// unless the runtime recorded one), with the runtime's error as the message.
pub fn set_cannot_run(status: &mut PodStatus, name: &str, id: &str, exit_code: Option<i64>, message: String) {
    let end = End {
        exit_code: exit_code.filter(|c| *c != 0).map_or(128, |c| c as i32),
        reason: "ContainerCannotRun",
        message: Some(message),
        started_at: None,
        finished_at: Some(now()),
        image_id: String::new(),
    };
    terminate(status, name, id, end);
}

/// Leave container `name` waiting with `reason` and `message`, as the kubelet shows a
/// container it cannot create (`CreateContainerConfigError`).
pub fn set_waiting(status: &mut PodStatus, name: &str, reason: &str, message: String) {
    if let Some(cs) = find(status, name) {
        cs.ready = false;
        cs.started = Some(false);
        cs.state = Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message: Some(message),
            }),
            ..Default::default()
        });
    }
}

/// How a container ended.
struct End {
    exit_code: i32,
    reason: &'static str,
    message: Option<String>,
    started_at: Option<Time>,
    finished_at: Option<Time>,
    image_id: String,
}

fn terminate(status: &mut PodStatus, name: &str, id: &str, end: End) {
    if let Some(cs) = find(status, name) {
        let container_id = (!id.is_empty()).then(|| id.to_string());
        cs.container_id = container_id.clone();
        cs.ready = false;
        cs.started = Some(false);
        if !end.image_id.is_empty() {
            cs.image_id = end.image_id;
        }
        cs.state = Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                container_id,
                exit_code: end.exit_code,
                reason: Some(end.reason.into()),
                message: end.message.filter(|m| !m.is_empty()),
                started_at: end.started_at,
                finished_at: end.finished_at,
                signal: None,
            }),
            ..Default::default()
        });
    }
}

/// The exit code of container `name` if it terminated.
pub fn exit_code(status: &PodStatus, name: &str) -> Option<i32> {
    all(status)
        .find(|c| c.name == name)
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .map(|t| t.exit_code)
}

/// The exit code of a terminated container status.
pub fn exit_code_of(c: &ContainerStatus) -> Option<i32> {
    c.state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .map(|t| t.exit_code)
}

/// Every init and regular container status.
pub fn all(status: &PodStatus) -> impl Iterator<Item = &ContainerStatus> {
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
}

fn find<'a>(status: &'a mut PodStatus, name: &str) -> Option<&'a mut ContainerStatus> {
    status
        .init_container_statuses
        .iter_mut()
        .flatten()
        .chain(status.container_statuses.iter_mut().flatten())
        .find(|c| c.name == name)
}

/// Read a termination-message file, truncated to [`MAX_TERMINATION_MESSAGE`] bytes.
pub fn read_termination_message(path: &std::path::Path) -> Option<String> {
    let mut bytes = std::fs::read(path).ok()?;
    bytes.truncate(MAX_TERMINATION_MESSAGE);
    let s = String::from_utf8_lossy(&bytes).into_owned();
    (!s.is_empty()).then_some(s)
}
