//! The files of a directory artifact: every regular file under a root, relative and sorted,
//! symlinks never followed (one that would have been followed is skipped with a warning, so
//! a link to `/etc/shadow` in an output directory is never uploaded).

use std::path::{Path, PathBuf};

use crate::ArtifactError;

/// A regular file found under the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the root, `/`-separated.
    pub rel: String,
    /// Absolute path.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
}

/// Every regular file under `root`, sorted by relative path.
///
/// # Errors
/// A directory that cannot be read, or a file name that is not UTF-8 (object keys are).
pub fn files(root: &Path) -> Result<Vec<FileEntry>, ArtifactError> {
    let mut out = Vec::new();
    walk(root, "", &mut out)?;
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<FileEntry>) -> Result<(), ArtifactError> {
    let rd = std::fs::read_dir(dir).map_err(|e| ArtifactError::io("read dir", dir, e))?;
    for e in rd {
        let e = e.map_err(|e| ArtifactError::io("read dir", dir, e))?;
        let path = e.path();
        let name = e.file_name().into_string().map_err(|n| {
            ArtifactError::io(
                "upload",
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("file name {n:?} is not UTF-8"),
                ),
            )
        })?;
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let meta = std::fs::symlink_metadata(&path).map_err(|e| ArtifactError::io("stat", &path, e))?;
        let ft = meta.file_type();
        if ft.is_dir() {
            walk(&path, &rel, out)?;
        } else if ft.is_file() {
            out.push(FileEntry {
                rel,
                path,
                size: meta.len(),
            });
        } else if ft.is_symlink() {
            tracing::warn!(path = %path.display(), "skipping a symlink in a directory artifact (never followed)");
        } else {
            tracing::warn!(path = %path.display(), "skipping a special file in a directory artifact");
        }
    }
    Ok(())
}

/// Check a relative key from a repository listing before writing it under a directory:
/// no absolute path, no `..`, no empty or `.` components, no NUL.
///
/// # Errors
/// The refused key.
pub fn safe_relative(rel: &str) -> Result<&str, String> {
    if rel.is_empty() || rel.starts_with('/') || rel.contains('\0') {
        return Err(format!("refusing object key {rel:?}: absolute, empty or NUL"));
    }
    if rel.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(format!(
            "refusing object key {rel:?}: it would leave the destination"
        ));
    }
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_regular_files_only() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::fs::create_dir_all(d.path().join("empty")).unwrap();
        std::fs::write(d.path().join("a/b/x"), "1").unwrap();
        std::fs::write(d.path().join("top"), "22").unwrap();
        std::os::unix::fs::symlink("/etc/shadow", d.path().join("evil")).unwrap();
        let f = files(d.path()).unwrap();
        let rels: Vec<_> = f.iter().map(|e| (e.rel.as_str(), e.size)).collect();
        assert_eq!(rels, [("a/b/x", 1), ("top", 2)]);
    }

    #[test]
    fn refuses_escaping_keys() {
        for bad in ["", "/etc/x", "a/../../x", "..", "a//b", "./a", "a\0b"] {
            assert!(safe_relative(bad).is_err(), "{bad:?}");
        }
        assert_eq!(safe_relative("a/b.txt"), Ok("a/b.txt"));
        assert_eq!(safe_relative("ü/ñ x"), Ok("ü/ñ x"));
    }
}
