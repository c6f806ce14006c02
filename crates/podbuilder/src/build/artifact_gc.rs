//! Artifact garbage collection: the `WorkflowArtifactGCTask` and the GC pod a controller
//! creates when a workflow's artifacts with strategy `OnWorkflowCompletion` or
//! `OnWorkflowDeletion` are to be deleted (AW@v4.1.2 `workflow/controller/artifact_gc.go`;
//! contract §1.5).
//!
//! - One pod per (strategy, service account, pod labels, pod annotations) group, named
//!   `<wf>-artgc-<wfcomp|wfdel>-<fnv32a(sa, sorted labels, sorted annotations)>`, and one
//!   task `<pod>-0` labelled `workflows.argoproj.io/artifact-gc-pod=<fnv32a(pod)>`, owned by
//!   the Workflow; the pod is owned by its task (so it needs the task's UID: create the task
//!   first).
//! - The pod's `main` runs the executor image's entrypoint with `artifact delete` and the log
//!   options of the version (v3.5: `--loglevel` only), 50m/32Mi requests, 100m/64Mi limits,
//!   `MinimalCtrSC` (v3.5: without the seccomp profile) and from v3.7 `MinimalPodSC`; the
//!   Secret volumes of every archive location and artifact are mounted on main.
//! - Env: `ARGO_ARTIFACT_POD_NAME` (the label value) always; from v4.0 also `ARGO_POD_NAME`,
//!   `ARGO_TEMPLATE={}`, `ARGO_DEADLINE` and `ARGO_ARTIFACT_PLUGIN_NAMES` (empty: plugin
//!   sidecars are issue 21).
//! - `artifactGC.podSpecPatch` is applied to the spec before the service account is set.
//! - v3.3 has no artifact GC: asking for it is an error.

use std::collections::BTreeMap;

use argoexec_core::ArgoVersion;
use argoexec_core::artifact_gc::{
    API_VERSION, ArtifactGcSpec, ArtifactNodeSpec, GC_POD_ENV, GC_POD_LABEL, GC_STRATEGY_ANNOTATION, KIND,
    WorkflowArtifactGCTask, fnv32a, pod_label_value,
};
use argoexec_core::template::{MAIN, Outputs, Template};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::json;

use super::{BuildError, BuildOptions, WorkflowMeta, workflow_owner};

/// When the artifacts are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcStrategy {
    /// `OnWorkflowCompletion` (`wfcomp`).
    OnWorkflowCompletion,
    /// `OnWorkflowDeletion` (`wfdel`).
    OnWorkflowDeletion,
}

impl GcStrategy {
    /// Argo's name of the strategy.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OnWorkflowCompletion => "OnWorkflowCompletion",
            Self::OnWorkflowDeletion => "OnWorkflowDeletion",
        }
    }

    fn abbreviation(self) -> &'static str {
        match self {
            Self::OnWorkflowCompletion => "wfcomp",
            Self::OnWorkflowDeletion => "wfdel",
        }
    }
}

/// What one GC pod runs as (`artifactGC.serviceAccountName` and `podMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcPodInfo {
    /// The service account, when set.
    pub service_account: Option<String>,
    /// Extra pod labels.
    pub labels: BTreeMap<String, String>,
    /// Extra pod annotations.
    pub annotations: BTreeMap<String, String>,
    /// `artifactGC.podSpecPatch` (not part of the pod name's hash, as in Argo).
    pub pod_spec_patch: Option<String>,
}

/// The GC pod's name for `strategy` and `info` (Argo's `artGCPodName`).
pub fn gc_pod_name(wf: &str, strategy: GcStrategy, info: &GcPodInfo) -> String {
    let mut text = info.service_account.clone().unwrap_or_default();
    for (k, v) in info.labels.iter().chain(info.annotations.iter()) {
        text.push_str(k);
        text.push_str(v);
    }
    format!("{wf}-artgc-{}-{}", strategy.abbreviation(), fnv32a(&text))
}

/// The task listing `nodes`' artifacts for the GC pod `pod_name`.
pub fn gc_task(
    wf: &WorkflowMeta,
    pod_name: &str,
    nodes: BTreeMap<String, ArtifactNodeSpec>,
) -> WorkflowArtifactGCTask {
    WorkflowArtifactGCTask {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        metadata: json!({
            "name": format!("{pod_name}-0"),
            "namespace": wf.namespace,
            "labels": {GC_POD_LABEL: pod_label_value(pod_name)},
            "ownerReferences": [workflow_owner(wf)],
        }),
        spec: ArtifactGcSpec {
            artifacts_by_node: nodes,
        },
        status: Default::default(),
    }
}

