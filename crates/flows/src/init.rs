//! `argoexec init`: prepare the pod before the main container starts.
//!
//! 1. Emissary: copy this binary to `/var/run/argo/argoexec` (0555) and write the
//!    template to `/var/run/argo/template` (0444), both atomically. kubelet and k8sapi:
//!    copy the binary only, so their exec'd kill (`/var/run/argo/argoexec kill 15 1`) works
//!    in images without a shell (an argoexec-rs addition; Argo v3.3 needed `sh` there).
//!    With an input artifact served by a plugin, the full executor too, as
//!    `/var/run/argo/argoexec-full` (the per-pod copy hands `artifact-plugin-init` to it).
//!    Every executor, every template source: the template is written to
//!    `/var/run/argo/template` (0444), where wait and the other containers read it (since
//!    Argo v3.6 only init has `ARGO_TEMPLATE`, possibly as `offloaded` with the JSON in the
//!    `<pod>` ConfigMap at `/argo/config/ARGO_TEMPLATE`).
//! 2. Stage a script template's source at `/argo/staging/script` with mode 0755 (v3.6,
//!    AW#12787: a script with a shebang can be run directly).
//! 3. Load every input artifact, in order: optional unsupplied ones are skipped, required ones must be
//!    supplied; a key-only one (`s3: {key: …}`) is relocated onto the archive location first
//!    (Argo's `Relocate`, `argoexec_core::template` relocate rules); paths overlapping a user volume are written through `/mainctrfs`, the others
//!    to `/argo/inputs/artifacts/<name>` (which main mounts by subPath); archives are unpacked
//!    by the rules of [`argoexec_archive::unpack_input`]; `mode`/`recurseMode` are applied.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use argoexec_archive::Strategy;
use argoexec_artifacts::{AnyDriver, ArtifactDriver, Opened};
use argoexec_core::ExecutorKind;
use argoexec_core::protocol::write_atomic;
use argoexec_core::template::Artifact;

use crate::{FlowError, StepContext, blocking};

/// Run the init flow. `wrapper` is the program to copy to `/var/run/argo/argoexec` (the
/// per-pod copy); `full` the executor itself, also installed, as
/// `/var/run/argo/argoexec-full`, when an input artifact is loaded through a plugin and the
/// copy is not the full executor (the `init-artifact-<plugin>` containers run
/// `/var/run/argo/argoexec artifact-plugin-init`, which the copy hands to it).
///
/// # Errors
/// The first failure; the caller writes it to the termination log.
pub async fn run(ctx: &StepContext, wrapper: &Path, full: &Path) -> Result<(), FlowError> {
    let binary = match ctx.env.runtime_executor {
        ExecutorKind::Emissary | ExecutorKind::Kubelet | ExecutorKind::K8sApi => {
            Some(install_binary(ctx, wrapper, "argoexec").await?)
        }
        _ => None,
    };
    let plugins = ctx
        .template
        .inputs
        .artifacts
        .iter()
        .any(|a| artifact_plugin(ctx, a).is_some());
    if plugins && wrapper != full {
        install_binary(ctx, full, FULL_COPY).await?;
    }
    let tpl = write_template(ctx)?;
    tracing::info!(
        binary = binary.as_ref().map(|b| b.display().to_string()),
        template = %tpl.display(),
        source = ?ctx.template_source,
        "installed the executor files"
    );
    stage_script(ctx).await?;
    load_inputs(ctx, Loads::WithoutPlugins, false).await
}

/// Which input artifacts a container loads (Argo's `LoadArtifactsWithoutPlugins`,
/// `LoadArtifactsFromPlugin(P)`, and the supervisor's both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loads<'a> {
    /// Every artifact but those an artifact plugin serves (legacy `init`: a plugin runs in its
    /// own init container, `init-artifact-<plugin>`, which loads its artifacts).
    WithoutPlugins,
    /// Only those of this plugin (`artifact-plugin-init --plugin-name <plugin>`).
    Plugin(&'a str),
    /// Every artifact (the init-less supervisor, beside running plugin sidecars).
    All,
}

impl Loads<'_> {
    fn wants(self, plugin: Option<&str>) -> bool {
        match self {
            Self::WithoutPlugins => plugin.is_none(),
            Self::Plugin(p) => plugin == Some(p),
            Self::All => true,
        }
    }
}

/// The plugin that serves `art` once relocated onto the template's archive location, if one
/// does (Argo: the artifact's own `plugin.name`, else the archive location's).
pub fn artifact_plugin(ctx: &StepContext, art: &Artifact) -> Option<String> {
    let archive = ctx.template.archive_location.as_ref().map(|a| &a.location);
    let location = art.location.relocate(archive).ok()?;
    let name = location.extra.get("plugin")?.get("name")?.as_str()?;
    Some(name.to_string()).filter(|n| !n.is_empty())
}

