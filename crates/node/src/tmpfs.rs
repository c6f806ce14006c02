//! Memory-backed `emptyDir` volumes (`medium: Memory`), as the kubelet makes them: a tmpfs
//! mounted on the volume's host directory, sized by `sizeLimit` (else half the host's
//! memory, tmpfs' default), so a container filling it meets `ENOSPC` exactly as on a node.
//! Mounting needs `CAP_SYS_ADMIN` on the host (the node runs as root); the mounts are
//! undone before the pod's directory is removed.

use std::path::Path;

use crate::error::NodeError;

/// Mount a tmpfs of `size_bytes` (none: tmpfs' default) with mode 0777 on `dir`.
///
/// # Errors
/// [`NodeError::Io`] when the mount is refused (no privilege on the host).
pub fn mount(dir: &Path, size_bytes: Option<i64>) -> Result<(), NodeError> {
    let mut data = String::from("mode=0777");
    if let Some(s) = size_bytes.filter(|s| *s > 0) {
        data.push_str(&format!(",size={s}"));
    }
    let data = std::ffi::CString::new(data).expect("no NUL in mount options");
    rustix::mount::mount(
        "tmpfs",
        dir,
        "tmpfs",
        rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV,
        Some(data.as_c_str()),
    )
    .map_err(|e| NodeError::io("mount a tmpfs (emptyDir medium Memory) on", dir, e.into()))
}

/// Unmount every mount point under `root` (deepest first), so the directory can be removed.
pub fn unmount_below(root: &Path) {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let mut points: Vec<&str> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| Path::new(p).starts_with(root))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        if let Err(e) = rustix::mount::unmount(p, rustix::mount::UnmountFlags::DETACH) {
            tracing::warn!(mount = p, error = %e, "could not unmount a pod volume");
        }
    }
}
