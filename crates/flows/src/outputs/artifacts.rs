//! Output artifacts: stage, archive by strategy, upload, report with the final location.
//!
//! - Volume path (`/mainctrfs` mirror): `tar` → tar.gz at the requested level, written by
//!   the multi-core compressor straight into the upload (no copy on disk); `none` → the
//!   file or directory as is (a directory: each file its own object, in parallel); `zip` →
//!   a staged zip.
//! - Base-layer path: the seam's `copy_file` produces a tar.gz; for `none`/`zip` it is
//!   unpacked in the staging dir (a single file keeps its basename, for mime detection) and,
//!   for `zip`, re-zipped.
//! - Volume paths are resolved in-root under `/mainctrfs` ([`mirrored_source`]): `..` and
//!   symlinks on the way resolve among main's volumes, never in the wait container's own
//!   filesystem. A symlink as the artifact itself is archived as a link (Argo's layout); with
//!   `archive: none` its target is uploaded, found in-root the same way.
//! - A missing optional artifact is skipped with a warning; a missing required one fails.
//! - The location is the artifact's own when complete, its key relocated onto the archive
//!   location when key-only, else `<archiveLocation key>/<file name>` ([`destination`]).

use std::path::{Path, PathBuf};

use argoexec_artifacts::{AnyDriver, ArtifactDriver};
use argoexec_core::template::{ArchiveKind, Artifact, ArtifactLocation, MAIN};
use argoexec_runtime::RuntimeExecutor;

use crate::{FlowError, StepContext, blocking};

/// Why an artifact was not staged.
enum Skip {
    Missing(String),
    Failed(FlowError),
}

/// Save every output artifact. Returns the reported artifacts and the errors.
pub async fn save<R: RuntimeExecutor>(ctx: &StepContext, runtime: &R) -> (Vec<Artifact>, Vec<FlowError>) {
    let mut saved = Vec::new();
    let mut errors = Vec::new();
    for art in &ctx.template.outputs.artifacts {
        let Some(path) = art.path.clone() else { continue };
        match save_one(ctx, runtime, art, Path::new(&path)).await {
            Ok(a) => saved.push(a),
            Err(Skip::Missing(why)) if art.optional => {
                tracing::warn!(artifact = %art.name, %path, reason = %why, "optional output artifact not found; skipping");
            }
            Err(Skip::Missing(why)) => errors.push(FlowError::OutputArtifact {
                name: art.name.clone(),
                message: format!("required artifact not found at {path}: {why}"),
            }),
            Err(Skip::Failed(e)) => errors.push(e),
        }
    }
    (saved, errors)
}

