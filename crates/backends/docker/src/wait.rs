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
//! A listing without any container of the pod (not even the wait container, which is one of
//! them) means the backend looks for the wrong pod or at the wrong runtime: after the
//! pod-lookup bound (`with_pod_lookup_timeout`, default 60 s, counted from the first empty
//! listing and reset by any non-empty one) the wait ends with `NotFound` naming the pod, the
//! labels and the likely cause. A pod whose containers are listed, but not yet the one
//! waited for (image pulling), is waited for without a bound.
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
use crate::identity::newest_by_name;

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

/// The state of one wait, carried from one evaluation to the next.
struct Waiting<'a> {
    action: &'static str,
    names: &'a [String],
    who: String,
    pending: Vec<String>,
    done: BTreeMap<String, Option<i32>>,
    backoff: Duration,
    /// Since when the daemon has not answered (transient failures in a row).
    down_since: Option<Instant>,
    /// Since when listings have had no container of the pod at all.
    absent_since: Option<Instant>,
}

impl<'a> Waiting<'a> {
    fn new(action: &'static str, names: &'a [String]) -> Self {
        let mut pending: Vec<String> = names.to_vec();
        pending.sort();
        pending.dedup();
        Self {
            action,
            names,
            who: names.join(","),
            pending,
            done: BTreeMap::new(),
            backoff: BACKOFF_START,
            down_since: None,
            absent_since: None,
        }
    }

    fn cancelled(&self) -> RuntimeError {
        error(ErrorKind::Cancelled, self.action, &self.who, "cancelled")
    }

    /// Pause for the current backoff (doubling it), or `Cancelled`.
    async fn back_off(&mut self, cancel: &CancellationToken) -> Result<(), RuntimeError> {
        pause(self.backoff, cancel, self.action, &self.who).await?;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        Ok(())
    }

    /// Every name's exit, in the order asked.
    fn exits(&self) -> Vec<ContainerExit> {
        self.names
            .iter()
            .map(|n| ContainerExit {
                name: n.clone(),
                exit_code: self.done.get(n).copied().flatten(),
            })
            .collect()
    }
}

