//! `wait`: block until every named container has terminated.
//!
//! Driven by the daemon's event stream (`GET /events`) filtered to this pod's labels rather
//! than by polling: subscribe, evaluate the pod's containers, and re-evaluate on every event
//! (`create`, `start`, `die`, `destroy`) until nothing is pending. The subscription asks for
//! events `since` a moment before the first evaluation, so an event that happens between the
//! evaluation and the request reaching the daemon is replayed instead of lost.
//!
//! A name counts as done when its newest container is `exited`/`dead`, or is `created` with
//! a non-zero exit code (it failed to start, e.g. a bad entrypoint — Argo v3.3's rule);
//! `created` with exit code 0 has just not started yet. Names not created yet are waited for.
//! A container that vanished between listing and inspection (re-created, "No such
//! container") is re-mapped at the next evaluation. Each exit code comes from inspecting
//! `State.ExitCode`.
//!
//! A daemon that stops answering (a restart) is retried with backoff for the executor's
//! outage tolerance (`with_outage_tolerance`, default 120 s); containers kept by
//! `live-restore`, or stopped by the shutdown, are then judged as usual. A socket mounted as a
//! file cannot follow a restart (the new daemon binds a new file), which the final error says.
//!
//! `/containers/{id}/wait` is not used: it cannot wait for a container that does not exist
//! yet, returns at once for a created-but-not-started one, and (in bollard) turns a non-zero
//! exit code into an error — the event stream covers every case with one connection.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use argoexec_runtime::{ContainerExit, ErrorKind, RuntimeError};
use bollard::models::{ContainerStateStatusEnum, EventMessage};
use bollard::query_parameters::EventsOptionsBuilder;
use futures::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::DockerExecutor;
use crate::errors::{error, map_err, status_of};

/// Safety re-evaluation interval, in case an event stream silently stops delivering (the
/// stream is the mechanism; this only bounds the damage of a broken one).
const RECHECK: Duration = Duration::from_secs(30);
/// How far back the event subscription starts, to cover the evaluation it follows and small
/// clock differences. Replayed events only cause a harmless re-evaluation.
const EVENTS_SLACK_SECS: u64 = 2;
/// First and largest pause before re-subscribing or retrying after a transient failure.
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// How an internal wait ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Every name terminated.
    Done(Vec<ContainerExit>),
    /// The deadline passed; these names were still running (or not there yet).
    TimedOut(Vec<String>),
}

/// What one evaluation found for one name.
enum Status {
    Pending(&'static str),
    Exited(Option<i32>),
}

type Events = std::pin::Pin<Box<dyn Stream<Item = Result<EventMessage, bollard::errors::Error>> + Send>>;

/// Sleep `d`, or return `Cancelled` when `cancel` fires first.
async fn pause(
    d: Duration,
    cancel: &CancellationToken,
    action: &'static str,
    who: &str,
) -> Result<(), RuntimeError> {
    tokio::select! {
        () = cancel.cancelled() => Err(error(ErrorKind::Cancelled, action, who, "cancelled")),
        () = tokio::time::sleep(d) => Ok(()),
    }
}

impl DockerExecutor {
    /// This pod's container events from a moment ago on.
    fn subscribe(&self) -> Events {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs().saturating_sub(EVENTS_SLACK_SECS))
            .unwrap_or(0)
            .to_string();
        let mut labels = self.pod_label_filters();
        let filters = HashMap::from([
            ("type", vec!["container".to_string()]),
            (
                "event",
                ["create", "start", "die", "destroy"].map(String::from).to_vec(),
            ),
            ("label", std::mem::take(&mut labels)),
        ]);
        let opts = EventsOptionsBuilder::new()
            .since(&since)
            .filters(&filters)
            .build();
        Box::pin(self.docker.events(Some(opts)))
    }

    /// The status of one listed container, from inspecting it. The listing's own state is not
    /// trusted: the daemon emits `die` before its listing view is updated, while `inspect`
    /// waits for the container's lock and so sees the exit.
    async fn status(&self, action: &'static str, name: &str, id: &str) -> Result<Status, RuntimeError> {
        let info = match self.docker.inspect_container(id, None).await {
            Ok(i) => i,
            // Gone since the listing (re-created or removed): re-map next time.
            Err(e) if status_of(&e) == Some(404) => return Ok(Status::Pending("re-created")),
            Err(e) => return Err(map_err(e, &self.socket, action, name)),
        };
        let state = info.state.unwrap_or_default();
        let code = state.exit_code.and_then(|c| i32::try_from(c).ok());
        use ContainerStateStatusEnum as S;
        Ok(match state.status {
            Some(S::EXITED | S::DEAD) => Status::Exited(code),
            Some(S::CREATED) if code.is_some_and(|c| c != 0) => Status::Exited(code),
            Some(S::CREATED) => Status::Pending("created, not started"),
            _ => Status::Pending("running"),
        })
    }

