//! `argoexec run --artifact-gc`: once the step has ended, delete the output artifacts it
//! stored, as Argo's controller and its GC pod do (contract §1.5): a
//! `WorkflowArtifactGCTask` listing the step's artifacts is created on the run's node, then
//! the GC pod of the pod builder (`argoexec artifact delete` in the executor image, the
//! deploy kit's `artifact-gc.yaml` role bound to its service account, the locations'
//! Secrets mounted), and the per-artifact results it wrote to the task's status are read
//! back.
//!
//! The strategy is the workflow's `spec.artifactGC.strategy` when it is
//! `OnWorkflowDeletion` (only the pod's name and annotation show it), else
//! `OnWorkflowCompletion`; an artifact whose own `artifactGC.strategy` is `Never` is kept.
//! `spec.artifactGC.serviceAccountName`, `podMetadata` and `podSpecPatch` shape the pod as
//! they do in Argo.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use argoexec_core::artifact_gc::{ArtifactNodeSpec, WorkflowArtifactGCTask};
use argoexec_core::template::Artifact;
use argoexec_node_server::NodeServer;
use argoexec_podbuilder::build::artifact_gc::{GcPodInfo, GcStrategy, gc_pod, gc_pod_name, gc_task};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};

use super::session::Session;

/// What the step left for the collector.
pub struct GcInput<'a> {
    /// The run's plan (workflow, template, version).
    pub plan: &'a crate::commands::plan::Plan,
    /// The step's node ID (the key of `artifactsByNode`).
    pub node_id: &'a str,
    /// The output artifacts as the step reported them, with full locations.
    pub artifacts: &'a [Artifact],
    /// The executor image (the GC pod's image).
    pub executor_image: &'a str,
    /// The GC pod's `--loglevel`.
    pub log_level: &'a str,
    /// The host directory of the local repository, mounted at [`super::REPO_MOUNT`] in the
    /// pod as in the step's.
    pub repo: &'a Path,
}

/// One artifact's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactOutcome {
    /// The artifact's name.
    pub name: String,
    /// Deleted (or already absent).
    pub success: bool,
    /// Why not.
    pub error: Option<String>,
}

/// What the collection did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcOutcome {
    /// The GC pod's name (empty when there was nothing to collect).
    pub pod: String,
    /// The GC pod's final phase.
    pub phase: String,
    /// Per artifact, in name order.
    pub results: Vec<ArtifactOutcome>,
    /// Artifacts kept by `artifactGC.strategy: Never`.
    pub kept: Vec<String>,
}

impl GcOutcome {
    /// Artifacts not deleted (failed, or without a result although the pod ran).
    pub fn failures(&self) -> usize {
        self.results.iter().filter(|r| !r.success).count()
    }

    /// The JSON of `-o json` (`artifactGC`).
    pub fn to_json(&self) -> Value {
        let results: Vec<Value> = self
            .results
            .iter()
            .map(|r| json!({"name": r.name, "success": r.success, "error": r.error}))
            .collect();
        json!({"pod": self.pod, "phase": self.phase, "results": results, "kept": self.kept})
    }
}

/// Collect the step's artifacts on `server`, then shut it down (or leave its containers
/// when `keep`).
///
/// # Errors
/// Bad `spec.artifactGC`, the node refusing the task or the pod, the pod not starting.
pub async fn collect(server: NodeServer, input: &GcInput<'_>, keep: bool) -> anyhow::Result<GcOutcome> {
    // An artifact without a location (optional and not produced) has nothing to delete.
    let located: Vec<Artifact> = input
        .artifacts
        .iter()
        .filter(|a| a.location.has_location())
        .cloned()
        .collect();
    let (collected, kept) = split_never(input.plan, &located);
    if collected.is_empty() {
        server.shutdown().await;
        return Ok(GcOutcome {
            kept,
            ..Default::default()
        });
    }
    let settings = input.plan.wf.artifact_gc.clone().unwrap_or(Value::Null);
    let (strategy, mut info) = pod_info(&settings)?;
    info.artifact_drivers = input.plan.config.artifact_drivers.clone();
    info.images = input.plan.config.images.clone();
    let wf = &input.plan.wf.meta;
    let pod_name = gc_pod_name(&wf.name, strategy, &info);
    let node = ArtifactNodeSpec {
        archive_location: None,
        artifacts: collected.iter().map(|a| (a.name.clone(), (*a).clone())).collect(),
    };
    let task = gc_task(wf, &pod_name, BTreeMap::from([(input.node_id.to_string(), node)]));
    let client = super::objects::admin_client(&server).await?;
    let tasks: Api<DynamicObject> = Api::namespaced_with(client, &wf.namespace, &task_resource());
    let uid = create_task(&tasks, &task).await?;
    let opts = input.plan.build_options(input.executor_image, input.log_level)?;
    let mut pod = gc_pod(wf, strategy, &info, &task, &uid, &opts)?;
    // Main deletes local artifacts itself; a plugin sidecar deletes the objects it keeps there.
    let mut writers = vec!["main".to_string()];
    writers.extend(
        pod.spec
            .iter()
            .flat_map(|s| &s.containers)
            .map(|c| c.name.clone())
            .filter(|n| n.starts_with("artifact-plugin-")),
    );
    let writers: Vec<&str> = writers.iter().map(String::as_str).collect();
    super::mounts::attach_host_dir(
        &mut pod,
        super::mounts::REPO_VOLUME,
        input.repo,
        super::REPO_MOUNT,
        &writers,
    );
    let sa = info.service_account.as_deref().unwrap_or("default");
    server.rbac().load_str(
        &super::kit::artifact_gc_rbac(&wf.namespace, sa)?,
        "the deploy kit's artifact-gc role (deploy/rbac/artifact-gc.yaml)",
    )?;
    tracing::info!(pod = %pod_name, artifacts = collected.len(), "artifact GC pod");
    let session = Session::start_loaded(server, pod).await?;
    let status = session.finished().await;
    if let Some(m) = Session::start_failure(&status) {
        session.cleanup().await?;
        return Err(super::session::start_error(m));
    }
    let got = tasks
        .get(task.name())
        .await
        .with_context(|| format!("read back WorkflowArtifactGCTask {}", task.name()))?;
    if keep {
        session.keep();
    } else {
        session.cleanup().await?;
    }
    let written =
        &serde_json::to_value(&got)?["status"]["artifactResultsByNode"][input.node_id]["artifactResults"];
    Ok(GcOutcome {
        pod: pod_name,
        phase: status.phase.unwrap_or_default(),
        results: collected.iter().map(|a| result_of(written, &a.name)).collect(),
        kept,
    })
}

