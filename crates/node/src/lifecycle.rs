//! One pod's life on the local node, as the kubelet runs a `restartPolicy: Never` pod: init
//! containers one at a time in order (the first failure fails the pod; a sidecar, one with
//! `restartPolicy: Always`, is started and kept running, [`crate::sidecars`]), then every container
//! started in declaration order and waited for concurrently; the pod is `Succeeded` when all
//! exit 0, `Failed` otherwise. Under `restartPolicy: OnFailure` (Argo's agent pod) a
//! container that exits non-zero, init or not, is started again after the kubelet's
//! back-off (10 s, doubling, at most 5 minutes; waiting `CrashLoopBackOff` meanwhile, its
//! `restartCount` and `lastState` kept) until it exits 0 or the pod is stopped. A stop request (deletion) or `activeDeadlineSeconds` stops the
//! running containers with the runtime's TERM → grace → KILL, and no further container starts.
//!
//! A container that cannot be created or started ends the pod: its status says why (the
//! engine's message under `ContainerCannotRun`, or waiting `CreateContainerConfigError` for
//! a missing ConfigMap or Secret in its env), the others are stopped with the pod's grace
//! period, and the pod is `Failed`. A kubelet would leave the others running until a
//! controller deleted the pod; here nothing else would end it (a `wait` container waits for
//! a main that never comes).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use k8s_openapi::api::core::v1::{Container, PodStatus};

use crate::error::NodeError;
use crate::runtime::RuntimeError;
use crate::spec::{PodContext, create_spec};
use crate::state::{EVICTED_MESSAGE, Shared, StopReason};
use crate::status::{self, FAILED, RUNNING, SUCCEEDED};

/// Why a pod ended before all its containers ran.
enum Failure {
    /// An init container exited non-zero or could not run.
    Init(String),
    /// A container could not be created or started.
    CannotRun {
        /// The container.
        container: String,
        /// What its status says.
        message: String,
    },
}

/// Why a container did not run.
enum NotRun {
    /// The node could not make its create request: a missing ConfigMap or Secret in its env
    /// ([`NodeError::ContainerConfig`]), an unsupported field, host I/O.
    Node(NodeError),
    /// The engine refused to create or start it (with the exit code it recorded).
    Engine {
        source: RuntimeError,
        exit_code: Option<i64>,
    },
}

/// Drive the pod to a terminal phase.
pub(crate) async fn run(s: Arc<Shared>) {
    let killer = tokio::spawn(killer(s.clone()));
    let failure = drive(&s).await;
    let stop = s.stop_request().map(|(_, r)| r);
    s.status.send_modify(|st| finish(st, stop, failure));
    killer.abort();
}

/// The terminal phase (and reason, message) of a pod whose containers are all done.
fn finish(st: &mut PodStatus, stop: Option<StopReason>, failure: Option<Failure>) {
    let all_ok = st
        .container_statuses
        .iter()
        .flatten()
        .all(|c| status::exit_code_of(c) == Some(0));
    st.phase = Some(FAILED.into());
    match (stop, failure) {
        (Some(StopReason::DeadlineExceeded), _) => {
            st.reason = Some("DeadlineExceeded".into());
            st.message = Some("Pod was active on the node longer than the specified deadline".into());
        }
        (Some(StopReason::Evicted), _) => {
            st.reason = Some("Evicted".into());
            st.message = Some(EVICTED_MESSAGE.into());
        }
        (_, Some(Failure::Init(name))) => st.message = Some(format!("init container {name:?} failed")),
        (_, Some(Failure::CannotRun { container, message })) => {
            st.message = Some(format!("container {container:?} could not run: {message}"));
        }
        _ if all_ok => st.phase = Some(SUCCEEDED.into()),
        _ => {}
    }
}

/// Run the containers; the sidecars ([`crate::sidecars`]) are stopped once the others are
/// done, however the pod ended.
async fn drive(s: &Arc<Shared>) -> Option<Failure> {
    let mut sidecars = crate::sidecars::Sidecars::new();
    let failure = drive_containers(s, &mut sidecars).await;
    sidecars.terminate(s).await;
    failure
}

