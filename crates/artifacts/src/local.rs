//! The local-filesystem driver (`local: {path: …}`, an argoexec-rs extension).
//!
//! Loading copies a file or a directory tree; saving copies into a temporary sibling and
//! renames it into place, so a failed save never leaves a complete-looking artifact. Symlinks
//! are copied as symlinks, never followed.

use super::{ArtifactDriver, ArtifactError};
use argoexec_core::template::ArtifactLocation;
use std::fs;
use std::path::{Path, PathBuf};

/// Copies artifacts to and from a reachable filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalDriver;

fn location_path(loc: &ArtifactLocation) -> Result<PathBuf, ArtifactError> {
    Ok(PathBuf::from(
        &loc.local.as_ref().ok_or(ArtifactError::NoLocation)?.path,
    ))
}

/// Copy `src` (file, directory or symlink) to `dest`, which must not exist.
fn copy_tree(src: &Path, dest: &Path) -> Result<(), ArtifactError> {
    let meta = fs::symlink_metadata(src).map_err(|e| ArtifactError::io("stat", src, e))?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = fs::read_link(src).map_err(|e| ArtifactError::io("read link", src, e))?;
        std::os::unix::fs::symlink(target, dest).map_err(|e| ArtifactError::io("create link", dest, e))
    } else if ft.is_dir() {
        fs::create_dir(dest).map_err(|e| ArtifactError::io("create dir", dest, e))?;
        let mut entries: Vec<_> = fs::read_dir(src)
            .map_err(|e| ArtifactError::io("read dir", src, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| ArtifactError::io("read dir", src, e))?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            copy_tree(&e.path(), &dest.join(e.file_name()))?;
        }
        fs::set_permissions(dest, meta.permissions()).map_err(|e| ArtifactError::io("chmod", dest, e))
    } else {
        fs::copy(src, dest)
            .map(|_| ())
            .map_err(|e| ArtifactError::io("copy to", dest, e))
    }
}

fn save_blocking(src: &Path, dest: &Path) -> Result<(), ArtifactError> {
    let parent = dest.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(parent).map_err(|e| ArtifactError::io("create", parent, e))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = remove_any(&tmp);
    let r = copy_tree(src, &tmp).and_then(|()| {
        remove_any(dest).map_err(|e| ArtifactError::io("replace", dest, e))?;
        fs::rename(&tmp, dest).map_err(|e| ArtifactError::io("rename into", dest, e))
    });
    if r.is_err() {
        let _ = remove_any(&tmp);
    }
    r
}

fn remove_any(p: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(p),
        Ok(_) => fs::remove_file(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ArtifactError> + Send + 'static,
) -> Result<T, ArtifactError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ArtifactError::io(
            "run blocking copy",
            Path::new("-"),
            std::io::Error::other(e.to_string()),
        ))
    })
}

impl ArtifactDriver for LocalDriver {
    async fn load(&self, loc: &ArtifactLocation, dest: &Path) -> Result<(), ArtifactError> {
        let src = location_path(loc)?;
        if fs::symlink_metadata(&src).is_err() {
            return Err(ArtifactError::NotFound {
                location: format!("local:{}", src.display()),
            });
        }
        let dest = dest.to_path_buf();
        blocking(move || {
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|e| ArtifactError::io("create", parent, e))?;
            }
            copy_tree(&src, &dest)
        })
        .await
    }

    async fn save(&self, src: &Path, loc: &ArtifactLocation) -> Result<(), ArtifactError> {
        let dest = location_path(loc)?;
        let src = src.to_path_buf();
        blocking(move || save_blocking(&src, &dest)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AnyDriver;
    use argoexec_core::template::LocalArtifact;

    fn loc(p: &Path) -> ArtifactLocation {
        ArtifactLocation {
            local: Some(LocalArtifact {
                path: p.display().to_string(),
            }),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn save_and_load_dir() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir_all(src.join("sub")).unwrap();
        fs::write(src.join("sub/f"), "x").unwrap();
        std::os::unix::fs::symlink("sub/f", src.join("l")).unwrap();
        let repo = loc(&d.path().join("repo/a/b"));
        LocalDriver.save(&src, &repo).await.unwrap();
        let back = d.path().join("back");
        LocalDriver.load(&repo, &back).await.unwrap();
        assert_eq!(fs::read_to_string(back.join("sub/f")).unwrap(), "x");
        assert_eq!(fs::read_link(back.join("l")).unwrap(), Path::new("sub/f"));
        assert!(
            LocalDriver
                .load(&loc(&d.path().join("nope")), &d.path().join("x"))
                .await
                .unwrap_err()
                .is_not_found()
        );
        let leftovers: Vec<_> = fs::read_dir(d.path().join("repo/a")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no partial files left");
    }

    #[tokio::test]
    async fn driver_selection() {
        let gcs: ArtifactLocation = serde_json_loc(r#"{"gcs": {"bucket": "b"}}"#);
        assert!(
            matches!(AnyDriver::for_location(&gcs), Err(ArtifactError::NoDriver { kind }) if kind == "gcs")
        );
        assert!(matches!(
            AnyDriver::for_location(&ArtifactLocation::default()),
            Err(ArtifactError::NoLocation)
        ));
        let raw = serde_json_loc(r#"{"raw": {"data": "hi"}}"#);
        let d = tempfile::tempdir().unwrap();
        AnyDriver::for_location(&raw)
            .unwrap()
            .load(&raw, &d.path().join("f"))
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(d.path().join("f")).unwrap(), "hi");
    }

    fn serde_json_loc(s: &str) -> ArtifactLocation {
        serde_json::from_str(s).unwrap()
    }
}
