//! Artifact plugins in the pod (Argo v4.0+; `AW@v4.1.2:workflow/controller/workflowpod.go`
//! `newInitContainers`, `artifactContainer`, `addArtifactPluginsLegacy`,
//! `addArtifactPluginsInitless`, `createArtifactVolumeMounts`).
//!
//! A plugin is a gRPC server in its own image on `/tmp/artifact-plugins/<plugin>/socket`,
//! started as `<binary> <subcommand> <log options> -- <image entrypoint> <socket>`:
//!
//! - **Legacy layout.** Per plugin of an input artifact an init container
//!   `init-artifact-<plugin>` (`/var/run/argo/argoexec artifact-plugin-init --plugin-name P`,
//!   the socket in its own `/tmp`) with init's input mounts and `ARGO_TEMPLATE`; per plugin of
//!   an output artifact (or of the archived logs) a sidecar `artifact-plugin-<plugin>`
//!   (`/var/run/argo/argoexec artifact-plugin-sidecar`) with the socket volume
//!   `artifact-plugin-<plugin>` (emptyDir), main's mounts under `/mainctrfs` and wait's
//!   `/tmp/argo/outputs`. Wait mounts every socket and gets the sidecars' names in
//!   `ARGO_ARTIFACT_PLUGIN_NAMES` (to stop them after saving).
//! - **Init-less layout (v4.1).** One sidecar per plugin of the inputs and outputs together,
//!   run from `/argo-bin/bin/argoexec`, with the `/argo-bin` mount and init's input mounts; the
//!   supervisor mounts the sockets and gets `ARGO_ARTIFACT_PLUGIN_NAMES` (the sidecars) and
//!   `ARGO_INPUT_ARTIFACT_PLUGIN_NAMES` (the plugins it loads inputs through).
//!
//! Where argoexec-rs differs, on purpose: the plugins are sorted by name (Argo iterates a Go
//! map, so its containers come in any order from one pod to the next); an artifact counts
//! for the plugin that actually serves it after relocation onto the archive location (Argo
//! also counts every artifact of a template whose archive location is a plugin, even one
//! with its own S3 location, and starts a plugin nobody calls); a plugin missing from
//! `artifactDrivers` is an error naming it (Argo logs it and builds a pod whose init
//! containers are empty entries). The plugin image's entrypoint comes from the config map's
//! `images` (Argo also asks the registry; this builder has no registry).

use std::collections::BTreeSet;

use argoexec_core::Template;
use argoexec_core::template::{Artifact, ArtifactLocation};
use k8s_openapi::api::core::v1 as core;

use super::containers::{executor_container, log_opts};
use super::env::env;
use super::volumes::{self, INPUT_ARTIFACTS, mount};
use super::{BuildCtx, BuildError};
use crate::artifact_drivers::ArtifactDriver;

/// The prefix of a plugin sidecar's name (and of its socket volume's).
pub const SIDECAR_PREFIX: &str = "artifact-plugin-";
/// The prefix of a legacy plugin init container's name.
pub const INIT_PREFIX: &str = "init-artifact-";
/// Where the legacy layout's containers find the per-pod copy.
const LEGACY_BINARY: &str = "/var/run/argo/argoexec";
/// Where the init-less layout's containers find it.
const INITLESS_BINARY: &str = "/argo-bin/bin/argoexec";

/// The directory of a plugin's socket.
pub fn socket_dir(plugin: &str) -> String {
    format!("/tmp/artifact-plugins/{plugin}")
}

/// Whether a container is a plugin sidecar.
pub fn is_sidecar(name: &str) -> bool {
    name.starts_with(SIDECAR_PREFIX)
}

fn socket_mount(plugin: &str) -> core::VolumeMount {
    mount(&format!("{SIDECAR_PREFIX}{plugin}"), &socket_dir(plugin))
}

/// The plugin serving `location`, if a plugin does.
fn location_plugin(location: &ArtifactLocation) -> Option<String> {
    let name = location.extra.get("plugin")?.get("name")?.as_str()?;
    Some(name.to_string()).filter(|n| !n.is_empty())
}

fn archive(t: &Template) -> Option<&ArtifactLocation> {
    t.archive_location.as_ref().map(|a| &a.location)
}

/// The plugin an artifact goes through: its own location relocated onto the archive location,
/// or, for an output without a location, the archive location itself.
fn artifact_plugin(t: &Template, art: &Artifact, output: bool) -> Option<String> {
    if art.location.has_location() {
        return location_plugin(&art.location.relocate(archive(t)).ok()?);
    }
    if output {
        archive(t).and_then(location_plugin)
    } else {
        None
    }
}

/// The plugins the template's input artifacts are loaded through, sorted.
pub(crate) fn input_plugins(t: &Template) -> Vec<String> {
    let set: BTreeSet<String> = t
        .inputs
        .artifacts
        .iter()
        .filter(|a| a.is_supplied())
        .filter_map(|a| artifact_plugin(t, a, false))
        .collect();
    set.into_iter().collect()
}