/// Run the init containers (a sidecar is started and kept, not waited for), then the
/// others; returns why the pod failed early, if it did.
///
/// The others are created while the init containers run when none of them mounts a
/// `subPath` ([`creation_may_overlap_init`]); otherwise after the init containers succeeded.
async fn drive_containers(s: &Arc<Shared>, sidecars: &mut crate::sidecars::Sidecars) -> Option<Failure> {
    let spec = s.pod.spec.as_ref()?;
    let inits = spec.init_containers.as_deref().unwrap_or_default();
    let early = !inits.is_empty() && creation_may_overlap_init(&spec.containers);
    let (init_failure, created) = if early {
        let (f, created) = tokio::join!(
            run_init_containers(s, inits, sidecars),
            create_all(s, &spec.containers)
        );
        (f, Some(created))
    } else {
        (run_init_containers(s, inits, sidecars).await, None)
    };
    if init_failure.is_some() || s.stop.is_cancelled() {
        // What was made early is removed with the pod.
        return init_failure;
    }
    let created = match created {
        Some(c) => c,
        None => create_all(s, &spec.containers).await,
    };
    let (started, failure) = start_containers(s, &spec.containers, created).await;
    if failure.is_some() {
        // No controller will end a pod with a container that cannot run: the node does.
        s.request_stop(s.grace(), StopReason::CannotRun);
    }
    let mut waits: FuturesUnordered<_> = started
        .into_iter()
        .map(|(c, id)| async move { run_to_end(s, c, &id).await })
        .collect();
    while waits.next().await.is_some() {}
    failure
}

/// Whether the app containers may be created while the init containers run. Creating a
/// container resolves its `subPath` mounts (a missing source becomes a directory, and
/// containerd's runc create binds it), and init containers write those sources (Argo's
/// input artifacts), so a pod with one creates its containers after them, as the kubelet
/// does. Otherwise the creation is not seen (statuses stay waiting until the start) and
/// saves the engine's create time from the pod's start.
fn creation_may_overlap_init(containers: &[Container]) -> bool {
    containers
        .iter()
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .all(|m| {
            m.sub_path.as_deref().unwrap_or_default().is_empty()
                && m.sub_path_expr.as_deref().unwrap_or_default().is_empty()
        })
}

/// Run the init containers one at a time, in order (a sidecar is started and kept); why the
/// first that failed did, if one did. `None` too when the pod was stopped meanwhile.
async fn run_init_containers(
    s: &Arc<Shared>,
    inits: &[Container],
    sidecars: &mut crate::sidecars::Sidecars,
) -> Option<Failure> {
    for c in inits {
        if s.stop.is_cancelled() {
            return None;
        }
        let id = match create(s, c).await {
            Ok(id) => launch(s, c, &id).await.map(|()| id),
            Err(e) => Err(e),
        };
        let id = match id {
            Ok(id) => id,
            Err((id, e)) => {
                not_run(s, c, &id, e);
                return Some(Failure::Init(c.name.clone()));
            }
        };
        if crate::sidecars::is_sidecar(c) {
            sidecars.keep(s, c, id);
        } else if run_to_end(s, c, &id).await != 0 {
            return Some(Failure::Init(c.name.clone()));
        }
    }
    None
}

/// The result of creating one container: its ID, or the ID made (if any) and why not.
type Created = Result<String, (String, NotRun)>;

/// Create every container of `containers`, concurrently.
async fn create_all(s: &Shared, containers: &[Container]) -> Vec<Created> {
    futures::future::join_all(containers.iter().map(|c| create(s, c))).await
}

