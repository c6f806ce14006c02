//! The pod builder (Argo's `workflowpod.go`): template + controller config + chosen executor
//! → a Kubernetes Pod.
//!
//! Layout (argo-executors.md §5.2): `init` first among the init containers; `wait` first
//! among the containers, then the main container(s), then sidecars. Every pod gets the
//! `var-run-argo` emptyDir (v3.3), mounted in every container. Per executor:
//! - docker: the `docker-sock` hostPath (`dockerSockPath`), mounted read-only in wait only;
//! - kubelet: `ARGO_KUBELET_HOST` from `status.hostIP`, `ARGO_KUBELET_PORT/INSECURE`, and
//!   `ARGO_KUBELET_NODE_NAME` from `spec.nodeName` (for certificates whose only SAN is the
//!   node name), plus `ARGO_KUBELET_SERVER_NAME` / `ARGO_KUBELET_CA_FILE` /
//!   `ARGOEXEC_KUBELET_EXEC` from the argoexec-rs keys `kubeletServerName` / `kubeletCAFile` /
//!   `kubeletExec`;
//! - pns: `shareProcessNamespace` and `SYS_PTRACE` on wait (no `SYS_CHROOT`: the pns
//!   backend reads through a held root handle instead of `chroot`);
//! - emissary: every non-wait container's command becomes
//!   `/var/run/argo/argoexec emissary -- <command…>`, the command looked up in `images` when
//!   the template has none.

use std::collections::BTreeMap;
use std::path::Path;

use argoexec_core::template::{Container, MAIN, VolumeMount as TplMount};
use argoexec_core::{ExecutorKind, Template};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::config::ControllerConfig;
use crate::validate::{ValidationError, validate};

/// The workflow a pod belongs to.
#[derive(Debug, Clone, Default)]
pub struct WorkflowMeta {
    /// Workflow name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Workflow UID (owner reference).
    pub uid: String,
    /// Workflow labels.
    pub labels: BTreeMap<String, String>,
}

/// Build-time options that are not in the config map.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Executor image when `executor.image` is unset.
    pub executor_image: String,
    /// `--loglevel` passed to init/wait/emissary.
    pub log_level: String,
    /// Whether `outputs.result` is referenced (sets `ARGO_INCLUDE_SCRIPT_OUTPUT`).
    pub include_script_output: bool,
    /// Why this executor was chosen (annotation `workflows.argoproj.io/executor-reason`).
    pub executor_reason: Option<String>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            executor_image: "argoexec:dev".into(),
            log_level: "info".into(),
            include_script_output: true,
            executor_reason: None,
        }
    }
}

/// Why a pod could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The template fails the executor's validation.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// A container name is not a DNS-1123 label (`../x`, `a/b`, `.`), is reserved (`init`,
    /// `wait`) or is used twice.
    #[error("{0}; Kubernetes refuses such a pod")]
    BadName(#[from] argoexec_core::names::InvalidName),
    /// The template's JSON is larger than a ConfigMap can hold (1 MiB), so it can neither be
    /// put in the environment nor offloaded.
    #[error(
        "the resolved template is {size} bytes of JSON, above the 1048576 bytes a ConfigMap can hold \
         (templates above 65536 bytes leave ARGO_TEMPLATE for a ConfigMap); shorten the script source or move \
         large inputs to artifacts"
    )]
    TemplateTooLarge {
        /// The JSON's length.
        size: usize,
    },
    /// The template has nothing to run.
    #[error("template {0:?} has no container, script or containerSet")]
    NoMain(String),
    /// Emissary needs a command and none is known.
    #[error(
        "container {container:?} (image {image:?}): the emissary executor needs its command; set `command` in the template \
         or list the image in the controller config map: images: {{{image:?}: {{command: [...]}}}}"
    )]
    NoCommand {
        /// Container name.
        container: String,
        /// Image.
        image: String,
    },
    /// A raw Kubernetes value in the template or config does not parse.
    #[error("{what}: {message}")]
    BadValue {
        /// Which value.
        what: String,
        /// The serde error.
        message: String,
    },
}

const VAR_RUN_ARGO: &str = "var-run-argo";
const INPUT_ARTIFACTS: &str = "input-artifacts";
const STAGING: &str = "argo-staging";
const DOCKER_SOCK: &str = "docker-sock";