/// The plugins the template's output artifacts (and its archived logs) are saved through,
/// sorted. A resource or data template saves nothing through its own wait.
pub(crate) fn output_plugins(t: &Template) -> Vec<String> {
    if t.resource.is_some() || t.data.is_some() {
        return Vec::new();
    }
    let mut set: BTreeSet<String> = t
        .outputs
        .artifacts
        .iter()
        .filter_map(|a| artifact_plugin(t, a, true))
        .collect();
    if t.archive_logs()
        && let Some(p) = archive(t).and_then(location_plugin)
    {
        set.insert(p);
    }
    set.into_iter().collect()
}

/// Artifact plugins exist from Argo v4.0 on: an older controller's pod cannot have them.
///
/// # Errors
/// [`BuildError::PluginsNeedV4`] naming the first plugin.
pub(crate) fn check(ctx: &BuildCtx<'_>) -> Result<(), BuildError> {
    if ctx.version >= argoexec_core::ArgoVersion::V4_0 {
        return Ok(());
    }
    let t = ctx.template;
    match input_plugins(t).into_iter().chain(output_plugins(t)).next() {
        Some(plugin) => Err(BuildError::PluginsNeedV4 {
            plugin,
            version: ctx.version,
        }),
        None => Ok(()),
    }
}

/// The template with each plugin location's `connectionTimeoutSeconds` filled from its
/// driver's when unset or 0 (Argo's `populateAllPluginArtifactTimeouts`: the archive location,
/// the inputs and the outputs), so the executor reads it from the artifact. `None` when
/// nothing changes.
pub(crate) fn with_timeouts(t: &Template, drivers: &[ArtifactDriver]) -> Option<Template> {
    let fill = |loc: &mut ArtifactLocation| -> bool {
        let Some(p) = loc.extra.get_mut("plugin").and_then(|v| v.as_object_mut()) else {
            return false;
        };
        let unset = p
            .get("connectionTimeoutSeconds")
            .and_then(|v| v.as_i64())
            .is_none_or(|n| n == 0);
        let name = p.get("name").and_then(|v| v.as_str()).unwrap_or("");
        match drivers
            .iter()
            .find(|d| d.name == name)
            .and_then(|d| d.connection_timeout_seconds)
        {
            Some(secs) if unset && secs != 0 => {
                p.insert("connectionTimeoutSeconds".into(), secs.into());
                true
            }
            _ => false,
        }
    };
    let mut out = t.clone();
    let mut changed = false;
    if let Some(a) = out.archive_location.as_mut() {
        changed |= fill(&mut a.location);
    }
    for art in out
        .inputs
        .artifacts
        .iter_mut()
        .chain(out.outputs.artifacts.iter_mut())
    {
        changed |= fill(&mut art.location);
    }
    changed.then_some(out)
}

/// The configured driver of `plugin`.
fn driver<'a>(ctx: &BuildCtx<'a>, plugin: &str) -> Result<&'a ArtifactDriver, BuildError> {
    ctx.config
        .artifact_drivers
        .iter()
        .find(|d| d.name == plugin)
        .ok_or_else(|| BuildError::NoArtifactDriver {
            plugin: plugin.to_string(),
            known: ctx
                .config
                .artifact_drivers
                .iter()
                .map(|d| d.name.clone())
                .collect(),
        })
}

/// A plugin container: the executor container's environment and settings in the plugin's
/// image, running `<binary> <sub…> <log options> -- <entrypoint> <socket>` (`artifactContainer`).
fn plugin_container(
    ctx: &BuildCtx<'_>,
    d: &ArtifactDriver,
    name: &str,
    binary: &str,
    sub: &[&str],
    init: bool,
) -> Result<core::Container, BuildError> {
    let entry = ctx
        .config
        .images
        .get(&d.image)
        .ok_or_else(|| BuildError::NoCommand {
            container: name.to_string(),
            image: d.image.clone(),
        })?;
    let mut c = executor_container(ctx, name, sub[0], init);
    c.image = Some(d.image.clone());
    let mut command = vec![binary.to_string()];
    command.extend(sub.iter().map(|s| s.to_string()));
    command.extend(log_opts(ctx));
    command.push("--".into());
    command.extend(entry.command.iter().cloned());
    command.push(format!("{}/socket", socket_dir(&d.name)));
    c.command = Some(command);
    Ok(c)
}

