//! `wait`: poll the kubelet's `GET /pods` until every named container has terminated.
//!
//! The kubelet has no watch, so this is the one backend that polls; the interval adapts to
//! the time waited so far ([`crate::config::Poll`]). A pod the kubelet does not list yet and
//! transient failures (connection refused during a kubelet restart, 5xx) are retried for up
//! to [`MAX_TRANSIENT_FAILURES`] consecutive polls; 401/403 and TLS failures end the wait at
//! once with the kubelet's own message.

use std::time::Duration;

use argoexec_kube::podstate::evaluate;
use argoexec_runtime::{ContainerExit, ErrorKind, RuntimeError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{KIND, KubeletExecutor};

/// Consecutive failed polls tolerated.
pub const MAX_TRANSIENT_FAILURES: u32 = 60;

impl KubeletExecutor {
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
        let mut failures = 0u32;
        let mut polls = 0u64;
        loop {
            polls += 1;
            let last = match self.own_pod().await {
                Ok(pod) => {
                    failures = 0;
                    let e = evaluate(&pod, names);
                    if e.done() {
                        if e.deadline_exceeded {
                            tracing::warn!(pending = %e.describe_pending(), "the pod's activeDeadlineSeconds passed (DeadlineExceeded)");
                        }
                        tracing::info!(containers = %who, polls, elapsed = ?start.elapsed(), "containers terminated (kubelet /pods)");
                        let left = e.pending.into_iter().map(|(n, _)| n).collect();
                        return Ok((e.exits, left));
                    }
                    tracing::trace!(pending = %e.describe_pending(), "waiting");
                    (e.exits, e.pending.into_iter().map(|(n, _)| n).collect::<Vec<_>>())
                }
                Err(e)
                    if matches!(e.kind, ErrorKind::Transient | ErrorKind::NotFound)
                        && failures < MAX_TRANSIENT_FAILURES =>
                {
                    failures += 1;
                    tracing::debug!(error = %e, failures, "kubelet poll failed; retrying");
                    (Vec::new(), names.to_vec())
                }
                Err(mut e) => {
                    e.action = "wait for";
                    e.container = who;
                    return Err(e);
                }
            };
            let pause = self.config.poll.interval(start.elapsed());
            if let Some(t) = timeout
                && start.elapsed() + pause > t
            {
                let rest = t.saturating_sub(start.elapsed());
                if rest.is_zero() {
                    return Ok(last);
                }
                tokio::select! {
                    () = cancel.cancelled() => return Err(RuntimeError::new(ErrorKind::Cancelled, KIND, "wait for", who, "cancelled")),
                    () = tokio::time::sleep(rest) => {}
                }
                continue;
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(RuntimeError::new(ErrorKind::Cancelled, KIND, "wait for", who, "cancelled")),
                () = tokio::time::sleep(pause) => {}
            }
        }
    }
}
