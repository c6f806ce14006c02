//! Base-layer reads through a held root handle: `openat2(RESOLVE_IN_ROOT)` for single files,
//! [`argoexec_archive::write_tar_gz_in_root`] for archives. No `chroot`, no thread-wide
//! state, so reads of several containers can run at once on the multi-threaded runtime, and
//! a symlink inside the container (`/tmp/x -> /etc/shadow`) resolves inside the container.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use argoexec_archive::{ArchiveError, GzipOptions, open_in_root, write_tar_gz_in_root};
use argoexec_runtime::ErrorKind;
use rustix::fs::OFlags;

/// Read the whole regular file `path` inside `root`.
///
/// # Errors
/// `NotFound` when missing, `Fatal` for anything else (a directory, an I/O error).
pub fn read(root: Arc<OwnedFd>, path: &Path) -> Result<Vec<u8>, (ErrorKind, String)> {
    let fd = open_in_root(root.as_fd(), path, OFlags::RDONLY | OFlags::NONBLOCK).map_err(archive)?;
    let mut f = std::fs::File::from(fd);
    let meta = f
        .metadata()
        .map_err(|e| (ErrorKind::Fatal, format!("stat {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err((
            ErrorKind::Fatal,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    f.read_to_end(&mut buf)
        .map_err(|e| (ErrorKind::Fatal, format!("read {}: {e}", path.display())))?;
    Ok(buf)
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