/// Start the created containers one after another in spec order, as the kubelet does;
/// stops at the first that cannot run (or could not be created). Returns the started
/// containers and that failure.
async fn start_containers<'c>(
    s: &Shared,
    containers: &'c [Container],
    created: Vec<Created>,
) -> (Vec<(&'c Container, String)>, Option<Failure>) {
    s.status.send_modify(|st| {
        for cs in st.container_statuses.iter_mut().flatten() {
            *cs = status::waiting(&cs.name, &cs.image, "ContainerCreating");
        }
    });
    let mut failure = None;
    let mut made = Vec::new();
    for (c, r) in containers.iter().zip(created) {
        match r {
            Ok(id) => made.push((c, id)),
            Err((id, e)) => {
                let message = not_run(s, c, &id, e);
                failure.get_or_insert(Failure::CannotRun {
                    container: c.name.clone(),
                    message,
                });
            }
        }
    }
    let mut started = Vec::new();
    if failure.is_none() {
        // Each start returns once runc has exec'd the process; no container waits for
        // another to be ready. `wait` is first, so with a shared process namespace it is
        // running before main exists.
        for (c, id) in made {
            if s.stop.is_cancelled() {
                break;
            }
            if let Err((id, e)) = launch(s, c, &id).await {
                let message = not_run(s, c, &id, e);
                failure = Some(Failure::CannotRun {
                    container: c.name.clone(),
                    message,
                });
                break;
            }
            started.push((c, id));
        }
    }
    if !started.is_empty() {
        // The kubelet's phase: Pending while any container still waits to start, then Running.
        s.status.send_modify(|st| {
            if !status::is_terminal(st.phase.as_deref()) {
                st.phase = Some(RUNNING.into());
            }
        });
    }
    (started, failure)
}

/// Put why `c` did not run into its status (`id`: its runtime ID, if it was created);
/// returns the message.
fn not_run(s: &Shared, c: &Container, id: &str, e: NotRun) -> String {
    let (message, exit_code) = match &e {
        NotRun::Node(e @ (NodeError::ContainerConfig { .. } | NodeError::NonRoot(_))) => {
            let message = match e {
                NodeError::ContainerConfig { source, .. } => source.to_string(),
                other => other.to_string(),
            };
            s.status.send_modify(|st| {
                status::set_waiting(st, &c.name, "CreateContainerConfigError", message.clone());
            });
            return message;
        }
        NotRun::Node(e) => (e.to_string(), None),
        NotRun::Engine { source, exit_code } => (source.engine_message(), *exit_code),
    };
    tracing::debug!(pod = s.pod.metadata.name.as_deref(), container = %c.name, error = %message, "container cannot run");
    let status_id = s.status_id(id);
    s.status
        .send_modify(|st| status::set_cannot_run(st, &c.name, &status_id, exit_code, message.clone()));
    message
}

/// Create `c` (not started). The error carries the ID of a container that was made.
async fn create(s: &Shared, c: &Container) -> Result<String, (String, NotRun)> {
    let fail = |e| (String::new(), NotRun::Node(e));
    let term_dir = s.pod_dir.join("termination");
    let term_file = term_dir.join(&c.name);
    crate::hostfs::write_file(&term_file, b"", 0o666).map_err(fail)?;
    let ctx = PodContext {
        pod: &s.pod,
        node_name: &s.node_name,
        node_label: &s.node_label,
        pause_id: &s.pause_id,
        volumes: &s.volumes,
        objects: &s.objects,
        termination_file: term_file,
    };
    verify_non_root(s, c).await.map_err(fail)?;
    let spec = create_spec(&ctx, c).map_err(fail)?;
    let id = s.runtime.create(spec).await.map_err(|source| {
        let e = NotRun::Engine {
            source,
            exit_code: None,
        };
        (String::new(), e)
    })?;
    s.record(&c.name, &id);
    Ok(id)
}

/// `runAsNonRoot`, checked as the kubelet does before creating `c` ([`crate::nonroot`]):
/// the image is inspected only when the spec sets `runAsNonRoot` and no UID.
async fn verify_non_root(s: &Shared, c: &Container) -> Result<(), NodeError> {
    let pod = s.pod.metadata.name.as_deref().unwrap_or_default();
    let pod_sc = s.pod.spec.as_ref().and_then(|p| p.security_context.as_ref());
    if let crate::nonroot::Verdict::NeedsImageUser = crate::nonroot::check_spec(pod_sc, c, pod)? {
        let image = c.image.clone().unwrap_or_default();
        let info = s.runtime.image(&image).await?;
        let info = info.ok_or_else(|| NodeError::ImageMissing {
            container: c.name.clone(),
            image,
        })?;
        crate::nonroot::check_image_user(&info.user, c, pod)?;
    }
    Ok(())
}

/// Start the created container `id` of `c`.
async fn launch(s: &Shared, c: &Container, id: &str) -> Result<(), (String, NotRun)> {
    if let Err((source, exit_code)) = s.runtime.start(id).await {
        return Err((id.to_string(), NotRun::Engine { source, exit_code }));
    }
    tracing::debug!(pod = s.pod.metadata.name.as_deref(), container = %c.name, %id, "container started");
    let status_id = s.status_id(id);
    s.status
        .send_modify(|st| status::set_running(st, &c.name, &status_id));
    if let Some((grace, _)) = s.stop_request() {
        // The stop raced with this start; the killer may not have seen this container.
        stop_one(s, id, grace).await;
    }
    Ok(())
}

/// The kubelet's longest restart back-off.
pub(crate) const BACKOFF_CAP: Duration = Duration::from_secs(300);

/// Wait for `c` to end; under `restartPolicy: OnFailure` start it again after a failure,
/// with back-off, until it exits 0 or the pod is stopped. Returns the last exit code.
async fn run_to_end(s: &Shared, c: &Container, id: &str) -> i64 {
    let on_failure = s.pod.spec.as_ref().and_then(|p| p.restart_policy.as_deref()) == Some("OnFailure");
    let mut backoff = s.restart_backoff;
    loop {
        let code = wait_exit(s, &c.name, id).await;
        if code == 0 || !on_failure || s.stop.is_cancelled() {
            return code;
        }
        tracing::info!(pod = s.pod.metadata.name.as_deref(), container = %c.name, code, ?backoff, "restarting a failed container");
        s.status
            .send_modify(|st| status::set_back_off(st, &c.name, backoff));
        tokio::select! {
            biased;
            () = s.stop.cancelled() => return code,
            () = tokio::time::sleep(backoff) => {}
        }
        if s.stop.is_cancelled() {
            return code;
        }
        backoff = (backoff * 2).min(BACKOFF_CAP);
        if restart(s, c, id).await.is_err() {
            // Nothing else would end a pod whose container cannot start again.
            s.request_stop(s.grace(), StopReason::CannotRun);
            return code;
        }
    }
}

/// Start the ended container `id` of `c` again, with an empty termination message (the
/// run's message is its own, not the ended run's); the error is what its status says.
pub(crate) async fn restart(s: &Shared, c: &Container, id: &str) -> Result<(), String> {
    let term_file = s.pod_dir.join("termination").join(&c.name);
    if let Err(e) = crate::hostfs::write_file(&term_file, b"", 0o666) {
        tracing::warn!(container = %c.name, error = %e, "cannot empty the termination message file");
    }
    launch(s, c, id).await.map_err(|(id, e)| not_run(s, c, &id, e))
}

/// Wait for container `id` to stop and record how it ended; returns its exit code.
pub(crate) async fn wait_exit(s: &Shared, name: &str, id: &str) -> i64 {
    let mut exit = s.runtime.wait(id).await;
    if exit.may_be_late_oom() && s.stop_request().is_none() && s.runtime.late_oom(id, &exit).await {
        tracing::debug!(container = name, %id, "OOM kill reported by the runtime after the exit");
        exit.oom_killed = true;
    }
    let code = exit.code;
    let message = status::read_termination_message(&s.pod_dir.join("termination").join(name));
    let status_id = s.status_id(id);
    s.status
        .send_modify(|st| status::set_terminated(st, name, &status_id, Some(&exit), message, -1));
    code
}

/// Wait for a stop request or the pod's deadline, then stop every container.
async fn killer(s: Arc<Shared>) {
    let deadline = s
        .pod
        .spec
        .as_ref()
        .and_then(|p| p.active_deadline_seconds)
        .map(|d| Duration::from_secs(d.max(0).unsigned_abs()));
    tokio::select! {
        () = s.stop.cancelled() => {}
        () = sleep_or_forever(deadline) => s.request_stop(s.grace(), StopReason::DeadlineExceeded),
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

/// Stop container `id`: TERM, then KILL after `grace`.
pub(crate) async fn stop_one(s: &Shared, id: &str, grace: Duration) {
    s.runtime.stop(id, grace).await;
}
