//! [`Shared`]: the state of one pod that its handle ([`crate::PodRun`]) and its lifecycle
//! task share, and [`StopReason`], why a pod was stopped before its containers ended.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::objects::PodObjects;
use crate::volumes::HostVolume;

/// State shared by the handle and the pod's tasks.
pub(crate) struct Shared {
    pub runtime: std::sync::Arc<dyn crate::runtime::ContainerRuntime>,
    pub node_name: String,
    pub node_label: String,
    pub pod: Pod,
    pub pod_dir: PathBuf,
    /// The node's directory `pod_dir` is in, held until the pod is cleaned up
    /// ([`crate::leftovers`]).
    pub home: Mutex<Option<std::sync::Arc<crate::owned_dir::OwnedDir>>>,
    pub volumes: HashMap<String, HostVolume>,
    /// The ConfigMaps and Secrets of the pod's namespace (env is read at container creation).
    pub objects: PodObjects,
    pub pause_id: String,
    pub status: watch::Sender<PodStatus>,
    /// `(container name, runtime ID)` of every container created, `POD` first.
    pub ids: Mutex<Vec<(String, String)>>,
    /// Fired to stop the pod (deletion, deadline, cleanup).
    pub stop: CancellationToken,
    /// Grace period requested with the stop, and why.
    pub stop_grace: Mutex<Option<(Duration, StopReason)>>,
    /// First restart back-off of an `OnFailure` pod's failed container.
    pub restart_backoff: Duration,
}

/// Why a pod was stopped before its containers ended by themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `activeDeadlineSeconds` passed (kubelet reason `DeadlineExceeded`).
    DeadlineExceeded,
    /// A caller stopped it (a pod deletion).
    Deleted,
    /// Evicted as under node pressure (kubelet reason `Evicted`, with [`EVICTED_MESSAGE`]).
    Evicted,
    /// A container could not be created or started (the engine refused it, or its env
    /// names a missing ConfigMap or Secret): the others are stopped so the pod ends.
    CannotRun,
}

/// Kubernetes' default `terminationGracePeriodSeconds`.
const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// The pod message of an eviction, in the kubelet's wording for memory pressure.
pub const EVICTED_MESSAGE: &str =
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi. ";

impl Shared {
    /// IDs of every created container except the pause container.
    pub fn app_ids(&self) -> Vec<String> {
        let ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        ids.iter()
            .filter(|(n, _)| n != "POD")
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// The status `containerID` of runtime ID `id` (`<scheme>://<id>`; empty for none).
    pub fn status_id(&self, id: &str) -> String {
        if id.is_empty() {
            String::new()
        } else {
            format!("{}://{id}", self.runtime.scheme())
        }
    }

    /// Record a created container.
    pub fn record(&self, name: &str, id: &str) {
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((name.into(), id.into()));
    }

    /// Request a stop once; later requests keep the first reason.
    pub fn request_stop(&self, grace: Duration, reason: StopReason) {
        let mut g = self.stop_grace.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some((grace, reason));
        }
        drop(g);
        self.stop.cancel();
    }

    /// The stop request, if any.
    pub fn stop_request(&self) -> Option<(Duration, StopReason)> {
        *self.stop_grace.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pod's `terminationGracePeriodSeconds` (Kubernetes' default: 30 s).
    pub fn grace(&self) -> Duration {
        self.pod
            .spec
            .as_ref()
            .and_then(|p| p.termination_grace_period_seconds)
            .map_or(DEFAULT_GRACE, |g| Duration::from_secs(g.max(0).unsigned_abs()))
    }
}