/// The GC pod deleting what `task` lists; `task_uid` is the created task's UID.
///
/// # Errors
/// [`BuildError::BadValue`] for v3.3, which has no artifact GC.
pub fn gc_pod(
    wf: &WorkflowMeta,
    strategy: GcStrategy,
    info: &GcPodInfo,
    task: &WorkflowArtifactGCTask,
    task_uid: &str,
    opts: &BuildOptions,
) -> Result<core::Pod, BuildError> {
    let version = opts.argo_version;
    if version == ArgoVersion::V3_3 {
        return Err(BuildError::BadValue {
            what: "artifactGC".into(),
            message: "Argo v3.3 has no artifact garbage collection (v3.4+)".into(),
        });
    }
    let pod_name = gc_pod_name(&wf.name, strategy, info);
    let (volumes, mounts) = super::volumes::secret_volumes(&credentials_of(task));
    let mut labels = BTreeMap::from([
        ("workflows.argoproj.io/workflow".to_string(), wf.name.clone()),
        (
            "workflows.argoproj.io/component".to_string(),
            "artifact-gc".to_string(),
        ),
        ("workflows.argoproj.io/completed".to_string(), "false".to_string()),
    ]);
    labels.extend(info.labels.clone());
    if let Some(id) = &opts.instance_id {
        // Argo's oddity: the key is the variable's name, not `controller-instanceid`.
        labels.insert("ARGO_INSTANCE_ID".into(), id.clone());
    }
    let mut annotations =
        BTreeMap::from([(GC_STRATEGY_ANNOTATION.to_string(), strategy.as_str().to_string())]);
    annotations.extend(info.annotations.clone());
    let owner = OwnerReference {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        name: task.name().into(),
        uid: task_uid.into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let mut spec = core::PodSpec {
        containers: vec![main(&pod_name, &mounts, opts)],
        volumes: (!volumes.is_empty()).then_some(volumes),
        security_context: (version >= ArgoVersion::V3_7).then(minimal_pod_sc),
        automount_service_account_token: Some(true),
        restart_policy: Some("Never".into()),
        ..Default::default()
    };
    if let Some(text) = &info.pod_spec_patch {
        let mut value: serde_json::Value = super::convert("artifact GC pod spec", &spec)?;
        super::patch::apply(&mut value, text, "artifactGC.podSpecPatch")?;
        spec = super::convert("artifact GC pod spec after podSpecPatch", value)?;
    }
    // As Argo: the service account is set after the patch, so the patch cannot undo it.
    if info.service_account.is_some() {
        spec.service_account_name = info.service_account.clone();
    }
    Ok(core::Pod {
        metadata: ObjectMeta {
            name: Some(pod_name.clone()),
            namespace: Some(wf.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// The locations whose secrets the pod mounts, as a template the volume pass reads.
fn credentials_of(task: &WorkflowArtifactGCTask) -> Template {
    let mut t = Template::default();
    let mut outputs = Outputs::default();
    for node in task.spec.artifacts_by_node.values() {
        if let Some(loc) = &node.archive_location {
            // Each node may have its own archive location: keep them all as artifacts.
            outputs.artifacts.push(argoexec_core::template::Artifact {
                location: loc.clone(),
                ..Default::default()
            });
        }
        outputs.artifacts.extend(node.artifacts.values().cloned());
    }
    t.outputs = outputs;
    t
}

fn main(pod_name: &str, mounts: &[core::VolumeMount], opts: &BuildOptions) -> core::Container {
    let version = opts.argo_version;
    let env = |name: &str, value: &str| core::EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    };
    let mut e = Vec::new();
    if version >= ArgoVersion::V4_0 {
        e.push(core::EnvVar {
            name: "ARGO_POD_NAME".into(),
            value: None,
            value_from: Some(core::EnvVarSource {
                field_ref: Some(core::ObjectFieldSelector {
                    api_version: Some("v1".into()),
                    field_path: "metadata.name".into(),
                }),
                ..Default::default()
            }),
        });
        e.push(env("ARGO_TEMPLATE", "{}"));
        e.push(env("ARGO_DEADLINE", &opts.deadline));
    }
    e.push(env(GC_POD_ENV, &pod_label_value(pod_name)));
    if version >= ArgoVersion::V4_0 {
        e.push(env("ARGO_ARTIFACT_PLUGIN_NAMES", ""));
    }
    let mut args = vec!["artifact".to_string(), "delete".to_string()];
    if version >= ArgoVersion::V3_7 {
        args.extend(super::containers::log_opts_of(version, opts));
    } else {
        // v3.5 passed the log level alone (v3.6 switched to getExecutorLogOpts).
        args.extend(["--loglevel".to_string(), opts.log_level.clone()]);
    }
    let q = |s: &str| Quantity(s.into());
    let mut sc = super::resource::minimal_sc(version, true);
    // v3.4/v3.5's GC container already set `privileged: false` (no seccomp profile yet).
    sc.privileged = Some(false);
    core::Container {
        name: MAIN.into(),
        image: Some(opts.executor_image.clone()),
        args: Some(args),
        env: Some(e),
        security_context: Some(sc),
        resources: Some(core::ResourceRequirements {
            limits: Some(BTreeMap::from([
                ("cpu".into(), q("100m")),
                ("memory".into(), q("64Mi")),
            ])),
            requests: Some(BTreeMap::from([
                ("cpu".into(), q("50m")),
                ("memory".into(), q("32Mi")),
            ])),
            ..Default::default()
        }),
        volume_mounts: (!mounts.is_empty()).then(|| mounts.to_vec()),
        ..Default::default()
    }
}

/// Argo's `MinimalPodSC` (v3.6+): non-root 8737 with the runtime's seccomp profile.
pub(crate) fn minimal_pod_sc() -> core::PodSecurityContext {
    core::PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(8737),
        seccomp_profile: Some(core::SeccompProfile {
            type_: "RuntimeDefault".into(),
            localhost_profile: None,
        }),
        ..Default::default()
    }
}