    /// One pass over the pending names: move the terminated ones to `done`. On an error
    /// `pending` and `done` are left as they were, so a retry (a daemon that stopped
    /// answering between the listing and an inspection) still waits for every name.
    async fn evaluate(
        &self,
        action: &'static str,
        pending: &mut Vec<String>,
        done: &mut BTreeMap<String, Option<i32>>,
    ) -> Result<Vec<(String, &'static str)>, RuntimeError> {
        let pod = self.pod_containers(action, &pending.join(",")).await?;
        let mut still = Vec::new();
        let mut why = Vec::new();
        let mut exited = Vec::new();
        for name in pending.iter() {
            let status = match pod.get(name) {
                None => Status::Pending("not created yet"),
                Some(c) => self.status(action, name, &c.id).await?,
            };
            match status {
                Status::Exited(code) => exited.push((name.clone(), code)),
                Status::Pending(reason) => {
                    why.push((name.clone(), reason));
                    still.push(name.clone());
                }
            }
        }
        for (name, code) in exited {
            tracing::debug!(container = %name, exit_code = ?code, "container terminated");
            done.insert(name, code);
        }
        *pending = still;
        Ok(why)
    }

    /// Wait for `names` until they all terminated, `cancel` fires (`Cancelled`) or the
    /// optional `deadline` passes ([`Outcome::TimedOut`]).
    pub(crate) async fn wait_names(
        &self,
        action: &'static str,
        names: &[String],
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> Result<Outcome, RuntimeError> {
        let who = names.join(",");
        let mut pending: Vec<String> = names.to_vec();
        pending.sort();
        pending.dedup();
        let mut done = BTreeMap::new();
        let mut events = self.subscribe();
        let mut backoff = BACKOFF_START;
        // Since when the daemon has not answered (transient failures in a row).
        let mut down_since: Option<Instant> = None;
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        let deadline_at = deadline.unwrap_or(far);
        loop {
            if cancel.is_cancelled() {
                return Err(error(ErrorKind::Cancelled, action, &who, "cancelled"));
            }
            match self.evaluate(action, &mut pending, &mut done).await {
                Ok(why) => {
                    if let Some(t) = down_since.take() {
                        tracing::info!(after = ?t.elapsed(), "the Docker daemon answers again");
                    }
                    if pending.is_empty() {
                        let exits = names
                            .iter()
                            .map(|n| ContainerExit {
                                name: n.clone(),
                                exit_code: done.get(n).copied().flatten(),
                            })
                            .collect();
                        return Ok(Outcome::Done(exits));
                    }
                    tracing::debug!(pending = ?why, "waiting for containers");
                }
                Err(e) if e.kind() == ErrorKind::Transient => {
                    let since = *down_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= self.outage {
                        return Err(error(
                            ErrorKind::Transient,
                            action,
                            &who,
                            format!(
                                "the Docker daemon has not answered for {} s ({e}): it is down, or it \
                                 restarted and the socket mounted into this pod is stale (a restarted \
                                 daemon listens on a new socket file, a file mount keeps the old one: \
                                 Argo #9129); the emissary, kubelet and k8sapi executors need no socket",
                                since.elapsed().as_secs()
                            ),
                        ));
                    }
                    tracing::warn!(error = %e, down_for = ?since.elapsed(), "the Docker daemon does not answer; retrying");
                    pause(backoff, cancel, action, &who).await?;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
                Err(e) => return Err(e),
            }
            if Instant::now() >= deadline_at {
                return Ok(Outcome::TimedOut(pending));
            }
            tokio::select! {
                () = cancel.cancelled() => {
                    return Err(error(ErrorKind::Cancelled, action, &who, "cancelled"));
                }
                () = tokio::time::sleep_until(deadline_at) => {}
                () = tokio::time::sleep(RECHECK) => {
                    tracing::debug!("no container event for a while; re-checking");
                }
                ev = events.next() => match ev {
                    Some(Ok(ev)) => {
                        backoff = BACKOFF_START;
                        tracing::trace!(action = ?ev.action, "container event");
                        // Coalesce a burst of events into one re-evaluation.
                        while let Some(Some(Ok(_))) = events.next().now_or_never() {}
                    }
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "docker event stream failed; re-subscribing");
                        pause(backoff, cancel, action, &who).await?;
                        backoff = (backoff * 2).min(BACKOFF_MAX);
                        events = self.subscribe();
                    }
                    None => {
                        tracing::debug!("docker event stream ended; re-subscribing");
                        pause(backoff, cancel, action, &who).await?;
                        backoff = (backoff * 2).min(BACKOFF_MAX);
                        events = self.subscribe();
                    }
                },
            }
        }
    }

    /// See [`argoexec_runtime::RuntimeExecutor::wait`].
    pub(crate) async fn wait_all(
        &self,
        names: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        match self.wait_names("wait for", names, &cancel, None).await? {
            Outcome::Done(exits) => Ok(exits),
            Outcome::TimedOut(rest) => Err(error(
                ErrorKind::Fatal,
                "wait for",
                &rest.join(","),
                "stopped waiting without a deadline (bug)",
            )),
        }
    }
}
