//! The init-less pod layout (Argo v4.1 `initlessPod.enabled`, beta; AW#16154/AW#16161), as
//! `workflowpod.go`'s `initlessLayout` builds it:
//! * no init container; a `supervisor` container (`argoexec supervisor`, `ARGO_INITLESS_POD`,
//!   `ARGO_TEMPLATE`) takes the place of wait and prepares the pod first;
//! * the volume `argoexec-bin` is the executor image itself (`image: {reference,
//!   pullPolicy}`, Kubernetes image volumes, KEP-4639), mounted read-only at `/argo-bin` in
//!   every user container, whose command becomes `/argo-bin/bin/argoexec emissary … -- CMD`;
//! * with a supervisor, every user container gets `ARGO_WAIT_FOR_READY=true`; without one
//!   (data templates, resource templates that neither archive logs nor use `manifestFrom`)
//!   `main` gets `ARGO_TEMPLATE` itself;
//! * input artifacts: main mounts the whole `input-artifacts` volume at
//!   `/argo/inputs/artifacts` and its wrapper links each `path` there, in place of one
//!   subPath mount per artifact; an artifact path that contains a volume mount is refused
//!   (linking it would clear the volume).
//!
//! Only for v4.1 pods with the emissary executor; every other build keeps the legacy layout.
//! Artifact plugins get one sidecar per plugin, run from `/argo-bin` ([`super::plugins`]).

use argoexec_core::ready::{INITLESS_POD_ENV, WAIT_FOR_READY_ENV};
use argoexec_core::template::{MAIN, SUPERVISOR, WAIT};
use k8s_openapi::api::core::v1 as core;

use super::containers::executor_container;
use super::env::{TemplateEnv, env};
use super::volumes::{self, INPUT_ARTIFACTS, STAGING, mount};
use super::{BuildCtx, BuildError};

/// The image volume that carries the executor.
pub const ARGO_BIN_VOLUME: &str = "argoexec-bin";
/// Where user containers mount it.
pub const ARGO_BIN_MOUNT: &str = "/argo-bin";
/// The wrapper user containers run from it (the executor image's `/bin/argoexec`).
pub const ARGO_BIN_EXEC: &str = "/argo-bin/bin/argoexec";

/// Whether the pod has an auxiliary container (wait or supervisor): every template but data
/// templates and resource templates that neither archive logs nor (init-less) read their
/// manifest from an artifact.
pub(crate) fn needs_aux(ctx: &BuildCtx<'_>) -> bool {
    super::resource::needs_wait(ctx)
        || (ctx.initless
            && ctx
                .template
                .resource
                .as_ref()
                .is_some_and(|r| r.manifest_from.is_some()))
}

