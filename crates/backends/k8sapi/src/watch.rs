//! One watch on the own pod, shared by every operation of the backend.
//!
//! `GET /api/v1/namespaces/{ns}/pods?watch=1&fieldSelector=metadata.name={pod}` with no
//! `resourceVersion` first, which answers the pod's current state as a synthetic `ADDED`
//! event and then its changes — one request instead of a get plus a watch. The latest pod
//! is published on a [`tokio::sync::watch`] channel that `wait`, `kill` and the file
//! operations read; nothing polls.
//!
//! Resuming: when the server ends the watch (its `timeoutSeconds`, a restart, a proxy
//! cutting it) the next one starts from the last `resourceVersion` seen (bookmarks keep it
//! fresh); an `ERROR` 410 Gone/Expired restarts without one (the re-list: a new synthetic
//! `ADDED`). Transport failures are retried with backoff ([`MAX_FAILURES`] in a row);
//! 401/403 end the watch at once with the API server's message and a pointer to the RBAC
//! the backend needs.
//!
//! A watch that is established but delivers no pod is published as [`View::Absent`]: the
//! callers give up on it after the pod-lookup bound ([`argoexec_kube::lookup`]).

use std::sync::Arc;
use std::time::Duration;

use argoexec_runtime::ErrorKind;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Consecutive failed watch requests tolerated.
pub const MAX_FAILURES: u32 = 20;
/// The server-side time-out asked for each watch (kube-rs' default, under the API
/// server's 30 min cap).
pub const WATCH_TIMEOUT_SECS: u32 = 290;

/// What the watch knows.
#[derive(Debug, Clone)]
pub enum View {
    /// Nothing yet: no watch request has succeeded.
    Unknown,
    /// The watch runs but has not delivered the pod: the API server has no pod of that
    /// name in the namespace (so far).
    Absent,
    /// The latest state.
    Pod(Arc<Pod>),
    /// The pod was deleted.
    Gone,
    /// The watch failed for good.
    Failed(ErrorKind, String),
}

/// Where the next watch request resumes, and how the last ones went.
struct Resume {
    rv: String,
    failures: u32,
    backoff: Duration,
}

/// The first backoff after a failure (doubling up to 5 s).
const BACKOFF_START: Duration = Duration::from_millis(100);

/// Publish the events of one established watch until it ends (→ `true`: resume) or
/// `stop` fires (→ `false`).
async fn follow<S>(stream: S, tx: &watch::Sender<View>, r: &mut Resume, stop: &CancellationToken) -> bool
where
    S: futures::Stream<Item = Result<WatchEvent<Pod>, kube::Error>> + Send,
{
    tx.send_if_modified(|v| {
        let first = matches!(v, View::Unknown);
        if first {
            *v = View::Absent;
        }
        first
    });
    let mut stream = std::pin::pin!(stream);
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return false,
            n = stream.try_next() => n,
        };
        match next {
            Ok(Some(WatchEvent::Added(p) | WatchEvent::Modified(p))) => {
                r.failures = 0;
                r.backoff = BACKOFF_START;
                r.rv = p.metadata.resource_version.clone().unwrap_or_default();
                let _ = tx.send(View::Pod(Arc::new(p)));
            }
            Ok(Some(WatchEvent::Deleted(p))) => {
                r.rv = p.metadata.resource_version.clone().unwrap_or_default();
                let _ = tx.send(View::Gone);
            }
            Ok(Some(WatchEvent::Bookmark(b))) => r.rv = b.metadata.resource_version,
            Ok(Some(WatchEvent::Error(s))) if s.code == 410 => {
                tracing::info!(resource_version = %r.rv, "watch expired (410); re-listing");
                r.rv.clear();
                return true;
            }
            Ok(Some(WatchEvent::Error(s))) => {
                tracing::warn!(code = s.code, message = %s.message, "watch error event; restarting the watch");
                return true;
            }
            Ok(None) => return true,
            Err(e) => {
                tracing::debug!(error = %argoexec_kube::chain(&e), "watch stream failed; resuming");
                r.failures += 1;
                return true;
            }
        }
    }
}

/// Run the watch until `stop` fires, publishing into `tx`.
pub async fn run(
    api: Api<Pod>,
    name: String,
    server: String,
    tx: watch::Sender<View>,
    stop: CancellationToken,
) {
    let wp = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(WATCH_TIMEOUT_SECS);
    let mut r = Resume {
        rv: String::new(),
        failures: 0,
        backoff: BACKOFF_START,
    };
    let mut requests = 0u64;
    loop {
        requests += 1;
        tracing::debug!(resource_version = %r.rv, requests, "watching the pod");
        let started = tokio::select! {
            () = stop.cancelled() => return,
            s = api.watch(&wp, &r.rv) => s,
        };
        match started {
            Ok(stream) => {
                if !follow(stream, &tx, &mut r, &stop).await {
                    return;
                }
            }
            Err(e) => {
                let (kind, mut message) = argoexec_kube::client::describe(&e, &server, "watch pods");
                if kind == ErrorKind::Denied || kind == ErrorKind::Fatal || r.failures >= MAX_FAILURES {
                    if kind == ErrorKind::Denied {
                        message.push_str(" (the k8sapi executor needs `pods: watch` on its own pod; see docs/backends/k8sapi.md)");
                    }
                    let _ = tx.send(View::Failed(kind, message));
                    return;
                }
                r.failures += 1;
                tracing::debug!(%message, failures = r.failures, "watch request failed; retrying");
            }
        }
        if r.failures > 0 {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(r.backoff) => {}
            }
            r.backoff = (r.backoff * 2).min(Duration::from_secs(5));
        }
    }
}
