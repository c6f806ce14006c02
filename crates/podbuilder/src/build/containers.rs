//! The containers of a workflow pod: init and wait (the executor image), the main
//! container(s) and user sidecars, and the emissary wrapping of every user container.
//!
//! Commands (`getExecutorLogOpts`): init and wait run `argoexec <init|wait> --loglevel L`,
//! plus `--log-format F` (v3.5+) and `--gloglevel N` (v3.7+), followed by the config map's
//! `executor.args`; user containers become
//! `/var/run/argo/argoexec emissary [same options, v3.5+] -- <command…>`, the command looked
//! up in the config map's `images` when the template has none (Argo v3.5+ asks the
//! registry; this builder has no registry, so `images` is the only source).

use argoexec_core::ExecutorKind;
use argoexec_core::template::{Container, MAIN};
use k8s_openapi::api::core::v1 as core;

use super::env::{container_env, env, executor_env, field_env};
use super::volumes::{self, DOCKER_SOCK, INPUT_ARTIFACTS, STAGING, mount};
use super::{BuildCtx, BuildError, convert};

/// The log options the controller passes to every argoexec it starts, by version.
pub(crate) fn log_opts(ctx: &BuildCtx<'_>) -> Vec<String> {
    log_opts_of(ctx.version, ctx.opts)
}

/// The executor log options `version` passes (Argo's `getExecutorLogOpts`).
pub(crate) fn log_opts_of(version: argoexec_core::ArgoVersion, opts: &super::BuildOptions) -> Vec<String> {
    let mut o = vec!["--loglevel".to_string(), opts.log_level.clone()];
    if version.passes_log_format() {
        o.extend(["--log-format".to_string(), opts.log_format.clone()]);
    }
    if version.passes_gloglevel() {
        o.extend(["--gloglevel".to_string(), opts.gloglevel.to_string()]);
    }
    o
}

/// An executor-image container running `argoexec <sub>`.
pub(crate) fn executor_container(ctx: &BuildCtx<'_>, name: &str, sub: &str, init: bool) -> core::Container {
    let mut command = vec!["argoexec".to_string(), sub.to_string()];
    command.extend(log_opts(ctx));
    let mut e = executor_env(ctx);
    if name == argoexec_core::template::WAIT && ctx.version >= argoexec_core::ArgoVersion::V4_0 {
        e.push(env("ARGO_ARTIFACT_PLUGIN_NAMES", ""));
    }
    e.extend(container_env(ctx, name, init));
    core::Container {
        name: name.into(),
        image: Some(ctx.exec_image.clone()),
        image_pull_policy: ctx.exec_tpl.image_pull_policy.clone(),
        command: Some(command),
        args: ctx.exec_tpl.args.clone().filter(|a| !a.is_empty()),
        env: Some(e),
        resources: ctx.exec_tpl.resources.clone(),
        security_context: ctx.exec_tpl.security_context.clone(),
        ..Default::default()
    }
}

/// Whether the pod has Argo's `init` container: always since v3.4; in v3.3 only for input
/// artifacts, scripts and the emissary — and, in argoexec-rs, for kubelet and k8sapi, whose
/// exec'd kill uses the `/var/run/argo/argoexec` init installs (works in shell-less images).
pub(crate) fn has_init(ctx: &BuildCtx<'_>) -> bool {
    ctx.version > argoexec_core::ArgoVersion::V3_3
        || !ctx.template.inputs.artifacts.is_empty()
        || ctx.template.script.is_some()
        || matches!(
            ctx.executor,
            ExecutorKind::Emissary | ExecutorKind::Kubelet | ExecutorKind::K8sApi
        )
}

/// The `init` container; `user_mounts` are the template's own volume mounts, which init
/// sees under `/mainctrfs` when it has input artifacts to place on them.
pub(crate) fn init(
    ctx: &BuildCtx<'_>,
    secrets: &[core::VolumeMount],
    user_mounts: &[core::VolumeMount],
) -> core::Container {
    let mut c = executor_container(ctx, argoexec_core::template::INIT, "init", true);
    let mut m: Vec<core::VolumeMount> = secrets.to_vec();
    if !ctx.template.inputs.artifacts.is_empty() {
        m.push(mount(INPUT_ARTIFACTS, "/argo/inputs/artifacts"));
        m.extend(volumes::mirrored(user_mounts, false));
    }
    if ctx.template.script.is_some() {
        m.push(mount(STAGING, "/argo/staging"));
    }
    m.push(mount(volumes::VAR_RUN_ARGO, "/var/run/argo"));
    if matches!(ctx.template_env, Some(super::env::TemplateEnv::Offloaded)) {
        m.push(volumes::env_config_mount());
    }
    c.volume_mounts = Some(m);
    c
}