/// The auxiliary container's name: `supervisor` in this layout, else `wait` (a user
/// container may be called `supervisor` in the legacy layout).
pub(crate) fn aux_name(ctx: &BuildCtx<'_>) -> &'static str {
    if ctx.initless { SUPERVISOR } else { WAIT }
}

/// Refuse what this layout cannot run: a user container named `supervisor`, and an input
/// artifact whose path contains a volume mount (Argo's admission check).
pub(crate) fn check(ctx: &BuildCtx<'_>) -> Result<(), BuildError> {
    if !ctx.initless {
        return Ok(());
    }
    let t = ctx.template;
    let user_names = t
        .main_container_names()
        .into_iter()
        .chain(t.sidecars.iter().map(|s| s.container.name.clone()));
    for name in user_names {
        if name == SUPERVISOR {
            return Err(BuildError::BadName(argoexec_core::names::InvalidName {
                name,
                role: "a user container".into(),
                reason: "the name supervisor belongs to the init-less layout's own container".into(),
            }));
        }
    }
    for art in &ctx.template.inputs.artifacts {
        let Some(path) = art.path.as_deref() else { continue };
        if let Some(m) = ctx.template.volume_nested_under(std::path::Path::new(path)) {
            return Err(BuildError::InitlessInputOverVolume {
                artifact: art.name.clone(),
                path: path.into(),
                volume: m.name,
                mount_path: m.mount_path,
            });
        }
    }
    Ok(())
}

/// The `argoexec-bin` image volume: the executor image with the executor's pull policy.
pub(crate) fn argo_bin_volume(ctx: &BuildCtx<'_>) -> core::Volume {
    core::Volume {
        name: ARGO_BIN_VOLUME.into(),
        image: Some(core::ImageVolumeSource {
            reference: Some(ctx.exec_image.clone()),
            pull_policy: ctx.exec_tpl.image_pull_policy.clone().filter(|p| !p.is_empty()),
        }),
        ..Default::default()
    }
}

/// The input-artifact mounts of a user container: legacy, one subPath mount per artifact;
/// init-less, the whole volume at `/argo/inputs/artifacts` on `main` only.
pub(crate) fn input_mounts(ctx: &BuildCtx<'_>, name: &str) -> Vec<core::VolumeMount> {
    if !ctx.initless {
        return volumes::input_mounts(ctx.template);
    }
    if name == MAIN && !ctx.template.inputs.artifacts.is_empty() {
        vec![mount(INPUT_ARTIFACTS, "/argo/inputs/artifacts")]
    } else {
        Vec::new()
    }
}

/// The `supervisor` container (its `tmp-dir-argo` and `var-run-argo` mounts come with the
/// per-container pass).
pub(crate) fn supervisor(
    ctx: &BuildCtx<'_>,
    secrets: &[core::VolumeMount],
    user_mounts: &[core::VolumeMount],
    main_mounts: &[core::VolumeMount],
) -> core::Container {
    let mut c = executor_container(ctx, SUPERVISOR, "supervisor", false);
    let e = c.env.get_or_insert_with(Vec::new);
    // After the executor variables and before the container's own (Argo's order).
    let at = e
        .iter()
        .position(|v| v.name == "ARGO_CONTAINER_NAME")
        .unwrap_or(e.len());
    e.insert(at, env(INITLESS_POD_ENV, "true"));
    if let Some(t) = &ctx.template_env {
        e.push(env("ARGO_TEMPLATE", t.value()));
    }
    let mut m: Vec<core::VolumeMount> = secrets.to_vec();
    if !ctx.template.inputs.artifacts.is_empty() {
        m.push(mount(INPUT_ARTIFACTS, "/argo/inputs/artifacts"));
        m.extend(volumes::mirrored(user_mounts, false));
    }
    if ctx.template.script.is_some() {
        m.push(mount(STAGING, "/argo/staging"));
    }
    if ctx.template.resource.is_none() && ctx.template.data.is_none() {
        for mm in volumes::mirrored(main_mounts, true) {
            if !m.iter().any(|x| x.mount_path == mm.mount_path) {
                m.push(mm);
            }
        }
    }
    if matches!(ctx.template_env, Some(TemplateEnv::Offloaded)) {
        m.push(volumes::env_config_mount());
    }
    c.volume_mounts = Some(m);
    c
}

/// The init-less additions to a user container, in the per-container pass before
/// `tmp-dir-argo`/`var-run-argo` and the grace variable: the `/argo-bin` mount, and either
/// `ARGO_WAIT_FOR_READY` (the pod has a supervisor) or, on main, the template itself.
pub(crate) fn decorate_user(ctx: &BuildCtx<'_>, k: &mut core::Container, has_aux: bool) {
    if !ctx.initless || k.name == WAIT || k.name == SUPERVISOR {
        return;
    }
    let mounts = k.volume_mounts.get_or_insert_with(Vec::new);
    mounts.push(core::VolumeMount {
        read_only: Some(true),
        ..mount(ARGO_BIN_VOLUME, ARGO_BIN_MOUNT)
    });
    let offloaded = matches!(ctx.template_env, Some(TemplateEnv::Offloaded));
    if !has_aux && k.name == MAIN && offloaded {
        mounts.push(volumes::env_config_mount());
    }
    let e = k.env.get_or_insert_with(Vec::new);
    if has_aux {
        e.push(env(WAIT_FOR_READY_ENV, "true"));
    } else if k.name == MAIN
        && let Some(t) = &ctx.template_env
    {
        e.push(env("ARGO_TEMPLATE", t.value()));
    }
}
