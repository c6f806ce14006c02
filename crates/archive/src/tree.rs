//! Walking a source file or directory in archive order: resolving `src` to an absolute path,
//! naming the top-level entry `basename(src)`, and visiting children sorted by name.
//! Shared by the tar and zip writers so both produce the same layout; [`crate::tree_at`]
//! produces the same nodes from inside another root directory.

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::ArchiveError;

/// What a visited path is.
pub(crate) enum Kind {
    /// A regular file of this many bytes, opened by the walker (without following links).
    File(u64, fs::File),
    /// A directory (its children follow it).
    Dir,
    /// A symbolic link with this target (never followed).
    Symlink(PathBuf),
}

/// One visited path.
pub(crate) struct Node<'a> {
    /// Where it is on disk.
    pub path: &'a Path,
    /// Its name in the archive (`basename(src)/…`), without a trailing slash.
    pub name: &'a Path,
    /// Its metadata (not following symlinks).
    pub meta: &'a fs::Metadata,
    /// What it is.
    pub kind: Kind,
}

/// Absolute, lexically cleaned `src` and the archive name of its top-level entry.
pub(crate) fn resolve(src: &Path) -> Result<(PathBuf, PathBuf), ArchiveError> {
    let abs = if src.is_absolute() {
        src.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| ArchiveError::io("resolve", src, e))?
            .join(src)
    };
    let mut clean = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::Normal(p) => clean.push(p),
            Component::ParentDir => {
                clean.pop();
            }
            _ => {}
        }
    }
    let name = clean
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("root"));
    match fs::symlink_metadata(&clean) {
        Ok(_) => Ok((clean, name)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ArchiveError::NotFound {
            path: src.to_path_buf(),
        }),
        Err(e) => Err(ArchiveError::io("stat", src, e)),
    }
}

/// Open a regular file for reading, refusing a symlink swapped in since the stat and not
/// blocking on a fifo swapped in either.
fn open_nofollow(path: &Path) -> Result<fs::File, ArchiveError> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| ArchiveError::io("open", path, e))
}

/// Visit `src` and (for a directory) everything below it, parents before children, children
/// sorted by name. Sockets, fifos and devices are skipped with a warning.
pub(crate) fn walk(
    src: &Path,
    visit: &mut dyn FnMut(Node<'_>) -> Result<(), ArchiveError>,
) -> Result<(), ArchiveError> {
    let (abs, name) = resolve(src)?;
    walk_at(&abs, &name, visit)
}

/// [`walk`] naming the top-level entry `name` instead of `basename(src)`.
pub(crate) fn walk_named(
    src: &Path,
    name: &Path,
    visit: &mut dyn FnMut(Node<'_>) -> Result<(), ArchiveError>,
) -> Result<(), ArchiveError> {
    let (abs, _) = resolve(src)?;
    walk_at(&abs, name, visit)
}

fn walk_at(
    path: &Path,
    name: &Path,
    visit: &mut dyn FnMut(Node<'_>) -> Result<(), ArchiveError>,
) -> Result<(), ArchiveError> {
    let meta = fs::symlink_metadata(path).map_err(|e| ArchiveError::io("stat", path, e))?;
    let ft = meta.file_type();
    let kind = if ft.is_symlink() {
        Kind::Symlink(fs::read_link(path).map_err(|e| ArchiveError::io("read link", path, e))?)
    } else if ft.is_dir() {
        Kind::Dir
    } else if ft.is_file() {
        Kind::File(meta.len(), open_nofollow(path)?)
    } else {
        tracing::warn!(path = %path.display(), "skipping a socket, fifo or device while archiving");
        return Ok(());
    };
    let is_dir = matches!(kind, Kind::Dir);
    visit(Node {
        path,
        name,
        meta: &meta,
        kind,
    })?;
    if is_dir {
        let mut children = Vec::new();
        for e in fs::read_dir(path).map_err(|e| ArchiveError::io("read dir", path, e))? {
            children.push(e.map_err(|e| ArchiveError::io("read dir", path, e))?.file_name());
        }
        children.sort();
        for c in children {
            walk_at(&path.join(&c), &name.join(&c), visit)?;
        }
    }
    Ok(())
}
