//! The local-filesystem driver (`local: {path: …}`, an argoexec-rs extension).
//!
//! Loading copies a file or a directory tree; saving copies into a temporary sibling and
//! renames it into place, so a failed save never leaves a complete-looking artifact. Symlinks
//! are copied as symlinks, never followed.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{ArtifactDriver, ArtifactError, ByteStream, Loaded, Opened, blocking};

/// A file or directory on a reachable filesystem.
#[derive(Debug, Clone)]
pub struct LocalDriver {
    path: PathBuf,
}

impl LocalDriver {
    /// The driver for this path.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    fn not_found(&self) -> ArtifactError {
        ArtifactError::NotFound {
            location: format!("local:{}", self.path.display()),
        }
    }
}

/// Copy `src` (file, directory or symlink) to `dest`, which must not exist; returns the
/// number of bytes of regular files copied.
fn copy_tree(src: &Path, dest: &Path) -> Result<u64, ArtifactError> {
    let meta = fs::symlink_metadata(src).map_err(|e| ArtifactError::io("stat", src, e))?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = fs::read_link(src).map_err(|e| ArtifactError::io("read link", src, e))?;
        std::os::unix::fs::symlink(target, dest).map_err(|e| ArtifactError::io("create link", dest, e))?;
        Ok(0)
    } else if ft.is_dir() {
        fs::create_dir(dest).map_err(|e| ArtifactError::io("create dir", dest, e))?;
        let mut entries: Vec<_> = fs::read_dir(src)
            .map_err(|e| ArtifactError::io("read dir", src, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| ArtifactError::io("read dir", src, e))?;
        entries.sort_by_key(|e| e.file_name());
        let mut n = 0;
        for e in entries {
            n += copy_tree(&e.path(), &dest.join(e.file_name()))?;
        }
        fs::set_permissions(dest, meta.permissions()).map_err(|e| ArtifactError::io("chmod", dest, e))?;
        Ok(n)
    } else {
        fs::copy(src, dest).map_err(|e| ArtifactError::io("copy to", dest, e))
    }
}

/// A hidden sibling of `dest` for writing before the rename into place.
fn partial_path(dest: &Path) -> Result<PathBuf, ArtifactError> {
    let parent = dest.parent().unwrap_or(Path::new("/"));
    fs::create_dir_all(parent).map_err(|e| ArtifactError::io("create", parent, e))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = remove_any(&tmp);
    Ok(tmp)
}

/// Put the finished `tmp` at `dest`, replacing what was there.
fn commit(tmp: &Path, dest: &Path) -> Result<(), ArtifactError> {
    remove_any(dest).map_err(|e| ArtifactError::io("replace", dest, e))?;
    fs::rename(tmp, dest).map_err(|e| ArtifactError::io("rename into", dest, e))
}

