//! The pod builder (Argo's `workflowpod.go`): template + controller config + chosen executor
//! + Argo version → a Kubernetes Pod, and the `<pod>` ConfigMap of values too large for it.
//!
//! Each [`ArgoVersion`] is rendered as that controller line's newest patch does
//! (docs/compatibility.md has the table). The order of work follows Argo's:
//! 1. volumes: `var-run-argo`, `tmp-dir-argo` (v3.4+), the template's, the artifact
//!    repositories' Secrets, `input-artifacts`, `argo-staging` ([`volumes`]);
//! 2. containers: `init` (always since v3.4), then `wait` first among the containers, the
//!    main container(s), the sidecars ([`containers`]), each with the `ARGO_*` environment of
//!    its version ([`env`]); in v4.1's init-less layout no init and a `supervisor` in place
//!    of wait ([`initless`]);
//!    artifact plugins (v4.0+): `init-artifact-<plugin>` init containers and
//!    `artifact-plugin-<plugin>` sidecars with their socket volumes ([`plugins`]);
//! 3. pod metadata ([`metadata`]): the workflow, completed and instance labels,
//!    node-name/node-id and default-container annotations, the template's own metadata, the
//!    Workflow as the controlling owner;
//! 4. `podSpecPatch` (workflow's, then template's; [`patch`]);
//! 5. the per-container pass: `tmp-dir-argo` at `/tmp` (subPath = index) in executor-image
//!    containers, `var-run-argo`, the emissary command, `ARGO_TERMINATION_GRACE_PERIOD_SECONDS`
//!    when the pod sets a grace period (on wait only before v3.7);
//! 6. offloading (v3.6+, and argoexec-rs for older lines instead of failing with E2BIG): a
//!    template JSON above 131 072 bytes becomes `ARGO_TEMPLATE=offloaded` plus the ConfigMap
//!    key `ARGO_TEMPLATE`; the first user container whose args JSON is that long (v3.7+)
//!    gets `ARGO_CONTAINER_ARGS_FILE` and the key `ARGO_CONTAINER_ARGS_FILE` ([`offload`]).
//!
//! v3.3 alone offers the docker, kubelet, k8sapi and pns executors, with their extra parts:
//! docker the `docker-sock` hostPath in wait; kubelet `ARGO_KUBELET_*` (and the argoexec-rs
//! keys `kubeletServerName`, `kubeletCAFile`, `kubeletExec`); pns `shareProcessNamespace`
//! and `SYS_PTRACE` on wait.

pub mod agent;
pub mod artifact_gc;
mod containers;
pub mod data;
mod env;
mod error;
pub mod initless;
mod metadata;
mod offload;
mod patch;
pub mod plugins;
pub mod resource;
mod volumes;

use std::collections::BTreeMap;

use argoexec_core::argo_version::TEMPLATE_ENV_MAX;
use argoexec_core::template::{Container, MAIN, VolumeMount as TplMount};
use argoexec_core::{ArgoVersion, ExecutorKind, Template};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::config::ControllerConfig;
use crate::validate::validate;
pub use error::BuildError;
pub use offload::{CONFIG_MAP_MAX, config_map_name};

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
    /// `spec.podSpecPatch`.
    pub pod_spec_patch: Option<String>,
}

/// Progress reporting ticks (the controller's `ARGO_PROGRESS_PATCH_TICK_DURATION` and
/// `ARGO_PROGRESS_FILE_TICK_DURATION`, Go durations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressTicks {
    /// How often wait reports progress (default `1m0s`).
    pub patch: String,
    /// How often wait reads the progress file (default `3s`).
    pub file: String,
}

impl Default for ProgressTicks {
    fn default() -> Self {
        Self {
            patch: "1m0s".into(),
            file: "3s".into(),
        }
    }
}

/// Build-time options that are not in the config map.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Executor image when `executor.image` is unset.
    pub executor_image: String,
    /// `--loglevel` passed to init/wait/emissary.
    pub log_level: String,
    /// `--log-format` (v3.5+).
    pub log_format: String,
    /// `--gloglevel` (v3.7+).
    pub gloglevel: u32,
    /// Whether `outputs.result` is referenced (sets `ARGO_INCLUDE_SCRIPT_OUTPUT`).
    pub include_script_output: bool,
    /// Why this executor was chosen (annotation `workflows.argoproj.io/executor-reason`).
    pub executor_reason: Option<String>,
    /// The controller version whose pod to build.
    pub argo_version: ArgoVersion,
    /// Progress ticks; `None` disables progress (the controller's ticks set to 0).
    pub progress: Option<ProgressTicks>,
    /// `ARGO_DEADLINE` (RFC 3339); Go's zero time means none.
    pub deadline: String,
    /// The controller's instance ID (`instanceID`), when it has one.
    pub instance_id: Option<String>,
    /// The W3C `traceparent` of the controller's span (v4.1 puts it on every container).
    pub trace_parent: Option<String>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            executor_image: "argoexec:dev".into(),
            log_level: "info".into(),
            log_format: "text".into(),
            gloglevel: 0,
            include_script_output: true,
            executor_reason: None,
            argo_version: ArgoVersion::NEWEST,
            progress: Some(ProgressTicks::default()),
            deadline: "0001-01-01T00:00:00Z".into(),
            instance_id: None,
            trace_parent: None,
        }
    }
}

