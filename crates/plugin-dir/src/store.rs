//! The filesystem side of the plugin: blocking functions (the service runs them on tokio's
//! blocking pool) that copy files and directory trees in and out of the store, delete and
//! list keys.
//!
//! Copies are put in place by rename: the content is first written to a temporary file or
//! directory (named [`TMP_PREFIX`]…) beside the destination, so a copy that fails half way
//! never leaves a complete-looking object, and an object that exists is replaced whole.
//! Symbolic links inside a copied tree are copied as links; sockets, FIFOs and devices are
//! refused.

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// The name prefix of a copy in progress (left out of listings).
pub const TMP_PREFIX: &str = ".argoexec-plugin-dir-";

/// A filesystem operation that failed, with the path it failed on.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}: {source}", path.display())]
pub struct FsError {
    /// What was being done (`read`, `create`, …).
    pub action: &'static str,
    /// The path.
    pub path: PathBuf,
    /// The cause.
    pub source: io::Error,
}

impl FsError {
    /// Whether the path did not exist.
    pub fn is_not_found(&self) -> bool {
        self.source.kind() == io::ErrorKind::NotFound
    }
}

fn at<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> FsError + 'a {
    move |source| FsError {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Put a copy of `src` (a file, or a directory copied recursively; a link to either is
/// followed) at `dest`, creating `dest`'s parents and replacing what was there.
///
/// # Errors
/// An [`FsError`]; [`FsError::is_not_found`] when `src` does not exist.
pub fn copy(src: &Path, dest: &Path) -> Result<(), FsError> {
    let meta = fs::metadata(src).map_err(at("read", src))?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(at("copy", src)(io::Error::new(
            io::ErrorKind::Unsupported,
            "not a file or a directory",
        )));
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::create_dir_all(parent).map_err(at("create the directory", parent))?;
    let tmp_builder = {
        let mut b = tempfile::Builder::new();
        b.prefix(TMP_PREFIX);
        b
    };
    if meta.is_dir() {
        let mut tmp = tmp_builder
            .tempdir_in(parent)
            .map_err(at("create a temporary directory in", parent))?;
        copy_tree(src, tmp.path())?;
        fs::set_permissions(tmp.path(), meta.permissions()).map_err(at("set the mode of", tmp.path()))?;
        make_room(dest)?;
        fs::rename(tmp.path(), dest).map_err(at("rename a temporary directory to", dest))?;
        tmp.disable_cleanup(true);
    } else {
        let tmp = tmp_builder
            .tempfile_in(parent)
            .map_err(at("create a temporary file in", parent))?;
        // Copies the content and the mode (and truncates the empty temporary file).
        fs::copy(src, tmp.path()).map_err(at("copy", src))?;
        make_room(dest)?;
        tmp.persist(dest)
            .map_err(|e| at("rename a temporary file to", dest)(e.error))?;
    }
    Ok(())
}

/// Remove a directory at `dest`, which a rename cannot replace (a file it replaces).
fn make_room(dest: &Path) -> Result<(), FsError> {
    match fs::symlink_metadata(dest) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(dest).map_err(at("replace", dest)),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(at("read", dest)(e)),
    }
}

/// Copy the entries of the directory `src` into the existing directory `dest`.
fn copy_tree(src: &Path, dest: &Path) -> Result<(), FsError> {
    for entry in fs::read_dir(src).map_err(at("read the directory", src))? {
        let entry = entry.map_err(at("read the directory", src))?;
        let (from, to) = (entry.path(), dest.join(entry.file_name()));
        let meta = fs::symlink_metadata(&from).map_err(at("read", &from))?;
        let kind = meta.file_type();
        if kind.is_dir() {
            fs::create_dir(&to).map_err(at("create the directory", &to))?;
            copy_tree(&from, &to)?;
            // Last, so that a read-only directory is filled first.
            fs::set_permissions(&to, meta.permissions()).map_err(at("set the mode of", &to))?;
        } else if kind.is_file() {
            fs::copy(&from, &to).map_err(at("copy", &from))?;
        } else if kind.is_symlink() {
            let target = fs::read_link(&from).map_err(at("read the link", &from))?;
            symlink(&target, &to).map_err(at("create the link", &to))?;
        } else {
            return Err(at("copy", &from)(io::Error::new(
                io::ErrorKind::Unsupported,
                "not a file, a directory or a symbolic link",
            )));
        }
    }
    Ok(())
}

/// Remove `path` (recursively for a directory); a missing path is not an error.
///
/// # Errors
/// An [`FsError`].
pub fn remove(path: &Path) -> Result<(), FsError> {
    let removed = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(at("remove", path)(e)),
        _ => Ok(()),
    }
}

