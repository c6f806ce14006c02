//! `wait`: poll the kubelet's `GET /pods` until every named container has terminated.
//!
//! The kubelet has no watch, so this is the one backend that polls; the interval adapts to
//! the time waited so far ([`crate::config::Poll`]). Failures follow the rule of
//! [`argoexec_kube::lookup`]:
//! - an answer that does not list the pod is tolerated for the pod-lookup bound
//!   ([`KubeletExecutor::with_pod_lookup_timeout`], default 60 s), then the wait ends with
//!   `NotFound` naming the pod, the kubelet, where a pod of that name runs instead, and the
//!   likely cause (wrong namespace or node); a pod that is listed but whose container has no
//!   status yet (image pulling, init containers) is waited for without a bound;
//! - transient failures (connection refused during a kubelet restart, 5xx) are retried for
//!   up to [`MAX_TRANSIENT_FAILURES`] consecutive polls;
//! - 401/403 and TLS failures end the wait at once with the kubelet's own message.

use std::time::Duration;

use argoexec_kube::lookup::Absence;
use argoexec_kube::podstate::evaluate;
use argoexec_runtime::{ContainerExit, ErrorKind, RuntimeError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{KIND, KubeletExecutor};

/// Consecutive polls without an answer (transient failures) tolerated.
pub const MAX_TRANSIENT_FAILURES: u32 = 60;

/// What one poll found: whether every name is done, the exits so far and the names left.
struct Look {
    done: bool,
    exits: Vec<ContainerExit>,
    left: Vec<String>,
}

/// The state carried from one poll to the next.
struct Progress {
    failures: u32,
    absence: Absence,
}

impl KubeletExecutor {
    /// One poll of `/pods` for `names`, under the failure rules of the module docs.
    async fn poll_once(&self, names: &[String], who: &str, p: &mut Progress) -> Result<Look, RuntimeError> {
        let pending = || Look {
            done: false,
            exits: Vec::new(),
            left: names.to_vec(),
        };
        match self.look().await {
            Ok(Ok(pod)) => {
                p.failures = 0;
                p.absence.seen();
                let e = evaluate(&pod, names);
                if e.done() && e.deadline_exceeded {
                    tracing::warn!(pending = %e.describe_pending(), "the pod's activeDeadlineSeconds passed (DeadlineExceeded)");
                } else if !e.done() {
                    tracing::trace!(pending = %e.describe_pending(), "waiting");
                }
                Ok(Look {
                    done: e.done(),
                    exits: e.exits,
                    left: e.pending.into_iter().map(|(n, _)| n).collect(),
                })
            }
            Ok(Err(elsewhere)) => {
                p.failures = 0;
                if let Some(missing_for) = p.absence.missing(Instant::now()) {
                    return Err(self.not_listed("wait for", who, &elsewhere, Some(missing_for)));
                }
                tracing::debug!(pod = %self.pod_name, namespace = %self.namespace, ?elsewhere, "the kubelet does not list the pod");
                Ok(pending())
            }
            Err(e) if e.kind == ErrorKind::Transient && p.failures < MAX_TRANSIENT_FAILURES => {
                p.failures += 1;
                tracing::debug!(error = %e, failures = p.failures, "kubelet poll failed; retrying");
                Ok(pending())
            }
            Err(mut e) => {
                e.action = "wait for";
                e.container = who.to_string();
                Err(e)
            }
        }
    }

    /// Poll until every name terminated (→ exits, nothing left), `timeout` passed (→ the
    /// exits so far and the names left), or `cancel` fired (→ `Cancelled`).
    pub(crate) async fn poll_until(
        &self,
        names: &[String],
        timeout: Option<Duration>,
        cancel: CancellationToken,
    ) -> Result<(Vec<ContainerExit>, Vec<String>), RuntimeError> {
        let start = Instant::now();
        let who = names.join(",");
        let mut progress = Progress {
            failures: 0,
            absence: Absence::new(self.lookup),
        };
        let mut polls = 0u64;
        loop {
            polls += 1;
            let look = self.poll_once(names, &who, &mut progress).await?;
            if look.done {
                tracing::info!(containers = %who, polls, elapsed = ?start.elapsed(), "containers terminated (kubelet /pods)");
                return Ok((look.exits, look.left));
            }
            let mut pause = self.config.poll.interval(start.elapsed());
            if let Some(t) = timeout {
                let rest = t.saturating_sub(start.elapsed());
                if rest.is_zero() {
                    return Ok((look.exits, look.left));
                }
                pause = pause.min(rest);
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(RuntimeError::new(ErrorKind::Cancelled, KIND, "wait for", who, "cancelled")),
                () = tokio::time::sleep(pause) => {}
            }
        }
    }
}