/// The `wait` container (its `tmp-dir-argo` and `var-run-argo` mounts come with the
/// per-container pass, [`super::finish_containers`]).
pub(crate) fn wait(
    ctx: &BuildCtx<'_>,
    secrets: &[core::VolumeMount],
    main_mounts: &[core::VolumeMount],
) -> core::Container {
    let mut c = executor_container(ctx, argoexec_core::template::WAIT, "wait", false);
    if ctx.wait_version_hint {
        c.env.get_or_insert_with(Vec::new).push(env(
            argoexec_core::argo_version::VERSION_ENV,
            ctx.version.as_str(),
        ));
    }
    let mut m: Vec<core::VolumeMount> = secrets.to_vec();
    m.extend(volumes::mirrored(main_mounts, true));
    if ctx.executor == ExecutorKind::Docker {
        m.push(core::VolumeMount {
            read_only: Some(true),
            ..mount(DOCKER_SOCK, "/var/run/docker.sock")
        });
    }
    c.volume_mounts = Some(m);
    if ctx.executor == ExecutorKind::Pns {
        let mut sc = c.security_context.clone().unwrap_or_default();
        let mut caps = sc.capabilities.clone().unwrap_or_default();
        caps.add
            .get_or_insert_with(Vec::new)
            .push("SYS_PTRACE".to_string());
        sc.capabilities = Some(caps);
        c.security_context = Some(sc);
    }
    c
}

/// A main container: the template's, with the input-artifact and staging mounts and the
/// `ARGO_*` environment after the user's own.
pub(crate) fn main(ctx: &BuildCtx<'_>, spec: &Container) -> Result<core::Container, BuildError> {
    let mut k: core::Container = convert(&format!("container {}", spec.name), spec)?;
    let mut mounts = k.volume_mounts.take().unwrap_or_default();
    mounts.extend(super::initless::input_mounts(ctx, &spec.name));
    if ctx.template.script.is_some() {
        mounts.push(mount(STAGING, "/argo/staging"));
        k.args
            .get_or_insert_with(Vec::new)
            .push("/argo/staging/script".into());
    }
    k.volume_mounts = Some(mounts);
    let mut e = k.env.take().unwrap_or_default();
    e.extend(container_env(ctx, &spec.name, false));
    k.env = Some(e);
    Ok(k)
}

/// A user sidecar; with `mirrorVolumeMounts` it gets main's mounts as they are by then.
pub(crate) fn sidecar(
    ctx: &BuildCtx<'_>,
    i: usize,
    spec: &argoexec_core::template::UserContainer,
    main_mounts: &[core::VolumeMount],
) -> Result<core::Container, BuildError> {
    let mut k: core::Container = convert(&format!("sidecars[{i}]"), &spec.container)?;
    let mut mounts = k.volume_mounts.take().unwrap_or_default();
    if spec.mirror_volume_mounts == Some(true) {
        mounts.extend(main_mounts.iter().cloned());
    }
    k.volume_mounts = Some(mounts);
    let mut e = k.env.take().unwrap_or_default();
    e.extend(container_env(ctx, &k.name, false));
    k.env = Some(e);
    Ok(k)
}

/// Rewrite a container's command to run under the emissary, looking it up in `images`.
pub(crate) fn wrap_for_emissary(ctx: &BuildCtx<'_>, k: &mut core::Container) -> Result<(), BuildError> {
    let image = k.image.clone().unwrap_or_default();
    let command = match k.command.take().filter(|c| !c.is_empty()) {
        Some(c) => c,
        None => {
            let entry = ctx
                .config
                .images
                .get(&image)
                .ok_or_else(|| BuildError::NoCommand {
                    container: k.name.clone(),
                    image: image.clone(),
                })?;
            if k.args.is_none() {
                k.args = entry.args.clone();
            }
            entry.command.clone()
        }
    };
    let wrapper = if ctx.initless {
        super::initless::ARGO_BIN_EXEC
    } else {
        "/var/run/argo/argoexec"
    };
    let mut wrapped = vec![wrapper.to_string(), "emissary".to_string()];
    if ctx.version.passes_log_format() {
        wrapped.extend(log_opts(ctx));
    }
    wrapped.push("--".into());
    wrapped.extend(command);
    k.command = Some(wrapped);
    Ok(())
}

/// v3.3 kubelet executor variables (plus the argoexec-rs keys of the config map).
pub(crate) fn kubelet_env(ctx: &BuildCtx<'_>) -> Vec<core::EnvVar> {
    if ctx.executor != ExecutorKind::Kubelet {
        return Vec::new();
    }
    let config = ctx.config;
    let mut e = vec![
        field_env("ARGO_KUBELET_HOST", "status.hostIP"),
        field_env("ARGO_KUBELET_NODE_NAME", "spec.nodeName"),
        env("ARGO_KUBELET_PORT", config.kubelet_port.to_string()),
        env("ARGO_KUBELET_INSECURE", config.kubelet_insecure.to_string()),
    ];
    for (name, v) in [
        ("ARGO_KUBELET_SERVER_NAME", &config.kubelet_server_name),
        ("ARGO_KUBELET_CA_FILE", &config.kubelet_ca_file),
        ("ARGOEXEC_KUBELET_EXEC", &config.kubelet_exec),
    ] {
        if let Some(v) = v {
            e.push(env(name, v.clone()));
        }
    }
    e
}

/// The template's main container(s), named.
pub(crate) fn main_containers(t: &argoexec_core::Template) -> Result<Vec<Container>, BuildError> {
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
