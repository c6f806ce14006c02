//! One pod's life on the local node, as the kubelet runs a `restartPolicy: Never` pod: init
//! containers one at a time in order (the first failure fails the pod), then every container
//! started in declaration order and waited for concurrently; the pod is `Succeeded` when all
//! exit 0, `Failed` otherwise. A stop request (deletion) or `activeDeadlineSeconds` stops the
//! running containers with Docker's TERM → grace → KILL, and no further container starts.

use std::sync::Arc;
use std::time::Duration;

use bollard::query_parameters::{StopContainerOptions, WaitContainerOptions};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use k8s_openapi::api::core::v1::Container;

use crate::node::docker_name;
use crate::run::{Shared, StopReason};
use crate::spec::{PodContext, create_body};
use crate::status::{self, FAILED, RUNNING, SUCCEEDED};

/// Kubernetes' default `terminationGracePeriodSeconds`.
const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// Drive the pod to a terminal phase.
pub(crate) async fn run(s: Arc<Shared>) {
    let killer = tokio::spawn(killer(s.clone()));
    let init_failed = drive(&s).await;
    let stop = s.stop_request();
    s.status.send_modify(|st| {
        let all_ok = st
            .container_statuses
            .iter()
            .flatten()
            .all(|c| status::exit_code_of(c) == Some(0));
        if let Some((_, StopReason::DeadlineExceeded)) = stop {
            st.phase = Some(FAILED.into());
            st.reason = Some("DeadlineExceeded".into());
            st.message = Some("Pod was active on the node longer than the specified deadline".into());
        } else if let Some((_, StopReason::Evicted)) = stop {
            st.phase = Some(FAILED.into());
            st.reason = Some("Evicted".into());
            st.message = Some(crate::run::EVICTED_MESSAGE.into());
        } else if let Some(name) = &init_failed {
            st.phase = Some(FAILED.into());
            st.message = Some(format!("init container {name:?} failed"));
        } else {
            st.phase = Some(if all_ok { SUCCEEDED } else { FAILED }.into());
        }
    });
    killer.abort();
}

/// Returns the name of the init container that failed, if one did.
async fn drive(s: &Shared) -> Option<String> {
    let spec = s.pod.spec.as_ref()?;
    // App containers are created only after the init containers succeeded: creating them
    // resolves subPath mounts, whose sources init may still have to write (input artifacts).
    let inits = async {
        for c in spec.init_containers.iter().flatten() {
            if s.stop.is_cancelled() {
                return None;
            }
            let Some(id) = start(s, c).await else {
                return Some(c.name.clone());
            };
            if wait_exit(s, &c.name, &id).await != 0 {
                return Some(c.name.clone());
            }
        }
        None
    };
    if let Some(failed) = inits.await {
        return Some(failed);
    }
    let created = futures::future::join_all(spec.containers.iter().map(|c| create(s, c))).await;
    s.status.send_modify(|st| {
        for cs in st.container_statuses.iter_mut().flatten() {
            *cs = status::waiting(&cs.name, &cs.image, "ContainerCreating");
        }
    });
    // Like the kubelet, start containers one after another in spec order (each start returns
    // once runc has exec'd the process), without waiting for any to be ready: wait comes
    // first, so with a shared process namespace it is running before main exists (§1.1).
    let mut started = Vec::new();
    for (c, made) in spec.containers.iter().zip(created) {
        if s.stop.is_cancelled() {
            break;
        }
        match made {
            Ok(id) => {
                if let Some(id) = launch(s, c, id).await {
                    started.push((c, id));
                }
            }
            Err(message) => {
                s.status
                    .send_modify(|st| status::set_cannot_run(st, &c.name, "", None, message));
            }
        }
    }
    // The kubelet's phase: Pending while any container still waits to start, then Running.
    s.status.send_modify(|st| {
        if !status::is_terminal(st.phase.as_deref()) {
            st.phase = Some(RUNNING.into());
        }
    });
    let mut waits: FuturesUnordered<_> = started
        .into_iter()
        .map(|(c, id)| async move { wait_exit(s, &c.name, &id).await })
        .collect();
    while waits.next().await.is_some() {}
    None
}

/// Create and start `c`; `None` when it could not run (its status then says why).
async fn start(s: &Shared, c: &Container) -> Option<String> {
    match create(s, c).await {
        Ok(id) => launch(s, c, id).await,
        Err(message) => {
            s.status
                .send_modify(|st| status::set_cannot_run(st, &c.name, "", None, message));
            None
        }
    }
}