/// How many input artifacts the supervisor loads at once.
const PARALLEL_LOADS: usize = 4;

/// Load every input artifact: in order, one after another (init, as Argo's), or with
/// `parallel` up to [`PARALLEL_LOADS`] at once (the supervisor) unless one destination lies
/// inside another (then the order decides the result, so they load in order). Every load
/// runs to its end before the first failure is returned, so nothing is still being written
/// when the caller reports it.
pub async fn load_inputs(ctx: &StepContext, which: Loads<'_>, parallel: bool) -> Result<(), FlowError> {
    use futures::StreamExt;
    let arts: Vec<&Artifact> = ctx
        .template
        .inputs
        .artifacts
        .iter()
        .filter(|a| which.wants(artifact_plugin(ctx, a).as_deref()))
        .collect();
    let dests: Vec<PathBuf> = arts.iter().filter_map(|a| input_destination(ctx, a)).collect();
    let nested = dests.iter().enumerate().any(|(i, a)| {
        dests
            .iter()
            .enumerate()
            .any(|(j, b)| i != j && argoexec_core::paths::is_under(a, b))
    });
    if !parallel || nested {
        for art in arts {
            load_artifact(ctx, art).await?;
        }
        return Ok(());
    }
    let width = PARALLEL_LOADS;
    let results: Vec<Result<(), FlowError>> =
        futures::stream::iter(arts.into_iter().map(|art| load_artifact(ctx, art)))
            .buffered(width)
            .collect()
            .await;
    results.into_iter().collect()
}

/// Write the template to `/var/run/argo/template` (0444), atomically.
pub(crate) fn write_template(ctx: &StepContext) -> Result<PathBuf, FlowError> {
    let tpl = ctx.paths.template_file();
    if let Some(dir) = tpl.parent() {
        std::fs::create_dir_all(dir).map_err(|e| FlowError::io("create", dir, e))?;
    }
    write_atomic(&tpl, ctx.template.to_json().as_bytes(), 0o444)
        .map_err(|e| FlowError::io("write", &tpl, e))?;
    Ok(tpl)
}

/// The full executor's name in `/var/run/argo` (for `artifact-plugin-init`).
pub const FULL_COPY: &str = "argoexec-full";

/// Copy `program` to `/var/run/argo/<name>` (0555), atomically.
async fn install_binary(ctx: &StepContext, program: &Path, name: &str) -> Result<PathBuf, FlowError> {
    let dir = ctx.paths.var_run_argo();
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| FlowError::io("create", &dir, e))?;
    let dest = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    tokio::fs::copy(program, &tmp)
        .await
        .map_err(|e| FlowError::io("copy argoexec to", &tmp, e))?;
    tokio::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o555))
        .await
        .map_err(|e| FlowError::io("chmod", &tmp, e))?;
    tokio::fs::rename(&tmp, &dest)
        .await
        .map_err(|e| FlowError::io("rename into", &dest, e))?;
    Ok(dest)
}

pub(crate) async fn stage_script(ctx: &StepContext) -> Result<(), FlowError> {
    let Some(script) = &ctx.template.script else {
        return Ok(());
    };
    let path = ctx.paths.staging_script();
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| FlowError::io("create", parent, e))?;
    }
    write_atomic(&path, script.source.as_bytes(), 0o755)
        .map_err(|e| FlowError::io("stage script at", &path, e))
}

/// Where init writes an input artifact.
pub fn input_destination(ctx: &StepContext, art: &Artifact) -> Option<PathBuf> {
    let path = Path::new(art.path.as_deref()?);
    Some(if ctx.template.overlapping_volume(path).is_some() {
        ctx.paths.mainctrfs(path)
    } else {
        ctx.paths.input_artifact(&art.name)
    })
}

