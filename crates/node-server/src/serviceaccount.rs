//! Projected service-account volumes: the `token`, `ca.crt` and `namespace` files a pod
//! sees at `/var/run/secrets/kubernetes.io/serviceaccount`, laid out as the kubelet's
//! atomic writer does (`..<timestamp>/` holding the files, `..data` → it, and
//! `token` → `..data/token` …), so a rotation is one `rename` of the `..data` symlink and a
//! reader that re-opens by path never sees a half-written token.

use std::path::{Path, PathBuf};

/// Where the volume is mounted in every container.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The files of one projection.
pub struct Projection<'a> {
    /// The bearer token.
    pub token: &'a str,
    /// The cluster CA bundle.
    pub ca_pem: &'a str,
    /// The pod's namespace.
    pub namespace: &'a str,
}

/// Write (or rotate) the projection in `dir`.
///
/// # Errors
/// Host I/O failures.
pub fn write(dir: &Path, p: &Projection<'_>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let stamp = stamp();
    let data = dir.join(&stamp);
    std::fs::create_dir(&data)?;
    for (name, body) in [
        ("token", p.token),
        ("ca.crt", p.ca_pem),
        ("namespace", p.namespace),
    ] {
        let f = data.join(name);
        std::fs::write(&f, body)?;
        // Readable by any UID the container runs as (the kubelet uses fsGroup for this).
        set_mode(&f, 0o644)?;
    }
    set_mode(&data, 0o755)?;
    let previous = std::fs::read_link(dir.join("..data")).ok();
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&stamp, &tmp)?;
    std::fs::rename(&tmp, dir.join("..data"))?;
    for name in ["token", "ca.crt", "namespace"] {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(PathBuf::from("..data").join(name), &link)?;
        }
    }
    if let Some(old) = previous.filter(|o| o.as_os_str() != stamp.as_str()) {
        let _ = std::fs::remove_dir_all(dir.join(old));
    }
    Ok(())
}

fn set_mode(p: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
}

/// `..2026_12_02_17_00_00.123456789`, unique per call.
fn stamp() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "..{}.{:09}_{}",
        d.as_secs(),
        d.subsec_nanos(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_swaps_data_atomically_and_removes_the_old_dir() {
        let t = tempfile::tempdir().unwrap();
        let p = |token| Projection {
            token,
            ca_pem: "CA",
            namespace: "ns",
        };
        write(t.path(), &p("one")).unwrap();
        let first = std::fs::read_link(t.path().join("..data")).unwrap();
        assert_eq!(std::fs::read_to_string(t.path().join("token")).unwrap(), "one");
        write(t.path(), &p("two")).unwrap();
        assert_eq!(std::fs::read_to_string(t.path().join("token")).unwrap(), "two");
        assert_eq!(std::fs::read_to_string(t.path().join("namespace")).unwrap(), "ns");
        assert!(!t.path().join(first).exists(), "old data dir removed");
        assert!(
            std::fs::symlink_metadata(t.path().join("token"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}