async fn save_one<R: RuntimeExecutor>(
    ctx: &StepContext,
    runtime: &R,
    art: &Artifact,
    path: &Path,
) -> Result<Artifact, Skip> {
    let fail = |message: String| {
        Skip::Failed(FlowError::OutputArtifact {
            name: art.name.clone(),
            message,
        })
    };
    let staging = ctx.paths.output_artifact_staging();
    tokio::fs::create_dir_all(&staging)
        .await
        .map_err(|e| Skip::Failed(FlowError::io("create", &staging, e)))?;
    let kind = art.archive_kind();
    // Keeps the in-root handle of a volume source open until the upload is done.
    let mut held: Option<MirroredSource> = None;
    let staged = if ctx.template.is_base_layer_path_in(path, ctx.env.layout) {
        let tgz = staging.join(format!("{}.tgz", art.name));
        runtime
            .copy_file(MAIN, path, &tgz, level(kind))
            .await
            .map_err(|e| {
                if e.is_not_found() {
                    Skip::Missing(e.to_string())
                } else {
                    Skip::Failed(e.into())
                }
            })?;
        match kind {
            ArchiveKind::TarGz(_) => tgz,
            ArchiveKind::None | ArchiveKind::Zip => {
                let name = art.name.clone();
                let st = staging.clone();
                blocking(move || repack_base_layer(&tgz, &st, &name, kind))
                    .await
                    .map_err(Skip::Failed)?
            }
        }
    } else {
        let root = ctx.paths.mainctrfs_root();
        let p = path.to_path_buf();
        let source = blocking(move || Ok(mirrored_source(&root, &p, kind == ArchiveKind::None)))
            .await
            .map_err(Skip::Failed)?
            .map_err(Skip::Missing)?;
        if let ArchiveKind::TarGz(l) = kind {
            return stream_tar_gz(ctx, art, source, l).await.map_err(Skip::Failed);
        }
        let name = art.name.clone();
        let st = staging.clone();
        let src = source.path.clone();
        let staged = blocking(move || archive_volume_path(&src, &st, &name, kind))
            .await
            .map_err(Skip::Failed)?;
        held = Some(source);
        staged
    };
    // `none` uploads under the path's own name (the source may be a /proc/self/fd handle).
    let file_name = match (&held, kind) {
        (Some(src), ArchiveKind::None) => src.name.clone(),
        _ => staged
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let (location, reported_at) = destination(ctx, art, &file_name).map_err(fail)?;
    let driver = AnyDriver::for_artifact(art, &location, &ctx.artifacts).map_err(|e| fail(e.to_string()))?;
    // A plugin reads the path in its own container, which mounts main's volumes at the same
    // `/mainctrfs` paths, not through this process's handle (Argo hands it the mirror path).
    let staged = match (&held, kind) {
        (Some(_), ArchiveKind::None) if driver.is_plugin() => ctx.paths.mainctrfs(path),
        _ => staged,
    };
    driver
        .save(&staged)
        .await
        .map_err(|e| fail(format!("upload: {e}")))?;
    drop(held);
    tracing::info!(artifact = %art.name, file = %file_name, "saved output artifact");
    let mut reported = art.clone();
    reported.location = reported_at;
    Ok(reported)
}

/// Tar and compress `src` on every core straight into the upload: no archive copy on disk.
/// gzip (`<name>.tgz`), or zstd (`<name>.tar.zst`) when `ARGOEXEC_ARTIFACT_CODEC=zstd`.
async fn stream_tar_gz(
    ctx: &StepContext,
    art: &Artifact,
    source: MirroredSource,
    level: Option<i32>,
) -> Result<Artifact, FlowError> {
    let fail = |message: String| FlowError::OutputArtifact {
        name: art.name.clone(),
        message,
    };
    let zstd = ctx.artifacts.codec == argoexec_artifacts::Codec::Zstd;
    let file_name = if zstd {
        format!("{}.tar.zst", art.name)
    } else {
        format!("{}.tgz", art.name)
    };
    let (location, reported_at) = destination(ctx, art, &file_name).map_err(fail)?;
    let driver = AnyDriver::for_artifact(art, &location, &ctx.artifacts).map_err(|e| fail(e.to_string()))?;
    let (body, producer) = argoexec_artifacts::pipe::produce(4, move |writer| {
        let src = &source.path;
        if zstd {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            argoexec_archive::write_tar_zst(src, writer, level.filter(|l| *l > 0), threads)
        } else {
            argoexec_archive::write_tar_gz(src, writer, level.map(|l| argoexec_archive::gzip_level(Some(l))))
        }
    });
    let sent = driver.save_stream(body).await;
    let produced = producer.await.map_err(|e| fail(format!("archive task: {e}")))?;
    // The archive's own error says more than the upload's "the producer failed".
    produced.map_err(|e| archive_error(&art.name, e))?;
    let bytes = sent.map_err(|e| fail(format!("upload: {e}")))?;
    tracing::info!(artifact = %art.name, file = %file_name, bytes, "saved output artifact (streamed)");
    let mut reported = art.clone();
    reported.location = reported_at;
    Ok(reported)
}

/// A volume path made safe to hand to path-based writers: `/proc/self/fd/<dir>/<name>`, where
/// `<dir>` is the path's parent opened in-root under `/mainctrfs` (or, for `follow`, the
/// whole path opened in-root, its last symlink followed among main's volumes too).
struct MirroredSource {
    /// What the writers open.
    path: PathBuf,
    /// The path's own file name (the upload's name for `archive: none`).
    name: String,
    /// The handle `path` goes through; must stay open while `path` is used.
    _handle: std::fs::File,
}

/// Resolve a volume path for archiving; `Err` is the reason it is missing.
fn mirrored_source(root: &Path, path: &Path, follow: bool) -> Result<MirroredSource, String> {
    use std::os::fd::AsRawFd;
    let clean = argoexec_core::paths::clean(path);
    let (Some(parent), Some(base)) = (clean.parent(), clean.file_name()) else {
        return Err(format!("{} is not a file or directory path", path.display()));
    };
    let name = base.to_string_lossy().into_owned();
    let missing = |e: argoexec_archive::ArchiveError| {
        let why = match argoexec_archive::link_target_in_root(root, &clean) {
            Some(t) => format!(
                "is a symbolic link to {}, which is not on a volume of the main container (wait resolves links                  among main's volumes only)",
                t.display()
            ),
            None if e.is_not_found() => "does not exist".to_string(),
            None => e.to_string(),
        };
        format!("{} {why}", path.display())
    };
    let link = argoexec_archive::link_target_in_root(root, &clean).is_some();
    if follow && link {
        let h = argoexec_archive::open_path_in_root(root, &clean).map_err(missing)?;
        return Ok(MirroredSource {
            path: PathBuf::from(format!("/proc/self/fd/{}", h.as_raw_fd())),
            name,
            _handle: h,
        });
    }
    let dir = argoexec_archive::open_dir_in_root(root, parent).map_err(missing)?;
    let src = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(base);
    if std::fs::symlink_metadata(&src).is_err() {
        return Err(format!("{} does not exist", path.display()));
    }
    Ok(MirroredSource {
        path: src,
        name,
        _handle: dir,
    })
}

fn level(kind: ArchiveKind) -> Option<u32> {
    match kind {
        ArchiveKind::TarGz(l) => l.map(|l| argoexec_archive::gzip_level(Some(l))),
        _ => Some(0),
    }
}

/// Where an output goes, and the location to report, by Argo's rules: a complete location
/// is used (and reported) as it is; a key-only one is relocated onto the archive location
/// (and reported key-only); one without a key goes to `<archive key>/<file name>` in the
/// archive location's kind (and is reported with only that kind and key, as Argo's
/// executor reports it; the controller relocates it again when it reads it).
pub(crate) fn destination(
    ctx: &StepContext,
    art: &Artifact,
    file_name: &str,
) -> Result<(ArtifactLocation, ArtifactLocation), String> {
    if art.location.is_complete() {
        return Ok((art.location.clone(), art.location.clone()));
    }
    let archive = ctx.template.archive_location.as_ref().map(|a| &a.location);
    if art.location.has_key() {
        let full = art.location.relocate(archive).map_err(|e| e.to_string())?;
        return Ok((full, art.location.clone()));
    }
    let arch = archive.ok_or("no archiveLocation in the template and no location on the artifact")?;
    let full = arch.child(file_name).ok_or_else(|| {
        format!(
            "cannot derive a key under the archive location of kind {:?}",
            arch.kind_name().unwrap_or("none")
        )
    })?;
    let reported = full.key_only();
    Ok((full, reported))
}

/// An archive failure of the named output artifact.
fn archive_error(name: &str, e: argoexec_archive::ArchiveError) -> FlowError {
    FlowError::OutputArtifact {
        name: name.into(),
        message: e.to_string(),
    }
}

fn archive_volume_path(
    src: &Path,
    staging: &Path,
    name: &str,
    kind: ArchiveKind,
) -> Result<PathBuf, FlowError> {
    let fail = |e| archive_error(name, e);
    match kind {
        ArchiveKind::None => Ok(src.to_path_buf()),
        ArchiveKind::Zip => {
            let out = staging.join(format!("{name}.zip"));
            argoexec_archive::write_zip(src, &out).map_err(fail)?;
            Ok(out)
        }
        ArchiveKind::TarGz(l) => {
            let out = staging.join(format!("{name}.tgz"));
            let f = std::fs::File::create(&out).map_err(|e| FlowError::io("create", &out, e))?;
            let w = std::io::BufWriter::with_capacity(1 << 20, f);
            argoexec_archive::write_tar_gz(src, w, l.map(|l| argoexec_archive::gzip_level(Some(l))))
                .map_err(fail)?;
            Ok(out)
        }
    }
}

fn repack_base_layer(
    tgz: &Path,
    staging: &Path,
    name: &str,
    kind: ArchiveKind,
) -> Result<PathBuf, FlowError> {
    let fail = |e| archive_error(name, e);
    let dir = staging.join(format!("{name}.d"));
    let _ = std::fs::remove_dir_all(&dir);
    let f = std::fs::File::open(tgz).map_err(|e| FlowError::io("open", tgz, e))?;
    let tops = argoexec_archive::extract_tar_gz(std::io::BufReader::new(f), &dir).map_err(fail)?;
    let _ = std::fs::remove_file(tgz);
    let top = match tops.as_slice() {
        [one] => dir.join(one),
        _ => dir.clone(),
    };
    match kind {
        ArchiveKind::Zip => {
            let out = staging.join(format!("{name}.zip"));
            argoexec_archive::write_zip(&top, &out).map_err(fail)?;
            Ok(out)
        }
        _ => Ok(top),
    }
}
