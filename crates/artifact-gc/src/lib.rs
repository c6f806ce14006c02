//! `argoexec-artifact-gc`: the work of `argoexec artifact delete`, the main container of
//! Argo's artifact-GC pods (contract §1.5; Argo v4.1.2 `cmd/argoexec/commands/artifact/delete.go`).
//!
//! [`run`] lists the `WorkflowArtifactGCTask`s of the pod's namespace labelled
//! [`GC_POD_LABEL`]`=<value of ARGO_ARTIFACT_POD_NAME>`, deletes every artifact of every node
//! ([`delete`]: relocated onto the node's archive location, driver built with credentials
//! from the mounted secrets, Argo's `retry.DefaultRetry` on failures that may pass), up to
//! [`Options::parallelism`] at once, and merge-patches `status.artifactResultsByNode` onto each
//! task's `status` subresource, one `{name, success, error}` per artifact.
//!
//! As Argo: an absent object is a success; a failed delete is `success: false` with the
//! error text and never stops the others; the command fails only when the API does (list or
//! patch) — the controller reads the outcome from the status, not from the exit code.
//! Unlike Argo, an artifact that cannot be relocated or has no driver (a location kind
//! without a driver, a plugin without a sidecar in the pod) is recorded as that artifact's
//! failure instead of aborting the whole pod before any status is written. Plugin artifacts
//! are deleted through the pod's `artifact-plugin-<plugin>` sidecars.

pub mod delete;

use std::sync::Arc;

use argoexec_artifacts::Settings;
use argoexec_core::artifact_gc::{
    ArtifactGcStatus, ArtifactResult, ArtifactResultNodeStatus, GC_POD_LABEL, GROUP, KIND, PLURAL, VERSION,
    WorkflowArtifactGCTask,
};
use argoexec_kube::retry::{Backoff, retry};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

/// Default number of artifacts deleted at once.
pub const DEFAULT_PARALLELISM: usize = 8;

/// Why the GC step failed as a whole (a per-artifact failure is a status entry instead).
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// Listing the tasks failed.
    #[error("cannot list {PLURAL} in namespace {namespace} with label {GC_POD_LABEL}={label}")]
    List {
        /// The namespace.
        namespace: String,
        /// The label value.
        label: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A listed task does not have Argo's shape.
    #[error("{PLURAL} {name:?} is not a WorkflowArtifactGCTask Argo would write")]
    Decode {
        /// The task's name.
        name: String,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// Writing a task's status failed.
    #[error("cannot patch the status of {PLURAL} {name:?} in namespace {namespace}")]
    Patch {
        /// The namespace.
        namespace: String,
        /// The task's name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// What to collect.
#[derive(Debug, Clone)]
pub struct Options {
    /// The GC pod's namespace (where its tasks are).
    pub namespace: String,
    /// The value of [`GC_POD_LABEL`] (`ARGO_ARTIFACT_POD_NAME`).
    pub label: String,
    /// Where secrets are mounted and how drivers transfer.
    pub settings: Arc<Settings>,
    /// Artifacts deleted at once (at least 1).
    pub parallelism: usize,
    /// The plugin sidecars of the pod (`ARGO_ARTIFACT_PLUGIN_NAMES`, set on every v4.0+ GC
    /// pod); `None` when not given (then a plugin's socket is waited for).
    pub plugin_sidecars: Option<Vec<String>>,
}

/// What was done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Tasks whose status was written.
    pub tasks: usize,
    /// Artifacts deleted (or already absent).
    pub deleted: usize,
    /// Artifacts that could not be deleted.
    pub failed: usize,
}

/// The task resource as the dynamic API needs it.
pub fn task_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: KIND.into(),
        plural: PLURAL.into(),
    }
}

/// List the tasks, delete their artifacts, write each task's status.
///
/// # Errors
/// [`GcError`] when the API fails; failed deletes are in the statuses instead.
pub async fn run(client: &kube::Client, opts: &Options) -> Result<Summary, GcError> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &opts.namespace, &task_resource());
    let selector = format!("{GC_POD_LABEL}={}", opts.label);
    let params = ListParams::default().labels(&selector);
    let list = retry(&Backoff::DEFAULT, || api.list(&params))
        .await
        .map_err(|source| GcError::List {
            namespace: opts.namespace.clone(),
            label: opts.label.clone(),
            source,
        })?;
    tracing::info!(tasks = list.items.len(), label = %opts.label, "artifact GC tasks found");
    let mut summary = Summary::default();
    for item in list.items {
        let name = item.metadata.name.clone().unwrap_or_default();
        let value = serde_json::to_value(&item).map_err(|source| GcError::Decode {
            name: name.clone(),
            source,
        })?;
        let task: WorkflowArtifactGCTask =
            serde_json::from_value(value).map_err(|source| GcError::Decode {
                name: name.clone(),
                source,
            })?;
        let status = collect(&task, opts).await;
        for node in status.artifact_results_by_node.values() {
            for r in node.artifact_results.values() {
                if r.success {
                    summary.deleted += 1;
                } else {
                    summary.failed += 1;
                }
            }
        }
        let patch = Patch::Merge(json!({ "status": status }));
        let pp = PatchParams::default();
        retry(&Backoff::DEFAULT, || api.patch_status(&name, &pp, &patch))
            .await
            .map_err(|source| GcError::Patch {
                namespace: opts.namespace.clone(),
                name: name.clone(),
                source,
            })?;
        tracing::info!(task = %name, "artifact GC task status written");
        summary.tasks += 1;
    }
    Ok(summary)
}

/// Delete every artifact of one task, `parallelism` at once; the status to write.
pub async fn collect(task: &WorkflowArtifactGCTask, opts: &Options) -> ArtifactGcStatus {
    let jobs = task.spec.artifacts_by_node.iter().flat_map(|(node, spec)| {
        spec.artifacts.iter().map(move |(key, art)| {
            let settings = opts.settings.clone();
            // Argo keys the results by the artifact's own name.
            let name = if art.name.is_empty() {
                key.clone()
            } else {
                art.name.clone()
            };
            async move {
                let sidecars = opts.plugin_sidecars.as_deref();
                let result =
                    delete::delete(&name, art, spec.archive_location.as_ref(), &settings, sidecars).await;
                (node.clone(), name, result)
            }
        })
    });
    let results: Vec<(String, String, ArtifactResult)> = futures::stream::iter(jobs)
        .buffer_unordered(opts.parallelism.max(1))
        .collect()
        .await;
    let mut status = ArtifactGcStatus::default();
    for node in task.spec.artifacts_by_node.keys() {
        status
            .artifact_results_by_node
            .insert(node.clone(), ArtifactResultNodeStatus::default());
    }
    for (node, key, result) in results {
        status
            .artifact_results_by_node
            .entry(node)
            .or_default()
            .artifact_results
            .insert(key, result);
    }
    status
}