async fn load_artifact(ctx: &StepContext, art: &Artifact) -> Result<(), FlowError> {
    let fail = |message: String| FlowError::InputArtifact {
        name: art.name.clone(),
        message,
    };
    if !art.is_supplied() {
        if art.optional {
            tracing::info!(artifact = %art.name, "optional input artifact not supplied; skipping");
            return Ok(());
        }
        return Err(fail("required artifact not supplied".into()));
    }
    let dest = input_destination(ctx, art).ok_or_else(|| fail("input artifact has no path".into()))?;
    // A key-only artifact takes the rest of its location from the archive location.
    let archive = ctx.template.archive_location.as_ref().map(|a| &a.location);
    let location = art.location.relocate(archive).map_err(|e| fail(e.to_string()))?;
    let driver = AnyDriver::for_artifact(art, &location, &ctx.artifacts).map_err(|e| fail(e.to_string()))?;
    let download = sibling(&dest, ".download");
    if driver.is_plugin()
        && let Some(parent) = download.parent()
    {
        // The plugin writes the file itself; its directory must exist (Argo: 0700).
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| FlowError::io("create", parent, e))?;
    }
    let _ = tokio::fs::remove_file(&download).await;
    let strategy = match &art.archive {
        None => Strategy::Auto,
        Some(a) if a.none.is_some() && a.tar.is_none() => Strategy::None,
        Some(a) if a.zip.is_some() && a.tar.is_none() => Strategy::Zip,
        Some(_) => Strategy::Tar,
    };
    let skip_missing = |e: &argoexec_artifacts::ArtifactError| {
        let skip = e.is_not_found() && art.optional;
        if skip {
            tracing::warn!(artifact = %art.name, error = %e, "optional input artifact not found; skipping");
        }
        skip
    };
    // Files that may be archives stream straight into extraction; `archive: none` files
    // and directory artifacts are downloaded (ranges in parallel, written in place).
    let opened = if strategy == Strategy::None {
        None
    } else {
        match driver.open().await {
            Ok(o) => Some(o),
            Err(e) if skip_missing(&e) => return Ok(()),
            Err(e) => return Err(fail(e.to_string())),
        }
    };
    let (mode, recurse) = (art.mode, art.recurse_mode.unwrap_or(false));
    let plugin = driver.is_plugin();
    let name = art.name.clone();
    if let Some(Opened::Stream { body, .. }) = opened {
        let reader = tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(body));
        let (d, n) = (dest.clone(), name.clone());
        return blocking(move || {
            let how = argoexec_archive::unpack_input_stream(
                std::io::BufReader::with_capacity(1 << 20, reader),
                &d,
                strategy,
                &download,
            )
            .map_err(|e| FlowError::InputArtifact {
                name: n.clone(),
                message: e.to_string(),
            })?;
            if let Some(mode) = mode {
                chmod(&d, mode, recurse)?;
            }
            tracing::info!(artifact = %n, dest = %d.display(), how = ?how, "loaded input artifact");
            Ok(())
        })
        .await;
    }
    match driver.load(&download).await {
        Ok(_) => {}
        Err(e) if skip_missing(&e) => return Ok(()),
        Err(e) => return Err(fail(e.to_string())),
    }
    blocking(move || {
        let is_dir = std::fs::symlink_metadata(&download)
            .map(|m| m.is_dir())
            .unwrap_or(false);
        if is_dir {
            place_dir(&download, &dest)?;
        } else {
            argoexec_archive::unpack_input(&download, &dest, strategy).map_err(|e| {
                FlowError::InputArtifact {
                    name: name.clone(),
                    message: e.to_string(),
                }
            })?;
        }
        // What a plugin wrote is opened to every user unless the artifact names a mode
        // (Argo: 0666; the plugin's container may run as another user than main). A
        // directory gets 0777 here, since 0666 would make it untraversable.
        let mode = mode.or_else(|| plugin.then(|| if dest.is_dir() { 0o777 } else { 0o666 }));
        if let Some(mode) = mode {
            chmod(&dest, mode, recurse)?;
        }
        tracing::info!(artifact = %name, dest = %dest.display(), "loaded input artifact");
        Ok(())
    })
    .await
}

fn sibling(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Move a downloaded directory into place; an existing empty directory (a mount point) is
/// filled instead of replaced.
fn place_dir(src: &Path, dest: &Path) -> Result<(), FlowError> {
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| FlowError::io("create", parent, e))?;
    }
    if dest.is_dir() {
        for e in std::fs::read_dir(src).map_err(|e| FlowError::io("read", src, e))? {
            let e = e.map_err(|e| FlowError::io("read", src, e))?;
            let to = dest.join(e.file_name());
            std::fs::rename(e.path(), &to).map_err(|e| FlowError::io("move into", &to, e))?;
        }
        std::fs::remove_dir(src).map_err(|e| FlowError::io("remove", src, e))
    } else {
        std::fs::rename(src, dest).map_err(|e| FlowError::io("move into", dest, e))
    }
}

fn chmod(path: &Path, mode: u32, recurse: bool) -> Result<(), FlowError> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| FlowError::io("stat", path, e))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| FlowError::io("chmod", path, e))?;
    if recurse && meta.is_dir() {
        for e in std::fs::read_dir(path).map_err(|e| FlowError::io("read", path, e))? {
            let e = e.map_err(|e| FlowError::io("read", path, e))?;
            chmod(&e.path(), mode, true)?;
        }
    }
    Ok(())
}
