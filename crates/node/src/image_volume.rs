//! `image` volumes (Kubernetes image volumes, KEP-4639; Argo v4.1's init-less layout mounts
//! the executor image at `/argo-bin` this way): an OCI image's file system, read-only.
//!
//! The node has no registry, so the image must be present in the container runtime (as for
//! containers; `pullPolicy` is accepted and not acted on). Its file system is extracted once
//! per image ID under `<state>/images/<id>` — the runtime unpacks it into a temporary
//! directory ([`ContainerRuntime::export_image`]), which is then renamed into place, so
//! concurrent pods never see half an image — and bind-mounted read-only into the
//! containers. A new build of the same tag has a new ID and gets its own directory; old
//! ones stay until the state directory is cleaned.

use std::path::{Path, PathBuf};

use crate::error::NodeError;
use crate::runtime::ContainerRuntime;

/// The host directory holding `reference`'s file system, extracting it first if needed.
///
/// # Errors
/// [`NodeError::ImageMissing`] when the image is not present, runtime or host I/O failures.
pub(crate) async fn prepare(
    runtime: &dyn ContainerRuntime,
    state_dir: &Path,
    volume: &str,
    reference: &str,
) -> Result<PathBuf, NodeError> {
    let missing = || NodeError::ImageMissing {
        container: format!("image volume {volume}"),
        image: reference.to_string(),
    };
    let image = runtime.image(reference).await?.ok_or_else(missing)?;
    if image.id.is_empty() {
        return Err(NodeError::Invalid {
            pod: volume.to_string(),
            message: format!("the container runtime reported no ID for image {reference:?}"),
        });
    }
    let key = image.id.trim_start_matches("sha256:").to_string();
    let root = state_dir.join("images");
    // Only this user may enter the cache: nobody else can read the images or plant one
    // under a predictable path before the first extraction.
    crate::hostfs::make_dir(&root, 0o700)?;
    check_private(&root)?;
    let dir = root.join(&key);
    if dir.is_dir() {
        return Ok(dir);
    }
    let tmp = root.join(format!(".{key}.{}.tmp", crate::node::new_uid()));
    if let Err(e) = runtime.export_image(reference, &tmp).await {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e.into());
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => {
            tracing::info!(image = reference, dir = %dir.display(), "extracted the image for image volumes")
        }
        // Another pod extracted it meanwhile: use that one.
        Err(_) if dir.is_dir() => {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(NodeError::io("rename the extracted image into", &dir, e));
        }
    }
    Ok(dir)
}

/// Refuse a cache directory that is not this user's alone.
fn check_private(dir: &Path) -> Result<(), NodeError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = std::fs::symlink_metadata(dir).map_err(|e| io_err("stat", dir, e))?;
    let mine = meta.uid() == rustix::process::geteuid().as_raw();
    if meta.file_type().is_dir() && mine && meta.permissions().mode() & 0o077 == 0 {
        return Ok(());
    }
    Err(io_err(
        "use the image cache",
        dir,
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "it must be a directory of this user's with mode 0700",
        ),
    ))
}

fn io_err(action: &'static str, path: &Path, source: std::io::Error) -> NodeError {
    NodeError::io(action, path, source)
}