/// A built pod and the ConfigMap (`<pod>`) to create before it, when something was
/// offloaded.
#[derive(Debug, Clone)]
pub struct PodBuild {
    /// The pod.
    pub pod: core::Pod,
    /// The ConfigMap of offloaded values.
    pub config_map: Option<core::ConfigMap>,
}

/// Everything the parts of the builder read.
pub(crate) struct BuildCtx<'a> {
    pub(crate) wf: &'a WorkflowMeta,
    pub(crate) template: &'a Template,
    pub(crate) node_id: &'a str,
    pub(crate) config: &'a ControllerConfig,
    pub(crate) executor: ExecutorKind,
    pub(crate) opts: &'a BuildOptions,
    pub(crate) version: ArgoVersion,
    /// The config map's `executor` container (image, env, args, resources, …).
    pub(crate) exec_tpl: core::Container,
    pub(crate) exec_image: String,
    /// What `ARGO_TEMPLATE` holds.
    pub(crate) template_env: Option<env::TemplateEnv>,
    /// Tell wait its version (`ARGOEXEC_ARGO_VERSION`): a ≤ v3.5 pod whose template was
    /// offloaded looks like a v3.6+ one from inside.
    pub(crate) wait_version_hint: bool,
    /// The init-less layout ([`initless`]): asked for by the config map, v4.1, emissary.
    pub(crate) initless: bool,
}

