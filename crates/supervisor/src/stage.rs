//! Staging of the `main` container's base-layer outputs for the wait container.
//!
//! The wait container cannot see files on main's image layer, so before the exit code is
//! written the wrapper of the container named `main` copies them to the shared volume:
//! * each output parameter with `valueFrom.path` P → `outputs/parameters/<P>`;
//! * each output artifact with `path` P → `outputs/artifacts/<P without trailing />.tgz`, a
//!   gzip'd tar in Argo's layout at the default level.
//!
//! Only paths on the base layer count ([`Template::is_base_layer_path`]: not under a volume
//! mount, not an input artifact's path); the wait container reads the others through its
//! `/mainctrfs` mounts. A missing path is only logged (the output may be optional). A
//! parameter file that cannot be a value (a directory, a FIFO, a socket or device, more than
//! 1 MiB: [`argoexec_core::param_file`]) is not copied: the reason goes to
//! `outputs/parameter-errors/<P>` for the wait side to report against the parameter, and the
//! container keeps its own exit code (Argo failed the wrapper with 64 for a directory and
//! blocked forever on a FIFO). Any other failure fails the wrapper (exit 64), as in Argo.
//! Directories are created with mode
//! 0777 and files with 0666 so a wait container with another UID can read and remove them.
//! Each file is written to a temporary sibling and renamed into place, so the wait side
//! never sees a half-written copy or archive.

use crate::error::SupervisorError;
use argoexec_core::ready::PodLayout;
use argoexec_core::{PodPaths, Template};
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Stage every base-layer output parameter and artifact of `template`.
///
/// # Errors
/// [`SupervisorError::Stage`] for the first output that exists but cannot be staged.
pub fn stage_outputs(
    paths: &PodPaths,
    template: &Template,
    layout: PodLayout,
) -> Result<(), SupervisorError> {
    for p in &template.outputs.parameters {
        let Some(src) = p.value_from.as_ref().and_then(|v| v.path.as_deref()) else {
            continue;
        };
        let src = Path::new(src);
        if !template.is_base_layer_path_in(src, layout) {
            tracing::debug!(path = %src.display(), "parameter is on a volume, not staged");
            continue;
        }
        stage_parameter(
            src,
            &paths.staged_parameter(src),
            &paths.staged_parameter_error(src),
        )?;
    }
    for a in &template.outputs.artifacts {
        let Some(src) = a.path.as_deref() else { continue };
        let src = Path::new(src);
        if !template.is_base_layer_path_in(src, layout) {
            tracing::debug!(path = %src.display(), "artifact is on a volume, not staged");
            continue;
        }
        stage_artifact(src, &paths.staged_artifact(src), layout)?;
    }
    Ok(())
}

fn stage_err(src: &Path, e: impl ToString) -> SupervisorError {
    SupervisorError::Stage {
        path: src.to_path_buf(),
        reason: e.to_string(),
    }
}

fn missing(src: &Path, what: &str) -> bool {
    match fs::symlink_metadata(src) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            tracing::info!(path = %src.display(), "no {what} to save (it may be optional)");
            true
        }
        _ => false,
    }
}

/// Copy one parameter file, or record why it cannot be a value (see the module docs).
fn stage_parameter(src: &Path, dst: &Path, err_dst: &Path) -> Result<(), SupervisorError> {
    use argoexec_core::param_file::{self, ParamFileError};
    if missing(src, "parameter file") {
        return Ok(());
    }
    tracing::debug!(src = %src.display(), dst = %dst.display(), "saving parameter");
    // Non-blocking: a FIFO must not hang main's exit.
    let input = param_file::open_nonblocking(src).map_err(|e| stage_err(src, e))?;
    match param_file::read_bounded(src, input) {
        Ok(bytes) => write_via_temp(dst, |out| out.write_all(&bytes)).map_err(|e| stage_err(src, e)),
        Err(e @ (ParamFileError::NotRegular { .. } | ParamFileError::TooLarge { .. })) => {
            tracing::warn!(path = %src.display(), reason = %e, "output parameter file not saved");
            let reason = e.to_string();
            write_via_temp(err_dst, |out| out.write_all(reason.as_bytes())).map_err(|e| stage_err(src, e))
        }
        Err(e) => Err(stage_err(src, e)),
    }
}