/// What one evaluation found: why each pending name is pending, and whether the listing had
/// any container of the pod at all.
struct Evaluation {
    why: Vec<(String, &'static str)>,
    pod_listed: bool,
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
        let filters = HashMap::from([
            ("type", vec!["container".to_string()]),
            (
                "event",
                ["create", "start", "die", "destroy"].map(String::from).to_vec(),
            ),
            ("label", self.pod.label_filters()),
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
    ) -> Result<Evaluation, RuntimeError> {
        let listing = self.list_pod(action, &pending.join(",")).await?;
        let pod_listed = !listing.is_empty();
        let pod = newest_by_name(listing);
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
        Ok(Evaluation { why, pod_listed })
    }

    /// The `NotFound` error for a pod none of whose containers has been listed for
    /// `missing_for`: the pod, the listing, and the likely cause.
    fn pod_not_found(&self, w: &Waiting<'_>, missing_for: Duration) -> RuntimeError {
        let cause = match self.pod.uid() {
            Some(_) => {
                "this daemon does not run the pod: the node's kubelet uses another container runtime \
                        (containerd, CRI-O: use the emissary, kubelet or k8sapi executor), or ARGO_POD_UID is not \
                        this pod's UID"
            }
            None => {
                "the namespace is wrong (ARGO_NAMESPACE when set, else the service account's namespace file; \
                     set ARGO_POD_UID to find the pod by its UID), or the node's kubelet uses another container \
                     runtime (containerd, CRI-O: use the emissary, kubelet or k8sapi executor)"
            }
        };
        error(
            ErrorKind::NotFound,
            w.action,
            &w.who,
            format!(
                "no container of {} is listed by the Docker daemon at {} (GET /containers/json?all=1 with labels {}) \
                 for {} s; the wait container is one of the pod's containers, so {cause}",
                self.pod,
                self.socket.display(),
                self.pod.label_filters().join(", "),
                missing_for.as_secs(),
            ),
        )
    }

    /// Take in an evaluation: the outcome when every name is done, an error when the pod
    /// has been missing for the pod-lookup bound, `None` to keep waiting.
    fn settle(&self, w: &mut Waiting<'_>, ev: Evaluation) -> Result<Option<Outcome>, RuntimeError> {
        if let Some(t) = w.down_since.take() {
            tracing::info!(after = ?t.elapsed(), "the Docker daemon answers again");
        }
        if ev.pod_listed {
            w.absent_since = None;
        } else {
            let since = *w.absent_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= self.lookup {
                return Err(self.pod_not_found(w, since.elapsed()));
            }
            tracing::debug!(pod = %self.pod, missing_for = ?since.elapsed(), "no container of the pod is listed");
        }
        if w.pending.is_empty() {
            return Ok(Some(Outcome::Done(w.exits())));
        }
        tracing::debug!(pending = ?ev.why, "waiting for containers");
        Ok(None)
    }

    /// A transient failure: pause and retry while within the outage tolerance, else the
    /// final error (which names the stale-socket case).
    async fn ride_out(
        &self,
        w: &mut Waiting<'_>,
        e: RuntimeError,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        let since = *w.down_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= self.outage {
            return Err(error(
                ErrorKind::Transient,
                w.action,
                &w.who,
                format!(
                    "the Docker daemon has not answered for {} s: it is down, or it restarted and the socket \
                     mounted into this pod is stale (a restarted daemon listens on a new socket file, a file \
                     mount keeps the old one: Argo #9129); the emissary, kubelet and k8sapi executors need no \
                     socket",
                    since.elapsed().as_secs()
                ),
            )
            .with_source(e));
        }
        tracing::warn!(error = %e, down_for = ?since.elapsed(), "the Docker daemon does not answer; retrying");
        w.back_off(cancel).await
    }

    /// Block until something may have changed: a container event, the safety re-check,
    /// `wake` (a deadline), or a broken event stream (re-subscribed after a backoff).
    async fn next_change(
        &self,
        events: &mut Events,
        w: &mut Waiting<'_>,
        wake: Instant,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        tokio::select! {
            () = cancel.cancelled() => return Err(w.cancelled()),
            () = tokio::time::sleep_until(wake) => {}
            () = tokio::time::sleep(RECHECK) => {
                tracing::debug!("no container event for a while; re-checking");
            }
            ev = events.next() => match ev {
                Some(Ok(ev)) => {
                    w.backoff = BACKOFF_START;
                    tracing::trace!(action = ?ev.action, "container event");
                    // Coalesce a burst of events into one re-evaluation.
                    while let Some(Some(Ok(_))) = events.next().now_or_never() {}
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "docker event stream failed; re-subscribing");
                    w.back_off(cancel).await?;
                    *events = self.subscribe();
                }
                None => {
                    tracing::debug!("docker event stream ended; re-subscribing");
                    w.back_off(cancel).await?;
                    *events = self.subscribe();
                }
            },
        }
        Ok(())
    }

    /// Wait for `names` until they all terminated, `cancel` fires (`Cancelled`), the
    /// optional `deadline` passes ([`Outcome::TimedOut`]), or no container of the pod has
    /// been listed for the pod-lookup bound (`NotFound`).
    pub(crate) async fn wait_names(
        &self,
        action: &'static str,
        names: &[String],
        cancel: &CancellationToken,
        deadline: Option<Instant>,
    ) -> Result<Outcome, RuntimeError> {
        let mut w = Waiting::new(action, names);
        let mut events = self.subscribe();
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        let deadline_at = deadline.unwrap_or(far);
        loop {
            if cancel.is_cancelled() {
                return Err(w.cancelled());
            }
            match self.evaluate(action, &mut w.pending, &mut w.done).await {
                Ok(ev) => {
                    if let Some(outcome) = self.settle(&mut w, ev)? {
                        return Ok(outcome);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Transient => {
                    self.ride_out(&mut w, e, cancel).await?;
                    continue;
                }
                Err(e) => return Err(e),
            }
            if Instant::now() >= deadline_at {
                return Ok(Outcome::TimedOut(w.pending));
            }
            let lookup_at = w.absent_since.map(|s| s + self.lookup);
            let wake = lookup_at.map_or(deadline_at, |l| l.min(deadline_at));
            self.next_change(&mut events, &mut w, wake, cancel).await?;
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
