//! Host-filesystem helpers for pod volumes: directories and files with the modes the kubelet
//! gives them, and item paths checked to stay inside their volume.

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::error::NodeError;

/// Create `dir` (and parents) with `mode` on the leaf.
///
/// # Errors
/// [`NodeError::Io`] naming the directory.
pub(crate) fn make_dir(dir: &Path, mode: u32) -> Result<(), NodeError> {
    std::fs::create_dir_all(dir).map_err(|e| NodeError::io("create directory", dir, e))?;
    set_mode(dir, mode)
}

/// Set the mode of an existing file or directory.
///
/// # Errors
/// [`NodeError::Io`] naming the path.
pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), NodeError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| NodeError::io("chmod", path, e))
}

/// Write `bytes` to `file` (its parent directories created 0755) and give it `mode`.
///
/// # Errors
/// [`NodeError::Io`] naming the file.
pub(crate) fn write_file(file: &Path, bytes: &[u8], mode: u32) -> Result<(), NodeError> {
    if let Some(parent) = file.parent() {
        make_dir(parent, 0o755)?;
    }
    std::fs::write(file, bytes).map_err(|e| NodeError::io("write", file, e))?;
    set_mode(file, mode)
}

/// `p` as a relative path without `..`, or `None`.
pub(crate) fn safe_relative(p: &str) -> Option<PathBuf> {
    let path = Path::new(p);
    let ok = !p.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    ok.then(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_only() {
        assert!(safe_relative("a/b").is_some());
        assert!(safe_relative("../a").is_none());
        assert!(safe_relative("/a").is_none());
        assert!(safe_relative("a/../../b").is_none());
        assert!(safe_relative("").is_none());
    }

    #[test]
    fn files_get_their_mode_and_parents() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a/b/c");
        write_file(&f, b"x", 0o400).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"x");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o400);
    }
}