fn save_blocking(src: &Path, dest: &Path) -> Result<u64, ArtifactError> {
    let tmp = partial_path(dest)?;
    let r = copy_tree(src, &tmp).and_then(|n| commit(&tmp, dest).map(|()| n));
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

impl ArtifactDriver for LocalDriver {
    async fn open(&self) -> Result<Opened, ArtifactError> {
        let meta = match tokio::fs::symlink_metadata(&self.path).await {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(self.not_found()),
            Err(e) => return Err(ArtifactError::io("stat", &self.path, e)),
        };
        if meta.is_dir() {
            return Ok(Opened::Directory);
        }
        let f = tokio::fs::File::open(&self.path)
            .await
            .map_err(|e| ArtifactError::io("open", &self.path, e))?;
        let body = tokio_util::io::ReaderStream::with_capacity(f, 1 << 20);
        Ok(Opened::Stream {
            size: Some(meta.len()),
            body: Box::pin(body),
        })
    }

    async fn load(&self, dest: &Path) -> Result<Loaded, ArtifactError> {
        let src = self.path.clone();
        let meta = fs::symlink_metadata(&src).map_err(|_| self.not_found())?;
        let dest = dest.to_path_buf();
        blocking(move || {
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|e| ArtifactError::io("create", parent, e))?;
            }
            let n = copy_tree(&src, &dest)?;
            Ok(if meta.is_dir() {
                Loaded::Directory(crate::walk::files(&dest)?.len())
            } else {
                Loaded::File(n)
            })
        })
        .await
    }

    async fn save(&self, src: &Path) -> Result<u64, ArtifactError> {
        let dest = self.path.clone();
        let src = src.to_path_buf();
        blocking(move || save_blocking(&src, &dest)).await
    }

    async fn save_stream(&self, mut body: ByteStream) -> Result<u64, ArtifactError> {
        use futures::StreamExt;
        use tokio::io::AsyncWriteExt;
        let dest = self.path.clone();
        let tmp = partial_path(&dest)?;
        let result = async {
            let mut f = tokio::fs::File::create(&tmp)
                .await
                .map_err(|e| ArtifactError::io("create", &tmp, e))?;
            let mut n = 0u64;
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| ArtifactError::io("produce the artifact for", &dest, e))?;
                f.write_all(&chunk)
                    .await
                    .map_err(|e| ArtifactError::io("write", &tmp, e))?;
                n += chunk.len() as u64;
            }
            f.sync_all()
                .await
                .map_err(|e| ArtifactError::io("sync", &tmp, e))?;
            commit(&tmp, &dest)?;
            Ok(n)
        }
        .await;
        if result.is_err() {
            let _ = remove_any(&tmp);
        }
        result
    }

    async fn exists(&self) -> Result<bool, ArtifactError> {
        Ok(fs::symlink_metadata(&self.path).is_ok())
    }

    async fn list(&self) -> Result<Vec<String>, ArtifactError> {
        let meta = fs::symlink_metadata(&self.path).map_err(|_| self.not_found())?;
        if meta.is_dir() {
            Ok(crate::walk::files(&self.path)?
                .into_iter()
                .map(|f| f.rel)
                .collect())
        } else {
            Ok(vec![String::new()])
        }
    }

    async fn list_objects(&self) -> Result<Vec<String>, ArtifactError> {
        let path =
            std::path::absolute(&self.path).map_err(|e| ArtifactError::io("resolve", &self.path, e))?;
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(self.not_found()),
            Err(e) => return Err(ArtifactError::io("stat", &path, e)),
        };
        if !meta.is_dir() {
            return Ok(vec![path.to_string_lossy().into_owned()]);
        }
        blocking(move || {
            let mut out: Vec<String> = crate::walk::files(&path)?
                .into_iter()
                .map(|f| f.path.to_string_lossy().into_owned())
                .collect();
            out.sort_unstable();
            Ok(out)
        })
        .await
    }

    async fn delete(&self) -> Result<(), ArtifactError> {
        remove_any(&self.path).map_err(|e| ArtifactError::io("delete", &self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AnyDriver;
    use argoexec_core::template::ArtifactLocation;
    use std::sync::Arc;

    #[tokio::test]
    async fn save_and_load_dir() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir_all(src.join("sub")).unwrap();
        fs::write(src.join("sub/f"), "x").unwrap();
        std::os::unix::fs::symlink("sub/f", src.join("l")).unwrap();
        let repo = LocalDriver::new(d.path().join("repo/a/b"));
        repo.save(&src).await.unwrap();
        assert_eq!(repo.list().await.unwrap(), ["sub/f"]);
        let back = d.path().join("back");
        assert_eq!(repo.load(&back).await.unwrap(), Loaded::Directory(1));
        assert_eq!(fs::read_to_string(back.join("sub/f")).unwrap(), "x");
        assert_eq!(fs::read_link(back.join("l")).unwrap(), Path::new("sub/f"));
        assert!(
            LocalDriver::new(d.path().join("nope"))
                .load(&d.path().join("x"))
                .await
                .unwrap_err()
                .is_not_found()
        );
        let leftovers: Vec<_> = fs::read_dir(d.path().join("repo/a")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no partial files left");
        repo.delete().await.unwrap();
        assert!(!repo.exists().await.unwrap());
    }

    #[tokio::test]
    async fn a_failed_stream_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let repo = LocalDriver::new(d.path().join("a.tgz"));
        let body: ByteStream = Box::pin(futures::stream::iter([
            Ok(bytes::Bytes::from_static(b"abc")),
            Err(std::io::Error::other("producer died")),
        ]));
        let e = repo.save_stream(body).await.unwrap_err();
        assert!(e.to_string().contains("producer died"), "{e}");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn driver_selection() {
        let s = Arc::new(crate::Settings::default());
        let git: ArtifactLocation = serde_json_loc(r#"{"git": {"repo": "r"}}"#);
        assert!(
            matches!(AnyDriver::for_location(&git, &s), Err(ArtifactError::NoDriver { kind }) if kind == "git")
        );
        assert!(matches!(
            AnyDriver::for_location(&ArtifactLocation::default(), &s),
            Err(ArtifactError::NoLocation)
        ));
        let gcs = serde_json_loc(r#"{"gcs": {"key": "k"}}"#);
        let e = AnyDriver::for_location(&gcs, &s).unwrap_err().to_string();
        assert!(e.contains("gcs") && e.contains("no bucket"), "{e}");
        let raw = serde_json_loc(r#"{"raw": {"data": "hi"}}"#);
        let d = tempfile::tempdir().unwrap();
        AnyDriver::for_location(&raw, &s)
            .unwrap()
            .load(&d.path().join("f"))
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(d.path().join("f")).unwrap(), "hi");
    }

    fn serde_json_loc(s: &str) -> ArtifactLocation {
        serde_json::from_str(s).unwrap()
    }
}