pub(crate) fn convert<T: serde::de::DeserializeOwned>(
    what: &str,
    v: impl serde::Serialize,
) -> Result<T, BuildError> {
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

/// The template JSON as `ARGO_TEMPLATE` carries it: since v3.6 with `inputs.parameters`
/// cleared (AW#13761; the values are already substituted into the template).
fn template_json(template: &Template, version: ArgoVersion) -> String {
    if version.template_on_init_only() {
        let mut t = template.clone();
        t.inputs.parameters.clear();
        t.to_json()
    } else {
        template.to_json()
    }
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
) -> Result<PodBuild, BuildError> {
    let version = opts.argo_version;
    argoexec_core::names::check_template(template)?;
    if executor != ExecutorKind::Emissary && !version.has_legacy_executors() {
        return Err(BuildError::ExecutorNotInVersion { executor, version });
    }
    validate(template, executor)?;
    resource::validate(template)?;
    data::validate(template)?;
    let owned;
    let template = match resource::with_owner_reference(template, wf)? {
        Some(manifest) => {
            let mut t = template.clone();
            if let Some(r) = t.resource.as_mut() {
                r.manifest = Some(manifest);
            }
            owned = t;
            &owned
        }
        None => template,
    };
    let timed;
    let template = match plugins::with_timeouts(template, &config.artifact_drivers) {
        Some(t) => {
            timed = t;
            &timed
        }
        None => template,
    };
    // A resource or data template's main is the executor itself (named `main`, no user spec).
    let mains = match template.resource.is_some() || template.data.is_some() {
        true => vec![Container {
            name: MAIN.into(),
            ..Default::default()
        }],
        false => containers::main_containers(template)?,
    };
    let exec_tpl: core::Container = match &config.executor {
        Some(v) => convert("config executor", v)?,
        None => core::Container::default(),
    };
    let tpl_json = template_json(template, version);
    let offload_template = tpl_json.len() > TEMPLATE_ENV_MAX;
    let ctx = BuildCtx {
        wf,
        template,
        node_id,
        config,
        executor,
        opts,
        version,
        exec_image: exec_tpl
            .image
            .clone()
            .unwrap_or_else(|| opts.executor_image.clone()),
        exec_tpl,
        template_env: Some(if offload_template {
            env::TemplateEnv::Offloaded
        } else {
            env::TemplateEnv::Inline(tpl_json.clone())
        }),
        wait_version_hint: offload_template && !version.template_on_init_only(),
        initless: config.initless_pod && version >= ArgoVersion::V4_1 && executor == ExecutorKind::Emissary,
    };
    initless::check(&ctx)?;
    plugins::check(&ctx)?;

    let (init, pod_containers, secret_vols) = assemble_containers(&ctx, &mains)?;
    let pod_volumes = pod_volumes(&ctx, secret_vols)?;
    let mut pod = core::Pod {
        metadata: metadata::pod_metadata(&ctx, &mains)?,
        spec: Some(pod_spec(&ctx, init, pod_containers, pod_volumes)?),
        status: None,
    };
    apply_pod_spec_patches(&ctx, &mut pod)?;
    finish_containers(&ctx, &mut pod)?;
    let template_data = offload_template.then_some(tpl_json);
    let config_map = offload::offload(&ctx, &mut pod, template_data)?;
    if config.native_sidecar && executor == ExecutorKind::Emissary {
        make_aux_a_sidecar(&ctx, &mut pod);
    }
    Ok(PodBuild { pod, config_map })
}

/// The init container (if any) and the pod's containers in Argo's order — wait (or the
/// init-less supervisor), the mains, the sidecars — each locked down as the version does; and
/// the artifact repositories' Secret volumes they mount.
#[allow(clippy::type_complexity)]
fn assemble_containers(
    ctx: &BuildCtx<'_>,
    mains: &[Container],
) -> Result<(Vec<core::Container>, Vec<core::Container>, Vec<core::Volume>), BuildError> {
    let (ctx, template) = (ctx, ctx.template);
    let user_mounts: Vec<core::VolumeMount> = template
        .main_volume_mounts()
        .iter()
        .map(k8s_mount)
        .collect::<Result<_, _>>()?;
    let (secret_vols, secret_mounts) = volumes::secret_volumes(template);
    let mut main_ctrs = Vec::new();
    match (&template.resource, &template.data) {
        (Some(r), _) => main_ctrs.push(resource::main(ctx, r)),
        (None, Some(d)) => main_ctrs.push(data::main(ctx, d, &secret_mounts)),
        (None, None) => {
            for c in mains {
                main_ctrs.push(containers::main(ctx, c)?);
            }
        }
    }
    // Main's mounts as wait and mirroring sidecars see them (user, inputs, staging).
    let main_mounts = main_ctrs
        .iter()
        .find(|c| c.name == MAIN)
        .and_then(|c| c.volume_mounts.clone())
        .unwrap_or_else(|| user_mounts.clone());

    let mut pod_containers = Vec::new();
    if ctx.initless && initless::needs_aux(ctx) {
        pod_containers.push(initless::supervisor(
            ctx,
            &secret_mounts,
            &user_mounts,
            &main_mounts,
        ));
    } else if resource::needs_wait(ctx) {
        pod_containers.push(containers::wait(ctx, &secret_mounts, &main_mounts));
    }
    pod_containers.extend(main_ctrs);
    for (i, s) in template.sidecars.iter().enumerate() {
        pod_containers.push(containers::sidecar(ctx, i, s, &main_mounts)?);
    }
    let aux = initless::aux_name(ctx);
    if let Some(a) = pod_containers.iter_mut().find(|c| c.name == aux) {
        plugins::wire_aux(ctx, a);
        pod_containers.extend(plugins::sidecars(ctx, &user_mounts, &main_mounts)?);
    }
    let mut init = Vec::new();
    if containers::has_init(ctx) && !ctx.initless {
        init.push(containers::init(ctx, &secret_mounts, &user_mounts));
        init.extend(plugins::init_containers(ctx, &user_mounts)?);
    }
    for c in init.iter_mut().chain(pod_containers.iter_mut()) {
        resource::lock_down(ctx, c);
    }
    Ok((init, pod_containers, secret_vols))
}

/// The pod's volumes (without the offload volume, added when something is offloaded).
fn pod_volumes(ctx: &BuildCtx<'_>, secrets: Vec<core::Volume>) -> Result<Vec<core::Volume>, BuildError> {
    let t = ctx.template;
    let mut v = vec![volumes::empty_dir(volumes::VAR_RUN_ARGO)];
    if ctx.version.has_tmp_dir_volume() {
        v.push(volumes::empty_dir(volumes::TMP_DIR));
    }
    for (i, vol) in t.volumes.iter().enumerate() {
        v.push(convert(&format!("template volumes[{i}]"), vol)?);
    }
    if ctx.initless {
        v.push(initless::argo_bin_volume(ctx));
    }
    v.extend(secrets);
    v.extend(plugins::socket_volumes(ctx));
    if !t.inputs.artifacts.is_empty() {
        v.push(volumes::empty_dir(volumes::INPUT_ARTIFACTS));
    }
    if t.script.is_some() {
        v.push(volumes::empty_dir(volumes::STAGING));
    }
    // The socket is wait's; a resource pod without wait gets none.
    if ctx.executor == ExecutorKind::Docker && resource::needs_wait(ctx) {
        v.push(core::Volume {
            name: volumes::DOCKER_SOCK.into(),
            host_path: Some(core::HostPathVolumeSource {
                path: ctx.config.docker_sock_path.clone(),
                type_: Some("Socket".into()),
            }),
            ..Default::default()
        });
    }
    Ok(v)
}

/// The pod spec before the per-container pass.
fn pod_spec(
    ctx: &BuildCtx<'_>,
    init: Vec<core::Container>,
    containers: Vec<core::Container>,
    volumes: Vec<core::Volume>,
) -> Result<core::PodSpec, BuildError> {
    let template = ctx.template;
    Ok(core::PodSpec {
        restart_policy: Some("Never".into()),
        share_process_namespace: (ctx.executor == ExecutorKind::Pns).then_some(true),
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
        init_containers: Some(init).filter(|i| !i.is_empty()),
        containers,
        volumes: Some(volumes),
        ..Default::default()
    })
}

/// Apply the workflow's and then the template's `podSpecPatch`.
fn apply_pod_spec_patches(ctx: &BuildCtx<'_>, pod: &mut core::Pod) -> Result<(), BuildError> {
    let tpl_patch = ctx.template.extra.get("podSpecPatch").and_then(|v| v.as_str());
    let patches = [
        ("workflow spec.podSpecPatch", ctx.wf.pod_spec_patch.as_deref()),
        ("template podSpecPatch", tpl_patch),
    ];
    if patches.iter().all(|(_, p)| p.is_none()) {
        return Ok(());
    }
    let mut spec = serde_json::to_value(pod.spec.take()).map_err(|e| BuildError::BadValue {
        what: "pod spec".into(),
        message: e.to_string(),
    })?;
    for (what, text) in patches {
        if let Some(text) = text {
            patch::apply(&mut spec, text, what)?;
        }
    }
    pod.spec = Some(convert("pod spec after podSpecPatch", spec)?);
    Ok(())
}

/// The per-container pass (after `podSpecPatch`, as in Argo): `tmp-dir-argo`, `var-run-argo`,
/// the emissary command and the grace-period variable.
fn finish_containers(ctx: &BuildCtx<'_>, pod: &mut core::Pod) -> Result<(), BuildError> {
    let Some(spec) = pod.spec.as_mut() else {
        return Ok(());
    };
    let grace = spec.termination_grace_period_seconds;
    let aux = initless::aux_name(ctx);
    let has_aux = spec.containers.iter().any(|c| c.name == aux);
    for (i, k) in spec.containers.iter_mut().enumerate() {
        let is_wait = k.name == aux;
        let is_plugin = plugins::is_sidecar(&k.name);
        if !is_plugin {
            initless::decorate_user(ctx, k, has_aux);
        }
        let shares_outputs = plugins::shares_outputs_dir(ctx, &k.name, aux);
        let mounts = k.volume_mounts.get_or_insert_with(Vec::new);
        if ctx.version.has_tmp_dir_volume() && k.image.as_deref() == Some(ctx.exec_image.as_str()) {
            mounts.push(core::VolumeMount {
                sub_path: Some(i.to_string()),
                ..volumes::mount(volumes::TMP_DIR, "/tmp")
            });
        }
        if shares_outputs {
            mounts.push(core::VolumeMount {
                sub_path: Some("argo/outputs".into()),
                ..volumes::mount(volumes::TMP_DIR, "/tmp/argo/outputs")
            });
        }
        mounts.push(volumes::mount(volumes::VAR_RUN_ARGO, "/var/run/argo"));
        if !is_wait && !is_plugin && ctx.executor == ExecutorKind::Emissary {
            containers::wrap_for_emissary(ctx, k)?;
        }
        if let Some(g) = grace
            && (is_wait || ctx.version.grace_on_every_container())
        {
            k.env
                .get_or_insert_with(Vec::new)
                .push(env::env("ARGO_TERMINATION_GRACE_PERIOD_SECONDS", g.to_string()));
        }
    }
    Ok(())
}

/// `nativeSidecar` (argoexec-rs): the auxiliary container, once finished like the others,
/// moves to the end of the init containers with `restartPolicy: Always` and
/// [`argoexec_core::ready::NATIVE_SIDECAR_ENV`]; its `tmp-dir-argo` subPath keeps its index.
fn make_aux_a_sidecar(ctx: &BuildCtx<'_>, pod: &mut core::Pod) {
    let aux = initless::aux_name(ctx);
    let Some(spec) = pod.spec.as_mut() else { return };
    let Some(i) = spec.containers.iter().position(|c| c.name == aux) else {
        return;
    };
    let mut c = spec.containers.remove(i);
    c.restart_policy = Some("Always".into());
    c.env
        .get_or_insert_with(Vec::new)
        .push(env::env(argoexec_core::ready::NATIVE_SIDECAR_ENV, "true"));
    spec.init_containers.get_or_insert_with(Vec::new).push(c);
}

/// The template's main container(s) as written (names of plain/script mains filled in).
pub(crate) fn main_container_specs(t: &Template) -> Vec<Container> {
    containers::main_containers(t).unwrap_or_default()
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
