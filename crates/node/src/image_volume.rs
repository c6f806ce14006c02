//! `image` volumes (Kubernetes image volumes, KEP-4639; Argo v4.1's init-less layout mounts
//! the executor image at `/argo-bin` this way): an OCI image's file system, read-only.
//!
//! The node has no registry, so the image must be present on the Docker Engine (as for
//! containers; `pullPolicy` is accepted and not acted on). Its file system is extracted once
//! per image ID under `<state>/images/<id>` — a throw-away container that never starts is
//! exported and unpacked into a temporary directory, which is then renamed into place, so
//! concurrent pods never see half an image — and bind-mounted read-only into the
//! containers. A new build of the same tag has a new ID and gets its own directory; old
//! ones stay until the state directory is cleaned.

use std::path::{Path, PathBuf};

use bollard::Docker;
use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptions};
use futures::TryStreamExt;

use crate::error::NodeError;

/// The host directory holding `reference`'s file system, extracting it first if needed.
///
/// # Errors
/// [`NodeError::ImageMissing`] when the image is not present, Docker or host I/O failures.
pub(crate) async fn prepare(
    docker: &Docker,
    state_dir: &Path,
    volume: &str,
    reference: &str,
) -> Result<PathBuf, NodeError> {
    let inspected = docker.inspect_image(reference).await.map_err(|e| {
        if crate::error::is_not_found(&e) {
            NodeError::ImageMissing {
                container: format!("image volume {volume}"),
                image: reference.to_string(),
            }
        } else {
            NodeError::docker("inspect image", reference.to_string(), e)
        }
    })?;
    let id = inspected
        .id
        .filter(|i| !i.is_empty())
        .ok_or_else(|| NodeError::Invalid {
            pod: volume.to_string(),
            message: format!("the Docker Engine reported no ID for image {reference:?}"),
        })?;
    let key = id.trim_start_matches("sha256:");
    let root = state_dir.join("images");
    // Only this user may enter the cache: nobody else can read the images or plant one
    // under a predictable path before the first extraction.
    crate::hostfs::make_dir(&root, 0o700)?;
    check_private(&root)?;
    let dir = root.join(key);
    if dir.is_dir() {
        return Ok(dir);
    }
    let tmp = root.join(format!(".{key}.{}.tmp", crate::node::new_uid()));
    let extracted = extract(docker, reference, &tmp).await;
    if let Err(e) = extracted {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
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

/// Export a created (never started) container of `reference` and unpack it into `into`.
async fn extract(docker: &Docker, reference: &str, into: &Path) -> Result<(), NodeError> {
    let body = bollard::models::ContainerCreateBody {
        image: Some(reference.to_string()),
        // Never run; an image without an entrypoint or command still needs one to be created.
        entrypoint: Some(vec!["/image-volume-export".into()]),
        cmd: Some(vec![]),
        labels: Some(std::collections::HashMap::from([(
            "io.argoexec-rs.image-volume-export".to_string(),
            reference.to_string(),
        )])),
        ..Default::default()
    };
    let id = docker
        .create_container(None::<CreateContainerOptions>, body)
        .await
        .map_err(|e| NodeError::docker("create an export container of", reference.to_string(), e))?
        .id;
    let archive = into.with_extension("tar");
    let exported = async {
        let mut file = tokio::fs::File::create(&archive)
            .await
            .map_err(|e| io_err("create", &archive, e))?;
        let mut stream = docker.export_container(&id);
        while let Some(chunk) = stream
            .try_next()
            .await
            .map_err(|e| NodeError::docker("export the image of", reference.to_string(), e))?
        {
            tokio::io::AsyncWriteExt::write_all(&mut file, &chunk)
                .await
                .map_err(|e| io_err("write", &archive, e))?;
        }
        tokio::io::AsyncWriteExt::flush(&mut file)
            .await
            .map_err(|e| io_err("write", &archive, e))
    }
    .await;
    let _ = docker
        .remove_container(
            &id,
            Some(RemoveContainerOptions {
                force: true,
                v: true,
                ..Default::default()
            }),
        )
        .await;
    let unpacked = match exported {
        Ok(()) => {
            let (a, d) = (archive.clone(), into.to_path_buf());
            tokio::task::spawn_blocking(move || unpack(&a, &d))
                .await
                .unwrap_or_else(|e| Err(io_err("unpack", &archive, std::io::Error::other(e))))
        }
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&archive);
    unpacked
}

/// Unpack the exported tar, keeping modes (the executor must stay executable).
fn unpack(archive: &Path, into: &Path) -> Result<(), NodeError> {
    crate::hostfs::make_dir(into, 0o755)?;
    let file = std::fs::File::open(archive).map_err(|e| io_err("open", archive, e))?;
    let mut tar = tar::Archive::new(std::io::BufReader::new(file));
    tar.set_preserve_permissions(true);
    // No setuid or setgid bits from an image: the files belong to the node's user.
    tar.set_mask(0o6000);
    tar.set_unpack_xattrs(false);
    tar.set_overwrite(true);
    tar.unpack(into)
        .map_err(|e| io_err("unpack the image into", into, e))
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
