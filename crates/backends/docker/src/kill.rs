//! `kill`: SIGTERM, a grace period, then SIGKILL — through the daemon
//! (`POST /containers/{id}/kill`), so images without a shell or `kill` are fine.
//!
//! Containers that already exited or are gone (HTTP 409 / 404) are not an error and are not
//! waited for; unknown names are skipped. After SIGKILL the wait is bounded by
//! `max(grace, KILL_WAIT_MIN)`, since a SIGKILLed process can still take a moment to be reaped.

use std::time::Duration;

use argoexec_runtime::{ErrorKind, RuntimeError};
use bollard::query_parameters::KillContainerOptionsBuilder;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::DockerExecutor;
use crate::errors::{error, map_err, status_of};
use crate::wait::Outcome;

const ACTION: &str = "kill";

/// Least time allowed for containers to disappear after SIGKILL.
const KILL_WAIT_MIN: Duration = Duration::from_secs(10);

impl DockerExecutor {
    /// Send `signal` to each `(name, id)`; returns the names that received it and the
    /// failures (other than "not running" / "no such container").
    async fn signal_all(&self, targets: &[(String, String)], signal: &str) -> (Vec<String>, Vec<String>) {
        let mut sent = Vec::new();
        let mut failed = Vec::new();
        for (name, id) in targets {
            let opts = KillContainerOptionsBuilder::new().signal(signal).build();
            match self.docker.kill_container(id, Some(opts)).await {
                Ok(()) => {
                    tracing::info!(container = %name, signal, "signalled container");
                    sent.push(name.clone());
                }
                Err(e) if matches!(status_of(&e), Some(404 | 409)) => {
                    tracing::debug!(container = %name, signal, "container not running; nothing to signal");
                }
                Err(e) => {
                    let e = map_err(e, &self.socket, ACTION, name);
                    tracing::warn!(container = %name, signal, error = %e, "cannot signal container");
                    failed.push(format!("{name}: {}", e.message));
                }
            }
        }
        (sent, failed)
    }

    /// See [`argoexec_runtime::RuntimeExecutor::kill`].
    pub(crate) async fn stop(&self, names: &[String], grace: Duration) -> Result<(), RuntimeError> {
        let pod = self.pod_containers(ACTION, &names.join(",")).await?;
        let mut targets = Vec::new();
        for name in names {
            match pod.get(name) {
                Some(c) => targets.push((name.clone(), c.id.clone())),
                None => tracing::debug!(container = %name, "no such container in the pod; skipping"),
            }
        }
        let (signalled, mut failed) = self.signal_all(&targets, "SIGTERM").await;
        let never = CancellationToken::new();
        if !signalled.is_empty() {
            let deadline = Instant::now() + grace;
            if let Outcome::TimedOut(stubborn) = self
                .wait_names(ACTION, &signalled, &never, Some(deadline))
                .await?
            {
                tracing::warn!(containers = ?stubborn, grace_s = grace.as_secs_f64(), "still running after SIGTERM; sending SIGKILL");
                let targets: Vec<(String, String)> = targets
                    .iter()
                    .filter(|(n, _)| stubborn.contains(n))
                    .cloned()
                    .collect();
                let (killed, kill_failed) = self.signal_all(&targets, "SIGKILL").await;
                failed.extend(kill_failed);
                if !killed.is_empty() {
                    let deadline = Instant::now() + grace.max(KILL_WAIT_MIN);
                    if let Outcome::TimedOut(rest) =
                        self.wait_names(ACTION, &killed, &never, Some(deadline)).await?
                    {
                        failed.extend(
                            rest.into_iter()
                                .map(|n| format!("{n}: still running after SIGKILL")),
                        );
                    }
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(error(
                ErrorKind::Fatal,
                ACTION,
                &names.join(","),
                failed.join("; "),
            ))
        }
    }
}
