//! [`PodRun`]: the handle of one pod on the local node. Callers subscribe to its live
//! [`PodStatus`], wait for it to finish, stop it (like a pod deletion: TERM, grace, KILL),
//! read its volumes, and finally [`PodRun::cleanup`] it, which removes every container
//! (pause included) and every directory the node made for it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::NodeError;
use crate::lifecycle;
use crate::state::{Shared, StopReason};
use crate::status::is_terminal;

/// A pod running (or finished) on the local node.
pub struct PodRun {
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
    cleaned: bool,
}

impl PodRun {
    pub(crate) fn spawn(shared: Arc<Shared>) -> Self {
        let task = tokio::spawn(lifecycle::run(shared.clone()));
        Self {
            shared,
            task: Some(task),
            cleaned: false,
        }
    }

    /// The pod as the node runs it (UID, namespace, nodeName filled in).
    pub fn pod(&self) -> &Pod {
        &self.shared.pod
    }

    /// A subscription to the live status.
    pub fn status(&self) -> watch::Receiver<PodStatus> {
        self.shared.status.subscribe()
    }

    /// The current status.
    pub fn current(&self) -> PodStatus {
        self.shared.status.borrow().clone()
    }

    /// Wait until the pod is `Succeeded` or `Failed` and return that status.
    pub async fn finished(&self) -> PodStatus {
        let mut rx = self.status();
        match rx.wait_for(|s| is_terminal(s.phase.as_deref())).await {
            Ok(s) => s.clone(),
            Err(_) => self.current(),
        }
    }

    /// Stop the pod like a deletion: SIGTERM to every container, SIGKILL after `grace`.
    pub fn stop(&self, grace: Duration) {
        self.shared.request_stop(grace, StopReason::Deleted);
    }

    /// Evict the pod as the kubelet does under node pressure: every container is stopped
    /// with `grace`, and the pod ends `Failed` with reason `Evicted`.
    pub fn evict(&self, grace: Duration) {
        self.shared.request_stop(grace, StopReason::Evicted);
    }

    /// Send `signal` (e.g. `KILL`) to the PID 1 of container `name` (fault injection).
    ///
    /// # Errors
    /// `Invalid` when the container was never created; the runtime's refusal (not running).
    pub async fn signal(&self, name: &str, signal: &str) -> Result<(), NodeError> {
        let id = self.container_id(name).ok_or_else(|| NodeError::Invalid {
            pod: self.shared.pod.metadata.name.clone().unwrap_or_default(),
            message: format!("no container {name:?}"),
        })?;
        Ok(self.shared.runtime.signal(&id, signal).await?)
    }

    /// The host directory backing volume `name`.
    pub fn volume_path(&self, name: &str) -> Option<&Path> {
        self.shared.volumes.get(name).map(|v| v.path.as_path())
    }

    /// The runtime's ID of container `name` (`POD` for the pause container).
    pub fn container_id(&self, name: &str) -> Option<String> {
        let ids = self.shared.ids.lock().unwrap_or_else(|p| p.into_inner());
        ids.iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.clone())
    }

    /// The runtime's IDs of every container the node created for this pod, pause first.
    pub fn container_ids(&self) -> Vec<String> {
        let ids = self.shared.ids.lock().unwrap_or_else(|p| p.into_inner());
        ids.iter().map(|(_, id)| id.clone()).collect()
    }

    /// Stop the pod if it still runs (no grace), then remove every container and every
    /// directory the node made for it. Safe to call on a finished pod.
    ///
    /// # Errors
    /// The first host-directory removal failure (containers are removed regardless).
    pub async fn cleanup(mut self) -> Result<(), NodeError> {
        self.cleaned = true;
        if !is_terminal(self.current().phase.as_deref()) {
            self.shared.request_stop(Duration::ZERO, StopReason::Deleted);
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let ids: Vec<String> = {
            let ids = self.shared.ids.lock().unwrap_or_else(|p| p.into_inner());
            ids.iter().map(|(_, id)| id.clone()).collect()
        };
        self.shared.runtime.remove(&ids).await;
        crate::tmpfs::unmount_below(&self.shared.pod_dir);
        let removed = match std::fs::remove_dir_all(&self.shared.pod_dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(NodeError::io("remove pod directory", &self.shared.pod_dir, e)),
        };
        // The node's directory goes with its last pod.
        drop(self.shared.home.lock().unwrap_or_else(|p| p.into_inner()).take());
        removed
    }
}

impl Drop for PodRun {
    fn drop(&mut self) {
        if !self.cleaned {
            tracing::warn!(
                pod = self.shared.pod.metadata.name.as_deref().unwrap_or(""),
                "pod handle dropped without cleanup; its containers carry label io.argoexec-rs.node={}",
                self.shared.node_label
            );
        }
    }
}