/// Whether `path` is a directory (following links); a missing path is not.
///
/// # Errors
/// An [`FsError`] when `path` cannot be looked at.
pub fn is_dir(path: &Path) -> Result<bool, FsError> {
    match fs::metadata(path) {
        Ok(m) => Ok(m.is_dir()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(at("read", path)(e)),
    }
}

/// Every object at or under `path` (a file: itself; a directory: the files and links in its
/// tree), as keys relative to `root` with `/` between components, sorted. A missing path has
/// none; empty directories and copies in progress are left out.
///
/// # Errors
/// An [`FsError`] when the tree cannot be read or a name is not UTF-8.
pub fn list(root: &Path, path: &Path) -> Result<Vec<String>, FsError> {
    let mut found = Vec::new();
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => walk(path, &mut found)?,
        Ok(_) => found.push(path.to_path_buf()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(at("read", path)(e)),
    }
    let mut keys = found
        .iter()
        .map(|p| relative_key(root, p))
        .collect::<Result<Vec<_>, _>>()?;
    keys.sort();
    Ok(keys)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), FsError> {
    for entry in fs::read_dir(dir).map_err(at("read the directory", dir))? {
        let entry = entry.map_err(at("read the directory", dir))?;
        if entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(TMP_PREFIX.as_bytes())
        {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(at("read", &path))?;
        if kind.is_dir() {
            walk(&path, found)?;
        } else {
            found.push(path);
        }
    }
    Ok(())
}

/// `path` (under `root`) as a key: its components after `root`, joined by `/`.
fn relative_key(root: &Path, path: &Path) -> Result<String, FsError> {
    let not_utf8 = || {
        at("list", path)(io::Error::new(
            io::ErrorKind::InvalidData,
            "the name is not UTF-8, so it cannot be a key",
        ))
    };
    let rel = path
        .strip_prefix(root)
        .map_err(|_| at("list", path)(io::Error::new(io::ErrorKind::InvalidInput, "not under the root")))?;
    let parts = rel
        .components()
        .map(|c| c.as_os_str().to_str().ok_or_else(not_utf8))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_copied_listed_and_removed() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir_all(src.join("sub/empty")).unwrap();
        fs::write(src.join("a.txt"), "a").unwrap();
        fs::write(src.join("sub/b.txt"), "b").unwrap();
        symlink("a.txt", src.join("link")).unwrap();
        let root = d.path().join("root");
        let dest = root.join("wf/pod/out");
        copy(&src, &dest).unwrap();
        assert_eq!(fs::read_to_string(dest.join("sub/b.txt")).unwrap(), "b");
        assert_eq!(fs::read_link(dest.join("link")).unwrap(), Path::new("a.txt"));
        assert!(dest.join("sub/empty").is_dir());
        assert_eq!(
            list(&root, &root.join("wf")).unwrap(),
            ["wf/pod/out/a.txt", "wf/pod/out/link", "wf/pod/out/sub/b.txt"]
        );
        assert_eq!(list(&root, &dest.join("a.txt")).unwrap(), ["wf/pod/out/a.txt"]);
        assert!(list(&root, &root.join("nothing")).unwrap().is_empty());
        // A file replaces the directory, and no temporary copy is left beside it.
        copy(&src.join("a.txt"), &dest).unwrap();
        assert_eq!(fs::read_to_string(&dest).unwrap(), "a");
        assert_eq!(fs::read_dir(root.join("wf/pod")).unwrap().count(), 1);
        remove(&root.join("wf")).unwrap();
        remove(&root.join("wf")).unwrap();
        assert!(!is_dir(&root.join("wf")).unwrap() && is_dir(&root).unwrap());
    }

    #[test]
    fn a_missing_source_is_reported_as_not_found() {
        let d = tempfile::tempdir().unwrap();
        let e = copy(&d.path().join("nothing"), &d.path().join("x")).unwrap_err();
        assert!(e.is_not_found(), "{e}");
        assert!(!d.path().join("x").exists());
    }
}