/// The artifacts to collect, and the names of those `artifactGC.strategy: Never` keeps.
pub(crate) fn split_never<'a>(
    plan: &crate::commands::plan::Plan,
    artifacts: &'a [Artifact],
) -> (Vec<&'a Artifact>, Vec<String>) {
    let raw = plan
        .wf
        .templates
        .iter()
        .find(|t| t["name"].as_str() == Some(plan.template.name.as_str()));
    let never = |name: &str| {
        raw.and_then(|t| t["outputs"]["artifacts"].as_array())
            .into_iter()
            .flatten()
            .any(|a| a["name"] == name && a["artifactGC"]["strategy"] == "Never")
    };
    let (kept, collected): (Vec<&Artifact>, Vec<&Artifact>) = artifacts.iter().partition(|a| never(&a.name));
    (collected, kept.into_iter().map(|a| a.name.clone()).collect())
}

/// The strategy and pod settings of `spec.artifactGC`.
pub(crate) fn pod_info(settings: &Value) -> anyhow::Result<(GcStrategy, GcPodInfo)> {
    let strategy = match settings["strategy"].as_str().unwrap_or("") {
        "OnWorkflowDeletion" => GcStrategy::OnWorkflowDeletion,
        "" | "OnWorkflowCompletion" | "Never" => GcStrategy::OnWorkflowCompletion,
        other => anyhow::bail!(
            "spec.artifactGC.strategy {other:?} is not OnWorkflowCompletion, OnWorkflowDeletion or Never"
        ),
    };
    let map = |v: &Value, what: &str| -> anyhow::Result<BTreeMap<String, String>> {
        if v.is_null() {
            return Ok(BTreeMap::new());
        }
        serde_json::from_value(v.clone()).with_context(|| format!("spec.artifactGC.podMetadata.{what}"))
    };
    let info = GcPodInfo {
        service_account: settings["serviceAccountName"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        labels: map(&settings["podMetadata"]["labels"], "labels")?,
        annotations: map(&settings["podMetadata"]["annotations"], "annotations")?,
        pod_spec_patch: settings["podSpecPatch"].as_str().map(str::to_string),
        ..Default::default()
    };
    Ok((strategy, info))
}

/// Create the task; its UID owns the pod.
async fn create_task(tasks: &Api<DynamicObject>, task: &WorkflowArtifactGCTask) -> anyhow::Result<String> {
    let obj: DynamicObject = serde_json::from_value(serde_json::to_value(task)?)?;
    let created = tasks
        .create(&PostParams::default(), &obj)
        .await
        .with_context(|| format!("create WorkflowArtifactGCTask {}", task.name()))?;
    created
        .metadata
        .uid
        .context("the node gave the WorkflowArtifactGCTask no UID")
}

/// One artifact's result as the GC pod wrote it; none written is a failure.
fn result_of(written: &Value, name: &str) -> ArtifactOutcome {
    let r = &written[name];
    if r.is_null() {
        return ArtifactOutcome {
            name: name.to_string(),
            success: false,
            error: Some("the GC pod wrote no result for this artifact".into()),
        };
    }
    ArtifactOutcome {
        name: name.to_string(),
        success: r["success"].as_bool().unwrap_or(false),
        error: r["error"].as_str().map(str::to_string),
    }
}

fn task_resource() -> ApiResource {
    use argoexec_core::artifact_gc::{API_VERSION, GROUP, KIND, PLURAL, VERSION};
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        plural: PLURAL.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_settings_come_from_spec_artifact_gc() {
        let (s, info) = pod_info(
            &json!({"strategy": "OnWorkflowDeletion", "serviceAccountName": "gc",
            "podMetadata": {"labels": {"a": "b"}}, "podSpecPatch": "nodeSelector: {x: y}"}),
        )
        .unwrap();
        assert_eq!(s, GcStrategy::OnWorkflowDeletion);
        assert_eq!(info.service_account.as_deref(), Some("gc"));
        assert_eq!(info.labels["a"], "b");
        assert!(info.pod_spec_patch.is_some());
        let (s, info) = pod_info(&Value::Null).unwrap();
        assert_eq!(s, GcStrategy::OnWorkflowCompletion);
        assert_eq!(info, GcPodInfo::default());
        assert!(pod_info(&json!({"strategy": "Sometimes"})).is_err());
        assert!(pod_info(&json!({"podMetadata": {"labels": ["x"]}})).is_err());
    }

    #[test]
    fn a_missing_result_is_a_failure() {
        let written = json!({"out": {"name": "out", "success": true}, "bad": {"name": "bad", "success": false, "error": "denied"}});
        assert!(result_of(&written, "out").success);
        assert_eq!(result_of(&written, "bad").error.as_deref(), Some("denied"));
        let none = result_of(&written, "gone");
        assert!(!none.success && none.error.is_some());
    }
}
