//! Results to the task set's status: every result since the last patch in one JSON merge
//! patch of `{"status":{"nodes":{…}}}` on the `status` subresource, once per patch period
//! (`ARGO_AGENT_PATCH_RATE`), as Argo's `patchWorker` (contract §1.4).
//!
//! A patch is retried on transient failures (5 attempts from 1 s, doubling, as Argo); when
//! those run out the results are kept for the next period. When the API refuses a patch for
//! good (403, 404, 422, too large), every pending result becomes an `Error` node saying so,
//! Argo's wording, so that the controller learns the task ran but its result was lost; that
//! smaller patch is tried next period.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use argoexec_core::task_set::{NodeResult, phase};
use argoexec_kube::retry::{Backoff, is_transient, retry};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use tokio::sync::mpsc;

/// Argo's backoff for the status patch: 5 attempts from 1 s, ×2, 10 % jitter.
pub const PATCH_BACKOFF: Backoff = Backoff {
    steps: 5,
    first: Duration::from_secs(1),
    factor: 2.0,
    jitter: 0.1,
    cap: Duration::from_secs(30),
};

/// Counters the agent's caller can read (the benchmark and the tests do).
#[derive(Debug, Default)]
pub struct Stats {
    /// Status patches the API accepted.
    pub patches: AtomicUsize,
    /// Results those patches carried.
    pub results: AtomicUsize,
    /// Results handed to the patcher so far.
    pub received: AtomicUsize,
    changed: tokio::sync::Notify,
}

impl Stats {
    /// `(patches, results)` so far.
    pub fn get(&self) -> (usize, usize) {
        (
            self.patches.load(Ordering::Relaxed),
            self.results.load(Ordering::Relaxed),
        )
    }

    /// Resolves once the patcher has received at least `n` results.
    pub async fn received_at_least(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            if self.received.load(Ordering::Acquire) >= n {
                return;
            }
            changed.await;
        }
    }
}

/// The batching patcher of one task set.
#[derive(Debug)]
pub struct Patcher {
    api: Api<DynamicObject>,
    name: String,
    rate: Duration,
    backoff: Backoff,
    pending: BTreeMap<String, NodeResult>,
    stats: Arc<Stats>,
}

impl Patcher {
    /// A patcher of task set `name` through `api`, every `rate`.
    pub fn new(api: Api<DynamicObject>, name: String, rate: Duration, stats: Arc<Stats>) -> Self {
        Self {
            api,
            name,
            rate,
            backoff: PATCH_BACKOFF,
            pending: BTreeMap::new(),
            stats,
        }
    }

    /// Take results from `rx` and patch them every period; when every sender is gone, one
    /// last patch of what is pending, then return.
    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<(String, NodeResult)>) {
        let mut tick = tokio::time::interval(self.rate);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                got = rx.recv() => match got {
                    Some((node, result)) => {
                        self.pending.insert(node, result);
                        self.stats.received.fetch_add(1, Ordering::AcqRel);
                        self.stats.changed.notify_waiters();
                    }
                    None => {
                        self.flush().await;
                        return;
                    }
                },
                _ = tick.tick() => self.flush().await,
            }
        }
    }

    /// Patch what is pending.
    async fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let patch = Patch::Merge(json!({"status": {"nodes": &self.pending}}));
        let pp = PatchParams::default();
        match retry(&self.backoff, || self.api.patch_status(&self.name, &pp, &patch)).await {
            Ok(_) => {
                tracing::info!(results = self.pending.len(), "task set status patched");
                self.stats.patches.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .results
                    .fetch_add(self.pending.len(), Ordering::Relaxed);
                self.pending.clear();
            }
            Err(e) if is_transient(&e) => {
                tracing::warn!(error = %e, results = self.pending.len(), "status patch failed; kept for the next period");
            }
            Err(e) => {
                let why = match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => argoexec_kube::chain(other),
                };
                tracing::error!(error = %why, results = self.pending.len(), "the API refused the status patch");
                for r in self.pending.values_mut() {
                    *r = NodeResult {
                        phase: phase::ERROR.into(),
                        message: format!(
                            "HTTP request completed successfully but an error occurred when patching its result: {why}"
                        ),
                        ..NodeResult::default()
                    };
                }
            }
        }
    }
}
