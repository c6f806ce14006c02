//! Sidecar containers (Kubernetes "native sidecars", KEP-753: an init container with
//! `restartPolicy: Always`; beta from 1.29, GA in 1.33), as the kubelet runs them:
//!
//! - in init order, started and *not* waited for: the next init container (or the app
//!   containers) starts as soon as it runs;
//! - one that exits while the pod runs is started again after the restart back-off (10 s,
//!   doubling, at most 5 minutes), whatever its exit code; its `restartCount` grows;
//! - once every app container has ended (or the pod failed or was stopped), they are
//!   stopped one at a time in the **reverse** order of their declaration, each with TERM →
//!   the pod's grace period → KILL;
//! - their exit codes do not count for the pod's phase (143 after TERM is normal).
//!
//! The node has no startup probes, so "started" is "the engine started the process".

use std::sync::Arc;

use k8s_openapi::api::core::v1::Container;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::state::Shared;
use crate::status;

/// Whether an init container is a sidecar.
pub(crate) fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// The pod's running sidecars.
pub(crate) struct Sidecars {
    /// Cancelled when the app containers are done: no more restarts.
    done: CancellationToken,
    /// (name, Docker ID) in start order.
    started: Vec<(String, String)>,
    /// One keeper per sidecar: restarts it, records how it ended.
    keepers: Vec<JoinHandle<()>>,
}

impl Sidecars {
    pub(crate) fn new() -> Self {
        Self {
            done: CancellationToken::new(),
            started: Vec::new(),
            keepers: Vec::new(),
        }
    }

    /// Keep the started sidecar `c` (Docker ID `id`) running until [`Sidecars::terminate`].
    pub(crate) fn keep(&mut self, s: &Arc<Shared>, c: &Container, id: String) {
        self.started.push((c.name.clone(), id.clone()));
        let (s, c, done) = (s.clone(), c.clone(), self.done.clone());
        self.keepers
            .push(tokio::spawn(async move { keeper(&s, &c, &id, &done).await }));
    }

    /// Stop the sidecars in reverse order (TERM → grace → KILL each) and wait until every
    /// one's end is recorded.
    pub(crate) async fn terminate(self, s: &Shared) {
        self.done.cancel();
        let grace = s.stop_request().map_or_else(|| s.grace(), |(g, _)| g);
        for (name, id) in self.started.iter().rev() {
            tracing::debug!(pod = s.pod.metadata.name.as_deref(), container = %name, "stopping a sidecar");
            super::lifecycle::stop_one(s, id, grace).await;
        }
        for k in self.keepers {
            let _ = k.await;
        }
    }
}

/// Wait for the sidecar to exit; while the pod still runs, start it again after the back-off.
async fn keeper(s: &Shared, c: &Container, id: &str, done: &CancellationToken) {
    let mut backoff = s.restart_backoff;
    loop {
        let code = super::lifecycle::wait_exit(s, &c.name, id).await;
        if done.is_cancelled() || s.stop.is_cancelled() {
            return;
        }
        tracing::info!(pod = s.pod.metadata.name.as_deref(), container = %c.name, code, ?backoff, "restarting a sidecar");
        s.status
            .send_modify(|st| status::set_back_off(st, &c.name, backoff));
        tokio::select! {
            biased;
            () = done.cancelled() => return,
            () = s.stop.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(super::lifecycle::BACKOFF_CAP);
        if let Err(message) = super::lifecycle::restart(s, c, id).await {
            tracing::warn!(container = %c.name, error = %message, "a sidecar cannot start again");
            return;
        }
    }
}
