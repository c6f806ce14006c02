//! Late OOM notices. Docker learns of a cgroup OOM kill from containerd's `TaskOOM` event,
//! which travels apart from the exit event: under load the exit is recorded first, and the
//! container's inspect view says `OOMKilled: false` for a process the kernel killed for
//! memory (seen on cgroup v1 with Docker 20.10). The kubelet would report `OOMKilled`, and
//! Argo's message depends on it, so an exit that looks like one (SIGKILL, with a memory
//! limit, not a kill the node asked for) waits a short, bounded while for Docker's `oom`
//! event of that container, replayed from its start.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bollard::Docker;
use bollard::models::ContainerInspectResponse;
use bollard::query_parameters::EventsOptionsBuilder;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;

/// How long after the exit an `oom` event may still arrive.
const LATE_OOM_WINDOW: Duration = Duration::from_secs(3);

/// Exit code of a process ended by SIGKILL.
const SIGKILL_EXIT: i64 = 128 + 9;

/// Whether the container's exit could be an OOM kill Docker has not recorded yet.
pub(crate) fn may_be_late(inspect: &ContainerInspectResponse) -> bool {
    let Some(st) = inspect.state.as_ref() else {
        return false;
    };
    let limited = inspect
        .host_config
        .as_ref()
        .and_then(|h| h.memory)
        .is_some_and(|m| m > 0);
    limited && st.exit_code == Some(SIGKILL_EXIT) && st.oom_killed != Some(true)
}

/// Whether Docker reports an `oom` event for container `id` from its start until a moment
/// from now; returns as soon as one is seen.
pub(crate) async fn seen(docker: &Docker, id: &str, inspect: &ContainerInspectResponse) -> bool {
    let started = inspect
        .state
        .as_ref()
        .and_then(|s| s.started_at.as_deref())
        .and_then(|s| s.parse::<Timestamp>().ok())
        .map_or(0, |t| t.as_second().max(0));
    let until = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| (d + LATE_OOM_WINDOW).as_secs());
    let filters = HashMap::from([
        ("type", vec!["container".to_string()]),
        ("container", vec![id.to_string()]),
        ("event", vec!["oom".to_string()]),
    ]);
    let opts = EventsOptionsBuilder::new()
        .since(&started.to_string())
        .until(&until.to_string())
        .filters(&filters)
        .build();
    let mut events = docker.events(Some(opts));
    // The stream ends by itself at `until`; the timeout only guards a daemon that never answers.
    let first = tokio::time::timeout(LATE_OOM_WINDOW * 2, events.next()).await;
    matches!(first, Ok(Some(Ok(_))))
}
