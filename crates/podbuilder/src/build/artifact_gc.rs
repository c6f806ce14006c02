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
//!   `ARGO_TEMPLATE={}`, `ARGO_DEADLINE` and `ARGO_ARTIFACT_PLUGIN_NAMES` (the plugin
//!   sidecars' names).
//! - Artifact plugins (v4.0+): when an artifact or archive location goes through a plugin, an
//!   `init` container (`argoexec init`, `ARGO_TEMPLATE={}`) installs the per-pod copy in
//!   `/var/run/argo`, and each plugin runs as a sidecar `artifact-plugin-<plugin>` in its own
//!   image, wrapped by the emissary (`/var/run/argo/argoexec emissary … -- <entrypoint>
//!   <socket>`), its socket volume shared with main, which stops them when done. Plugins
//!   sorted by name (Argo: Go map order).
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
    /// The config map's `artifactDrivers` (not part of the hash).
    pub artifact_drivers: Vec<crate::artifact_drivers::ArtifactDriver>,
    /// The config map's `images`, where a plugin image's entrypoint is found (not part of
    /// the hash).
    pub images: BTreeMap<String, crate::config::ImageEntry>,
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
    let plugins = plugin_parts(task, info, opts)?;
    let (mut volumes, mut mounts) = (volumes, mounts);
    volumes.extend(plugins.volumes);
    mounts.extend(plugins.mounts);
    let mut containers = plugins.sidecars;
    let mut main = main(&pod_name, &mounts, opts);
    if let Some(e) = main
        .env
        .as_mut()
        .and_then(|e| e.iter_mut().find(|v| v.name == "ARGO_ARTIFACT_PLUGIN_NAMES"))
    {
        e.value = Some(plugins.names.join(","));
    }
    containers.push(main);
    let mut spec = core::PodSpec {
        init_containers: plugins.init.map(|i| vec![i]),
        containers,
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

/// The plugin parts of a GC pod: nothing when no artifact goes through a plugin.
#[derive(Default)]
struct GcPlugins {
    init: Option<core::Container>,
    sidecars: Vec<core::Container>,
    names: Vec<String>,
    volumes: Vec<core::Volume>,
    mounts: Vec<core::VolumeMount>,
}

/// The plugins the task's artifacts (relocated onto their node's archive location) and archive
/// locations go through, sorted.
fn task_plugins(task: &WorkflowArtifactGCTask) -> std::collections::BTreeSet<String> {
    let name = |loc: &argoexec_core::template::ArtifactLocation| {
        Some(loc.extra.get("plugin")?.get("name")?.as_str()?.to_string()).filter(|n| !n.is_empty())
    };
    let mut out = std::collections::BTreeSet::new();
    for node in task.spec.artifacts_by_node.values() {
        out.extend(node.archive_location.as_ref().and_then(name));
        for art in node.artifacts.values() {
            let loc = art.location.relocate(node.archive_location.as_ref()).ok();
            out.extend(loc.as_ref().and_then(name));
        }
    }
    out
}

fn plugin_parts(
    task: &WorkflowArtifactGCTask,
    info: &GcPodInfo,
    opts: &BuildOptions,
) -> Result<GcPlugins, BuildError> {
    use super::volumes::{TMP_DIR, VAR_RUN_ARGO, empty_dir, mount};
    let plugins = task_plugins(task);
    if plugins.is_empty() || opts.argo_version < ArgoVersion::V4_0 {
        return Ok(GcPlugins::default());
    }
    let var_run = mount(VAR_RUN_ARGO, "/var/run/argo");
    let env = |name: &str, value: &str| super::env::env(name, value);
    let log_opts = super::containers::log_opts_of(opts.argo_version, opts);
    let mut parts = GcPlugins {
        volumes: vec![empty_dir(VAR_RUN_ARGO), empty_dir(TMP_DIR)],
        mounts: vec![var_run.clone()],
        ..Default::default()
    };
    let pod_env = || {
        vec![
            super::env::field_env("ARGO_POD_NAME", "metadata.name"),
            super::env::field_env("ARGO_POD_UID", "metadata.uid"),
        ]
    };
    let mut init_env = pod_env();
    init_env.extend([env("ARGO_TEMPLATE", "{}"), env("ARGO_DEADLINE", &opts.deadline)]);
    parts.init = Some(core::Container {
        name: argoexec_core::template::INIT.into(),
        image: Some(opts.executor_image.clone()),
        command: Some([vec!["argoexec".to_string(), "init".to_string()], log_opts.clone()].concat()),
        env: Some(init_env),
        volume_mounts: Some(vec![var_run.clone()]),
        ..Default::default()
    });
    for p in plugins {
        let d = info
            .artifact_drivers
            .iter()
            .find(|d| d.name == p)
            .ok_or_else(|| BuildError::NoArtifactDriver {
                plugin: p.clone(),
                known: info.artifact_drivers.iter().map(|d| d.name.clone()).collect(),
            })?;
        let name = format!("{}{p}", super::plugins::SIDECAR_PREFIX);
        let entry = info.images.get(&d.image).ok_or_else(|| BuildError::NoCommand {
            container: name.clone(),
            image: d.image.clone(),
        })?;
        let socket = mount(&name, &super::plugins::socket_dir(&p));
        let mut command = vec!["/var/run/argo/argoexec".to_string(), "emissary".to_string()];
        command.extend(log_opts.iter().cloned());
        command.push("--".into());
        command.extend(entry.command.iter().cloned());
        command.push(format!("{}/socket", super::plugins::socket_dir(&p)));
        let mut e = pod_env();
        e.push(env("ARGO_CONTAINER_NAME", &name));
        parts.sidecars.push(core::Container {
            name: name.clone(),
            image: Some(d.image.clone()),
            command: Some(command),
            env: Some(e),
            volume_mounts: Some(vec![socket.clone(), var_run.clone()]),
            ..Default::default()
        });
        parts.volumes.push(empty_dir(&name));
        parts.mounts.push(socket);
        parts.names.push(name);
    }
    Ok(parts)
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