/// Create `c` (not started); the error is the message its status should carry.
async fn create(s: &Shared, c: &Container) -> Result<String, String> {
    let term_dir = s.pod_dir.join("termination");
    let term_file = term_dir.join(&c.name);
    let prepared = crate::volumes::make_dir(&term_dir, 0o755).and_then(|()| {
        std::fs::write(&term_file, b"").map_err(|e| crate::NodeError::io("create", &term_file, e))?;
        crate::volumes::make_dir_mode(&term_file, 0o666)
    });
    let ctx = PodContext {
        pod: &s.pod,
        node_name: &s.node_name,
        node_label: &s.node_label,
        pause_id: &s.pause_id,
        volumes: &s.volumes,
        termination_file: term_file,
    };
    let body = prepared
        .and_then(|()| create_body(&ctx, c))
        .map_err(|e| e.to_string())?;
    let opts = bollard::query_parameters::CreateContainerOptions {
        name: Some(docker_name(&s.pod, &c.name)),
        ..Default::default()
    };
    let id = s
        .docker
        .create_container(Some(opts), body)
        .await
        .map_err(|e| engine_message(&e))?
        .id;
    s.record(&c.name, &id);
    Ok(id)
}

/// Start the created container `id` of `c`; `None` when it could not run.
async fn launch(s: &Shared, c: &Container, id: String) -> Option<String> {
    if let Err(e) = s.docker.start_container(&id, None).await {
        let code = s
            .docker
            .inspect_container(&id, None)
            .await
            .ok()
            .and_then(|i| i.state?.exit_code);
        s.status
            .send_modify(|st| status::set_cannot_run(st, &c.name, &id, code, engine_message(&e)));
        return None;
    }
    tracing::debug!(pod = s.pod.metadata.name.as_deref(), container = %c.name, %id, "container started");
    s.status.send_modify(|st| status::set_running(st, &c.name, &id));
    if let Some((grace, _)) = s.stop_request() {
        // The stop raced with this start; the killer may not have seen this container.
        stop_one(s, &id, grace).await;
    }
    Some(id)
}

/// Wait for container `id` to stop and record how it ended; returns its exit code.
async fn wait_exit(s: &Shared, name: &str, id: &str) -> i64 {
    let opts = WaitContainerOptions {
        condition: "not-running".into(),
    };
    let code = match s.docker.wait_container(id, Some(opts)).next().await {
        Some(Ok(r)) => r.status_code,
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
        Some(Err(e)) => {
            tracing::warn!(container = name, error = %e, "waiting for container failed");
            -1
        }
        None => -1,
    };
    let mut inspect = s.docker.inspect_container(id, None).await.ok();
    if let Some(i) = inspect.as_mut().filter(|i| crate::oom::may_be_late(i))
        && s.stop_request().is_none()
        && crate::oom::seen(&s.docker, id, i).await
    {
        tracing::debug!(container = name, %id, "OOM kill reported by Docker after the exit");
        if let Some(st) = i.state.as_mut() {
            st.oom_killed = Some(true);
        }
    }
    let message = status::read_termination_message(&s.pod_dir.join("termination").join(name));
    s.status
        .send_modify(|st| status::set_terminated(st, name, id, inspect.as_ref(), message, code as i32));
    code
}

/// Wait for a stop request or the pod's deadline, then stop every container.
async fn killer(s: Arc<Shared>) {
    let spec = s.pod.spec.as_ref();
    let grace = spec
        .and_then(|p| p.termination_grace_period_seconds)
        .map_or(DEFAULT_GRACE, |g| Duration::from_secs(g.max(0) as u64));
    let deadline = spec
        .and_then(|p| p.active_deadline_seconds)
        .map(|d| Duration::from_secs(d.max(0) as u64));
    tokio::select! {
        () = s.stop.cancelled() => {}
        () = sleep_or_forever(deadline) => s.request_stop(grace, StopReason::DeadlineExceeded),
    }
    let grace = s.stop_request().map_or(Duration::ZERO, |(g, _)| g);
    let ids = s.app_ids();
    futures::future::join_all(ids.iter().map(|id| stop_one(&s, id, grace))).await;
}

async fn sleep_or_forever(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

async fn stop_one(s: &Shared, id: &str, grace: Duration) {
    let t = i32::try_from(grace.as_secs()).unwrap_or(i32::MAX);
    let opts = StopContainerOptions {
        t: Some(t),
        signal: None,
    };
    if let Err(e) = s.docker.stop_container(id, Some(opts)).await {
        tracing::debug!(container = %id, error = %e, "stop container");
    }
}

/// The Engine's own message, without bollard's "Docker responded with status code" prefix.
fn engine_message(e: &bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::DockerResponseServerError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}