/// Archive one artifact path. In the init-less layout a link at the top is followed: an
/// output at an input artifact's path is this wrapper's own link into the shared volume.
fn stage_artifact(src: &Path, dst: &Path, layout: PodLayout) -> Result<(), SupervisorError> {
    if missing(src, "artifact") {
        return Ok(());
    }
    tracing::debug!(src = %src.display(), dst = %dst.display(), "saving artifact");
    let mut not_found = false;
    let write = |out: &mut File| match layout {
        PodLayout::Initless => argoexec_archive::write_tar_gz_following(src, out, None),
        PodLayout::Legacy => argoexec_archive::write_tar_gz(src, out, None),
    };
    let result = write_via_temp(dst, |out| match write(out) {
        Ok(_) => Ok(()),
        Err(e) => {
            not_found = e.is_not_found();
            Err(io::Error::other(e.to_string()))
        }
    });
    match result {
        Err(_) if not_found => {
            tracing::info!(path = %src.display(), "artifact vanished while archiving, not saved");
            Ok(())
        }
        r => r.map_err(|e| stage_err(src, e)),
    }
}

/// Create `dst`'s parents (0777), write through `fill` into a 0666 temporary sibling, and
/// rename it into place; the temporary file is removed on failure.
fn write_via_temp(dst: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let dir = dst.parent().unwrap_or(Path::new("."));
    DirBuilder::new().recursive(true).mode(0o777).create(dir)?;
    let name = dst
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o666)
            .open(&tmp)?;
        fill(&mut f)?;
        f.flush()?;
        f.set_permissions(fs::Permissions::from_mode(0o666))?;
        drop(f);
        fs::rename(&tmp, dst)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_copy_and_missing() {
        let d = std::env::temp_dir().join(format!("argoexec-stage-test-{}", std::process::id()));
        let src = d.join("in/p.txt");
        fs::create_dir_all(src.parent().unwrap()).unwrap();
        fs::write(&src, "value").unwrap();
        let dst = d.join("out/a/b/p.txt");
        stage_parameter(&src, &dst, &d.join("err/p.txt")).unwrap();
        assert_eq!(fs::read_to_string(&dst).unwrap(), "value");
        assert_eq!(fs::metadata(&dst).unwrap().permissions().mode() & 0o777, 0o666);
        assert_eq!(
            fs::read_dir(dst.parent().unwrap()).unwrap().count(),
            1,
            "no temp file left"
        );
        stage_parameter(&d.join("nope"), &d.join("out/nope"), &d.join("err/nope")).unwrap();
        assert!(!d.join("out/nope").exists() && !d.join("err/nope").exists());
        // A directory is not copied; the reason is left for the wait side.
        stage_parameter(&d.join("in"), &d.join("out/dir"), &d.join("err/dir")).unwrap();
        assert!(!d.join("out/dir").exists());
        let why = fs::read_to_string(d.join("err/dir")).unwrap();
        assert!(why.contains("is a directory, not a regular file"), "{why}");
        // A FIFO with no writer: without O_NONBLOCK this open would never return.
        let fifo = d.join("in/fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        stage_parameter(&fifo, &d.join("out/fifo"), &d.join("err/fifo")).unwrap();
        assert!(fs::read_to_string(d.join("err/fifo")).unwrap().contains("FIFO"));
        let big = d.join("in/big");
        File::create(&big).unwrap().set_len(10 << 20).unwrap();
        stage_parameter(&big, &d.join("out/big"), &d.join("err/big")).unwrap();
        assert!(
            fs::read_to_string(d.join("err/big"))
                .unwrap()
                .contains("10485760 bytes")
        );
        assert_eq!(
            fs::read_dir(d.join("out")).unwrap().count(),
            1,
            "nothing but the good copy, and no temp file"
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
