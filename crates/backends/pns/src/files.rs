//! Base-layer reads through a held root handle: `openat2(RESOLVE_IN_ROOT)` for single files,
//! [`argoexec_archive::write_tar_gz_in_root`] for archives. No `chroot`, no thread-wide
//! state, so reads of several containers can run at once on the multi-threaded runtime, and
//! a symlink inside the container (`/tmp/x -> /etc/shadow`) resolves inside the container.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use argoexec_archive::{ArchiveError, GzipOptions, open_in_root, write_tar_gz_in_root};
use argoexec_runtime::ErrorKind;
use rustix::fs::OFlags;

/// Read the regular file `path` inside `root`, at most
/// [`argoexec_core::param_file::MAX_PARAMETER_BYTES`]. Opened `O_NONBLOCK` (a FIFO never
/// blocks) and checked with `fstat` before any read.
///
/// # Errors
/// `NotFound` when missing, `Invalid` for a directory, FIFO, socket, device or a file above
/// the limit, `Fatal` for an I/O error.
pub fn read(root: Arc<OwnedFd>, path: &Path) -> Result<Vec<u8>, (ErrorKind, String)> {
    use argoexec_core::param_file::{ParamFileError, read_bounded};
    let fd = open_in_root(
        root.as_fd(),
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
    )
    .map_err(archive)?;
    read_bounded(path, std::fs::File::from(fd)).map_err(|e| match e {
        ParamFileError::Io { .. } => (ErrorKind::Fatal, e.to_string()),
        e => (ErrorKind::Invalid, e.to_string()),
    })
}

/// Write a tar.gz of `src` inside `root` to the host file `dest`.
///
/// # Errors
/// `NotFound` when `src` is missing, `Fatal` otherwise.
pub fn archive_to(
    root: Arc<OwnedFd>,
    src: &Path,
    dest: &Path,
    level: Option<u32>,
) -> Result<u64, (ErrorKind, String)> {
    let opts = GzipOptions {
        level: level.unwrap_or(6).min(9),
        ..GzipOptions::default()
    };
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| (ErrorKind::Fatal, format!("create {}: {e}", parent.display())))?;
    }
    let out = std::fs::File::create(dest)
        .map_err(|e| (ErrorKind::Fatal, format!("create {}: {e}", dest.display())))?;
    let n = write_tar_gz_in_root(
        root.as_fd(),
        src,
        std::io::BufWriter::with_capacity(1 << 20, out),
        &opts,
    );
    if n.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    n.map_err(archive)
}

fn archive(e: ArchiveError) -> (ErrorKind, String) {
    let kind = if e.is_not_found() {
        ErrorKind::NotFound
    } else {
        ErrorKind::Fatal
    };
    (kind, e.to_string())
}