/// The legacy layout's `init-artifact-<plugin>` init containers, after `init`; `user_mounts`
/// are the template's own mounts (seen under `/mainctrfs` for inputs placed on them).
pub(crate) fn init_containers(
    ctx: &BuildCtx<'_>,
    user_mounts: &[core::VolumeMount],
) -> Result<Vec<core::Container>, BuildError> {
    let mut out = Vec::new();
    for p in input_plugins(ctx.template) {
        let name = format!("{INIT_PREFIX}{p}");
        let sub = ["artifact-plugin-init", "--plugin-name", p.as_str()];
        let mut c = plugin_container(ctx, driver(ctx, &p)?, &name, LEGACY_BINARY, &sub, true)?;
        let mut m = vec![mount(INPUT_ARTIFACTS, "/argo/inputs/artifacts")];
        m.extend(volumes::mirrored(user_mounts, false));
        m.push(mount(volumes::VAR_RUN_ARGO, "/var/run/argo"));
        if matches!(ctx.template_env, Some(super::env::TemplateEnv::Offloaded)) {
            m.push(volumes::env_config_mount());
        }
        c.volume_mounts = Some(m);
        out.push(c);
    }
    Ok(out)
}

/// The plugins that get a sidecar: the outputs' (legacy), or the inputs' and outputs'
/// (init-less, inputs first).
fn sidecar_plugins(ctx: &BuildCtx<'_>) -> Vec<String> {
    let mut v = Vec::new();
    if ctx.initless {
        v = input_plugins(ctx.template);
    }
    for p in output_plugins(ctx.template) {
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// The plugin sidecars, after the user's; `user_mounts` the template's own, `main_mounts`
/// main's (both mirrored under `/mainctrfs`).
pub(crate) fn sidecars(
    ctx: &BuildCtx<'_>,
    user_mounts: &[core::VolumeMount],
    main_mounts: &[core::VolumeMount],
) -> Result<Vec<core::Container>, BuildError> {
    let binary = if ctx.initless {
        INITLESS_BINARY
    } else {
        LEGACY_BINARY
    };
    let mut out = Vec::new();
    for p in sidecar_plugins(ctx) {
        let name = format!("{SIDECAR_PREFIX}{p}");
        let mut c = plugin_container(
            ctx,
            driver(ctx, &p)?,
            &name,
            binary,
            &["artifact-plugin-sidecar"],
            false,
        )?;
        let mut m = vec![socket_mount(&p)];
        if ctx.initless {
            m.push(core::VolumeMount {
                read_only: Some(true),
                ..mount(super::initless::ARGO_BIN_VOLUME, super::initless::ARGO_BIN_MOUNT)
            });
            if !ctx.template.inputs.artifacts.is_empty() {
                m.push(mount(INPUT_ARTIFACTS, "/argo/inputs/artifacts"));
                m.extend(volumes::mirrored(user_mounts, false));
            }
        }
        for mm in volumes::mirrored(main_mounts, true) {
            if !m.iter().any(|x| x.mount_path == mm.mount_path) {
                m.push(mm);
            }
        }
        c.volume_mounts = Some(m);
        out.push(c);
    }
    Ok(out)
}

/// The socket volumes (`artifact-plugin-<plugin>`, emptyDir) of the sidecars.
pub(crate) fn socket_volumes(ctx: &BuildCtx<'_>) -> Vec<core::Volume> {
    sidecar_plugins(ctx)
        .iter()
        .map(|p| volumes::empty_dir(&format!("{SIDECAR_PREFIX}{p}")))
        .collect()
}

/// Wire wait (or the supervisor) to the sidecars: their sockets, their names in
/// `ARGO_ARTIFACT_PLUGIN_NAMES` (in place of the empty value every v4 wait has), and for the
/// supervisor the plugins of the inputs in `ARGO_INPUT_ARTIFACT_PLUGIN_NAMES`.
pub(crate) fn wire_aux(ctx: &BuildCtx<'_>, aux: &mut core::Container) {
    let plugins = sidecar_plugins(ctx);
    if plugins.is_empty() {
        return;
    }
    let m = aux.volume_mounts.get_or_insert_with(Vec::new);
    m.extend(plugins.iter().map(|p| socket_mount(p)));
    let names: Vec<String> = plugins.iter().map(|p| format!("{SIDECAR_PREFIX}{p}")).collect();
    let e = aux.env.get_or_insert_with(Vec::new);
    e.retain(|v| v.name != "ARGO_ARTIFACT_PLUGIN_NAMES");
    e.push(env("ARGO_ARTIFACT_PLUGIN_NAMES", names.join(",")));
    let inputs = input_plugins(ctx.template);
    if ctx.initless && !inputs.is_empty() {
        e.push(env("ARGO_INPUT_ARTIFACT_PLUGIN_NAMES", inputs.join(",")));
    }
}

/// Whether a container mounts wait's `/tmp/argo/outputs` (the staging directory a plugin
/// sidecar reads what wait hands it): wait, the supervisor and the plugin sidecars, when an
/// output goes through a plugin.
pub(crate) fn shares_outputs_dir(ctx: &BuildCtx<'_>, name: &str, aux: &str) -> bool {
    (name == aux || is_sidecar(name)) && !output_plugins(ctx.template).is_empty()
}