fn env(name: &str, value: impl Into<String>) -> core::EnvVar {
    core::EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

fn field_env(name: &str, path: &str) -> core::EnvVar {
    core::EnvVar {
        name: name.into(),
        value_from: Some(core::EnvVarSource {
            field_ref: Some(core::ObjectFieldSelector {
                field_path: path.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str) -> core::VolumeMount {
    core::VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..Default::default()
    }
}

fn empty_dir(name: &str) -> core::Volume {
    core::Volume {
        name: name.into(),
        empty_dir: Some(Default::default()),
        ..Default::default()
    }
}

fn convert<T: serde::de::DeserializeOwned>(what: &str, v: impl serde::Serialize) -> Result<T, BuildError> {
    let value = serde_json::to_value(v).map_err(|e| BuildError::BadValue {
        what: what.into(),
        message: e.to_string(),
    })?;
    serde_json::from_value(value).map_err(|e| BuildError::BadValue {
        what: what.into(),
        message: e.to_string(),
    })
}

fn k8s_mount(m: &TplMount) -> Result<core::VolumeMount, BuildError> {
    convert(&format!("volumeMount {}", m.name), m)
}

/// Build the pod for `template` (already resolved) as node `node_id` of `wf`.
///
/// # Errors
/// [`BuildError`] naming the container or output to change.
pub fn build_pod(
    wf: &WorkflowMeta,
    template: &Template,
    node_id: &str,
    config: &ControllerConfig,
    executor: ExecutorKind,
    opts: &BuildOptions,
) -> Result<core::Pod, BuildError> {
    argoexec_core::names::check_template(template)?;
    validate(template, executor)?;
    let mains = main_containers(template)?;
    let tpl_json = template.to_json();
    // Too large for an environment variable: the template goes to a ConfigMap instead
    // (crate::offload), mounted in init, which writes /var/run/argo/template for the rest.
    let offloaded = crate::offload::is_offloaded(&tpl_json);
    if offloaded {
        crate::offload::check_size(&tpl_json)?;
    }
    let main_mounts: Vec<core::VolumeMount> = template
        .main_volume_mounts()
        .iter()
        .map(k8s_mount)
        .collect::<Result<_, _>>()?;
    let mirrors: Vec<core::VolumeMount> = main_mounts
        .iter()
        .map(|m| core::VolumeMount {
            mount_path: format!("/mainctrfs{}", m.mount_path),
            read_only: Some(false),
            ..m.clone()
        })
        .collect();

    let common_env = |name: &str| {
        let mut e = vec![env("ARGO_CONTAINER_NAME", name)];
        if !offloaded {
            e.push(env("ARGO_TEMPLATE", tpl_json.clone()));
        }
        e.push(env(
            "ARGO_INCLUDE_SCRIPT_OUTPUT",
            opts.include_script_output.to_string(),
        ));
        e.push(env("ARGO_DEADLINE", "0001-01-01T00:00:00Z"));
        e
    };
    let mut exec_env = vec![
        field_env("ARGO_POD_NAME", "metadata.name"),
        field_env("ARGO_POD_UID", "metadata.uid"),
        // argoexec-rs addition: Argo's executor learns its namespace from the in-cluster
        // service-account file; the downward API gives it to backends that never talk to
        // the API server (docker) and to pods without a token mount.
        field_env("ARGO_NAMESPACE", "metadata.namespace"),
        env("ARGO_CONTAINER_RUNTIME_EXECUTOR", executor.as_str()),
        env("ARGO_WORKFLOW_NAME", wf.name.clone()),
        env("ARGO_NODE_ID", node_id),
    ];
    if executor == ExecutorKind::Kubelet {
        exec_env.push(field_env("ARGO_KUBELET_HOST", "status.hostIP"));
        exec_env.push(field_env("ARGO_KUBELET_NODE_NAME", "spec.nodeName"));
        exec_env.push(env("ARGO_KUBELET_PORT", config.kubelet_port.to_string()));
        exec_env.push(env("ARGO_KUBELET_INSECURE", config.kubelet_insecure.to_string()));
        for (name, v) in [
            ("ARGO_KUBELET_SERVER_NAME", &config.kubelet_server_name),
            ("ARGO_KUBELET_CA_FILE", &config.kubelet_ca_file),
            ("ARGOEXEC_KUBELET_EXEC", &config.kubelet_exec),
        ] {
            if let Some(v) = v {
                exec_env.push(env(name, v.clone()));
            }
        }
    }
    let exec_tpl: core::Container = match &config.executor {
        Some(v) => convert("config executor", v)?,
        None => core::Container::default(),
    };
    let executor_container = |name: &str, sub: &str, mounts: Vec<core::VolumeMount>| {
        let mut e = common_env(name);
        e.extend(exec_env.iter().cloned());
        e.extend(exec_tpl.env.clone().unwrap_or_default());
        let mut args = vec![sub.to_string(), "--loglevel".into(), opts.log_level.clone()];
        args.extend(exec_tpl.args.clone().unwrap_or_default());
        core::Container {
            name: name.into(),
            image: Some(
                exec_tpl
                    .image
                    .clone()
                    .unwrap_or_else(|| opts.executor_image.clone()),
            ),
            image_pull_policy: exec_tpl.image_pull_policy.clone(),
            command: Some(vec!["argoexec".into()]),
            args: Some(args),
            env: Some(e),
            resources: exec_tpl.resources.clone(),
            security_context: exec_tpl.security_context.clone(),
            volume_mounts: Some(mounts),
            ..Default::default()
        }
    };

    // volumes
    let mut volumes = vec![empty_dir(VAR_RUN_ARGO)];
    if offloaded {
        volumes.push(crate::offload::volume(node_id));
    }
    let has_inputs = !template.inputs.artifacts.is_empty();
    if has_inputs {
        volumes.push(empty_dir(INPUT_ARTIFACTS));
    }
    if template.script.is_some() {
        volumes.push(empty_dir(STAGING));
    }
    for (i, v) in template.volumes.iter().enumerate() {
        volumes.push(convert(&format!("template volumes[{i}]"), v)?);
    }
    if executor == ExecutorKind::Docker {
        volumes.push(core::Volume {
            name: DOCKER_SOCK.into(),
            host_path: Some(core::HostPathVolumeSource {
                path: config.docker_sock_path.clone(),
                type_: Some("Socket".into()),
            }),
            ..Default::default()
        });
    }

    // Artifact repository credentials: every secret a location names, mounted read-only at
    // /argo/secret/<name> in init and wait (as Argo's controller does).
    let secret_mounts = secret_volumes(template, &mut volumes);

    // init
    let mut init_mounts = vec![mount(VAR_RUN_ARGO, "/var/run/argo")];
    if offloaded {
        init_mounts.push(crate::offload::mount());
    }
    init_mounts.extend(secret_mounts.iter().cloned());
    if has_inputs {
        init_mounts.push(mount(INPUT_ARTIFACTS, "/argo/inputs/artifacts"));
    }
    if template.script.is_some() {
        init_mounts.push(mount(STAGING, "/argo/staging"));
    }
    init_mounts.extend(mirrors.iter().cloned());
    let init = executor_container("init", "init", init_mounts);

    // wait
    let mut wait_mounts = vec![mount(VAR_RUN_ARGO, "/var/run/argo")];
    wait_mounts.extend(secret_mounts.iter().cloned());
    wait_mounts.extend(mirrors.iter().cloned());
    if executor == ExecutorKind::Docker {
        wait_mounts.push(core::VolumeMount {
            read_only: Some(true),
            ..mount(DOCKER_SOCK, "/var/run/docker.sock")
        });
    }
    // Supplied input artifacts outside user volumes are subPath mounts in main; wait sees
    // them under /mainctrfs too, so an output at an input's path is read from there.
    for a in &template.inputs.artifacts {
        let Some(p) = a.path.as_deref() else { continue };
        if template.overlapping_volume(Path::new(p)).is_none() && (a.is_supplied() || !a.optional) {
            wait_mounts.push(core::VolumeMount {
                sub_path: Some(a.name.clone()),
                ..mount(INPUT_ARTIFACTS, &format!("/mainctrfs{p}"))
            });
        }
    }
    let mut wait = executor_container("wait", "wait", wait_mounts);
    if executor == ExecutorKind::Pns {
        let mut sc = wait.security_context.clone().unwrap_or_default();
        let mut caps = sc.capabilities.clone().unwrap_or_default();
        caps.add
            .get_or_insert_with(Vec::new)
            .push("SYS_PTRACE".to_string());
        sc.capabilities = Some(caps);
        wait.security_context = Some(sc);
    }

    // main(s) and sidecars
    let mut containers = vec![wait];
    for c in &mains {
        let mut k: core::Container = convert(&format!("container {}", c.name), c)?;
        let mut mounts = k.volume_mounts.take().unwrap_or_default();
        mounts.push(mount(VAR_RUN_ARGO, "/var/run/argo"));
        if template.script.is_some() {
            mounts.push(mount(STAGING, "/argo/staging"));
            k.args
                .get_or_insert_with(Vec::new)
                .push("/argo/staging/script".into());
        }
        for a in &template.inputs.artifacts {
            let Some(p) = a.path.as_deref() else { continue };
            if template.overlapping_volume(Path::new(p)).is_none() && (a.is_supplied() || !a.optional) {
                mounts.push(core::VolumeMount {
                    sub_path: Some(a.name.clone()),
                    ..mount(INPUT_ARTIFACTS, p)
                });
            }
        }
        k.volume_mounts = Some(mounts);
        let mut e = common_env(&c.name);
        e.extend(k.env.take().unwrap_or_default());
        k.env = Some(e);
        containers.push(k);
    }
    for (i, s) in template.sidecars.iter().enumerate() {
        let mut k: core::Container = convert(&format!("sidecars[{i}]"), &s.container)?;
        let mut mounts = k.volume_mounts.take().unwrap_or_default();
        mounts.push(mount(VAR_RUN_ARGO, "/var/run/argo"));
        if s.mirror_volume_mounts == Some(true) {
            mounts.extend(main_mounts.iter().cloned());
        }
        k.volume_mounts = Some(mounts);
        let mut e = common_env(&k.name);
        e.extend(k.env.take().unwrap_or_default());
        k.env = Some(e);
        containers.push(k);
    }
    if executor == ExecutorKind::Emissary {
        for k in containers.iter_mut().skip(1) {
            wrap_for_emissary(k, config, &opts.log_level)?;
        }
    }

    // The template's `metadata` (Argo: labels and annotations for the pod, e.g. a
    // `workflows.argoproj.io/kill-cmd-<container>`); the controller's own keys win.
    let (mut labels, mut annotations) = template_metadata(template)?;
    labels.insert("workflows.argoproj.io/workflow".to_string(), wf.name.clone());
    labels.insert("workflows.argoproj.io/completed".to_string(), "false".to_string());
    annotations.insert(
        "workflows.argoproj.io/node-name".to_string(),
        format!("{}.{}", wf.name, template.name),
    );
    annotations.insert("workflows.argoproj.io/node-id".to_string(), node_id.to_string());
    annotations.insert(
        "kubectl.kubernetes.io/default-container".to_string(),
        MAIN.to_string(),
    );
    annotations.insert(
        "workflows.argoproj.io/executor".to_string(),
        executor.as_str().to_string(),
    );
    if let Some(r) = &opts.executor_reason {
        annotations.insert("workflows.argoproj.io/executor-reason".to_string(), r.clone());
    }
    Ok(core::Pod {
        metadata: ObjectMeta {
            name: Some(node_id.to_string()),
            namespace: Some(wf.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![crate::build::workflow_owner(wf)]),
            ..Default::default()
        },
        spec: Some(core::PodSpec {
            restart_policy: Some("Never".into()),
            share_process_namespace: (executor == ExecutorKind::Pns).then_some(true),
            active_deadline_seconds: template.active_deadline_seconds.as_ref().and_then(|v| match v {
                serde_json::Value::Number(n) => n.as_i64(),
                serde_json::Value::String(s) => s.parse().ok(),
                _ => None,
            }),
            // Argo: the template's `securityContext` (a PodSecurityContext) is the pod's.
            security_context: template
                .extra
                .get("securityContext")
                .map(|v| convert("template securityContext", v))
                .transpose()?,
            init_containers: Some(vec![init]),
            containers,
            volumes: Some(volumes),
            ..Default::default()
        }),
        status: None,
    })
}

/// A string map of pod metadata (labels or annotations).
type StringMap = BTreeMap<String, String>;

/// `metadata.labels` and `metadata.annotations` of the template.
fn template_metadata(template: &Template) -> Result<(StringMap, StringMap), BuildError> {
    let Some(meta) = template.extra.get("metadata") else {
        return Ok(Default::default());
    };
    let map = |field: &str| -> Result<StringMap, BuildError> {
        match meta.get(field) {
            None | Some(serde_json::Value::Null) => Ok(BTreeMap::new()),
            Some(v) => convert(&format!("template metadata.{field}"), v),
        }
    };
    Ok((map("labels")?, map("annotations")?))
}

/// The template's main container(s) as written (names of plain/script mains filled in).
/// Add a secret volume for each secret the template's artifact locations (inputs, outputs,
/// archive location) name; returns the read-only mounts at `/argo/secret/<name>`.
fn secret_volumes(template: &Template, volumes: &mut Vec<core::Volume>) -> Vec<core::VolumeMount> {
    let mut names = std::collections::BTreeSet::new();
    let locations = template
        .inputs
        .artifacts
        .iter()
        .chain(&template.outputs.artifacts)
        .map(|a| &a.location)
        .chain(template.archive_location.as_ref().map(|a| &a.location));
    for loc in locations {
        for sel in loc.secret_refs() {
            names.insert(sel.name.clone());
        }
    }
    let mut mounts = Vec::new();
    for name in names {
        let mut vol: String = format!("argo-secret-{}", name.replace('.', "-"))
            .chars()
            .take(63)
            .collect();
        while vol.ends_with('-') {
            vol.pop();
        }
        volumes.push(core::Volume {
            name: vol.clone(),
            secret: Some(core::SecretVolumeSource {
                secret_name: Some(name.clone()),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(core::VolumeMount {
            read_only: Some(true),
            ..mount(&vol, &format!("/argo/secret/{name}"))
        });
    }
    mounts
}

pub(crate) fn main_container_specs(t: &Template) -> Vec<Container> {
    main_containers(t).unwrap_or_default()
}

/// The template's main container(s), named.
fn main_containers(t: &Template) -> Result<Vec<Container>, BuildError> {
    if let Some(c) = &t.container {
        return Ok(vec![Container {
            name: MAIN.into(),
            ..c.clone()
        }]);
    }
    if let Some(s) = &t.script {
        return Ok(vec![Container {
            name: MAIN.into(),
            ..s.container.clone()
        }]);
    }
    match &t.container_set {
        Some(cs) if !cs.containers.is_empty() => Ok(cs
            .containers
            .iter()
            .map(|n| {
                let mut c = n.container.clone();
                c.volume_mounts.extend(cs.volume_mounts.iter().cloned());
                c
            })
            .collect()),
        _ => Err(BuildError::NoMain(t.name.clone())),
    }
}

/// Rewrite a container's command to run under the emissary, looking it up in `images`.
fn wrap_for_emissary(
    k: &mut core::Container,
    config: &ControllerConfig,
    level: &str,
) -> Result<(), BuildError> {
    let image = k.image.clone().unwrap_or_default();
    let command = match k.command.take().filter(|c| !c.is_empty()) {
        Some(c) => c,
        None => {
            let entry = config.images.get(&image).ok_or_else(|| BuildError::NoCommand {
                container: k.name.clone(),
                image: image.clone(),
            })?;
            if k.args.is_none() {
                k.args = entry.args.clone();
            }
            entry.command.clone()
        }
    };
    let mut wrapped: Vec<String> = ["/var/run/argo/argoexec", "emissary", "--loglevel", level, "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    wrapped.extend(command);
    k.command = Some(wrapped);
    Ok(())
}

/// The owner reference every object of a workflow's pod carries: the Workflow, as its
/// controller (so deleting the workflow deletes them).
pub(crate) fn workflow_owner(wf: &WorkflowMeta) -> OwnerReference {
    OwnerReference {
        api_version: "argoproj.io/v1alpha1".into(),
        kind: "Workflow".into(),
        name: wf.name.clone(),
        uid: wf.uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}
