//! Walking a source that lives inside *another* root directory, given as a directory handle
//! (the pns backend's held `/proc/<pid>/root`), without `chroot` and without any
//! process-wide or thread-wide state.
//!
//! The path is resolved with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`, so `..` and
//! absolute symlinks inside the container resolve against the container's root and can never
//! leave it. Below the top-level entry every step opens one name relative to its parent's
//! handle with `O_NOFOLLOW`: symlinks are stored as links, never followed. The visited
//! [`Node`]s are the same as [`crate::tree`]'s, so the archive layout is identical.

use std::ffi::OsStr;
use std::fs;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::ArchiveError;
use crate::tree::{Kind, Node};

const RESOLVE: ResolveFlags = ResolveFlags::IN_ROOT.union(ResolveFlags::NO_MAGICLINKS);

fn io(action: &'static str, path: &Path, e: Errno) -> ArchiveError {
    ArchiveError::io(action, path, std::io::Error::from(e))
}

/// `src` cleaned lexically to an absolute path inside the root.
pub(crate) fn clean(src: &Path) -> PathBuf {
    let mut clean = PathBuf::from("/");
    for c in src.components() {
        match c {
            Component::Normal(p) => clean.push(p),
            Component::ParentDir => {
                clean.pop();
            }
            _ => {}
        }
    }
    clean
}

/// Open `path` (absolute, container-relative) inside `root` with `flags`, following
/// symlinks only as the container itself would see them.
///
/// # Errors
/// [`ArchiveError::NotFound`] when a component is missing, [`ArchiveError::Io`] otherwise.
pub fn open_in_root(root: BorrowedFd<'_>, path: &Path, flags: OFlags) -> Result<OwnedFd, ArchiveError> {
    let rel = clean(path);
    let rel = rel.strip_prefix("/").unwrap_or(&rel);
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    rustix::fs::openat2(root, rel, flags | OFlags::CLOEXEC, Mode::empty(), RESOLVE).map_err(|e| match e {
        Errno::NOENT | Errno::NOTDIR => ArchiveError::NotFound {
            path: path.to_path_buf(),
        },
        e => io("open", path, e),
    })
}

/// Open `root` (a host directory, e.g. wait's `/mainctrfs`) as a directory handle.
fn open_root(root: &Path) -> Result<OwnedFd, ArchiveError> {
    rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::NOENT | Errno::NOTDIR => ArchiveError::NotFound {
            path: root.to_path_buf(),
        },
        e => io("open", root, e),
    })
}

/// Open the file `path` (absolute, as the container sees it) under the host directory `root`
/// for reading, resolving `..` and symlinks as [`open_in_root`] does (never leaving `root`),
/// without blocking on a FIFO (`O_NONBLOCK`) or taking a terminal. The caller checks the
/// type with `fstat` on the result.
///
/// # Errors
/// [`ArchiveError::NotFound`] when a component is missing (or `root` is), `Io` otherwise.
pub fn open_read_in_root(root: &Path, path: &Path) -> Result<fs::File, ArchiveError> {
    let r = open_root(root)?;
    open_in_root(
        r.as_fd(),
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
    )
    .map(fs::File::from)
}

/// Open the directory `dir` (absolute, as the container sees it) under `root`, in-root.
///
/// # Errors
/// As [`open_read_in_root`].
pub fn open_dir_in_root(root: &Path, dir: &Path) -> Result<fs::File, ArchiveError> {
    let r = open_root(root)?;
    open_in_root(r.as_fd(), dir, OFlags::RDONLY | OFlags::DIRECTORY).map(fs::File::from)
}

/// An `O_PATH` handle on `path` under `root`, symlinks (the last one included) resolved
/// in-root: `/proc/self/fd/<fd>` then names what main would reach by that path.
///
/// # Errors
/// As [`open_read_in_root`].
pub fn open_path_in_root(root: &Path, path: &Path) -> Result<fs::File, ArchiveError> {
    let r = open_root(root)?;
    open_in_root(r.as_fd(), path, OFlags::PATH).map(fs::File::from)
}

/// The target of `path` under `root` when `path` itself is a symbolic link (its parent
/// resolved in-root); `None` otherwise. For messages about a link that leads nowhere.
pub fn link_target_in_root(root: &Path, path: &Path) -> Option<PathBuf> {
    let abs = clean(path);
    let (parent, base) = (abs.parent()?, abs.file_name()?);
    let dir = open_dir_in_root(root, parent).ok()?;
    let target = rustix::fs::readlinkat(dir.as_fd(), base, Vec::new()).ok()?;
    Some(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
}

/// Visit `src` inside `root` and everything below it, in [`crate::tree::walk`]'s order.
pub(crate) fn walk_in_root(
    root: BorrowedFd<'_>,
    src: &Path,
    visit: &mut dyn FnMut(Node<'_>) -> Result<(), ArchiveError>,
) -> Result<(), ArchiveError> {
    let abs = clean(src);
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(base)) => {
            let dir = open_in_root(root, parent, OFlags::RDONLY | OFlags::DIRECTORY)?;
            walk_child(dir.as_fd(), base, &abs, Path::new(base), visit)
        }
        // The root itself: archived as `root/` like the host walker does.
        _ => walk_child(root, OsStr::new("."), &abs, Path::new("root"), visit),
    }
}

fn walk_child(
    parent: BorrowedFd<'_>,
    child: &OsStr,
    path: &Path,
    name: &Path,
    visit: &mut dyn FnMut(Node<'_>) -> Result<(), ArchiveError>,
) -> Result<(), ArchiveError> {
    let handle = rustix::fs::openat(
        parent,
        child,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::NOENT => ArchiveError::NotFound {
            path: path.to_path_buf(),
        },
        e => io("open", path, e),
    })?;
    let meta = fs::File::from(handle)
        .metadata()
        .map_err(|e| ArchiveError::io("stat", path, e))?;
    let ft = meta.file_type();
    let open = |flags: OFlags| {
        rustix::fs::openat(
            parent,
            child,
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io("open", path, e))
    };
    if ft.is_symlink() {
        let target =
            rustix::fs::readlinkat(parent, child, Vec::new()).map_err(|e| io("read link", path, e))?;
        let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
        return visit(Node {
            path,
            name,
            meta: &meta,
            kind: Kind::Symlink(target),
        });
    }
    if ft.is_file() {
        let file = fs::File::from(open(OFlags::RDONLY | OFlags::NONBLOCK)?);
        return visit(Node {
            path,
            name,
            meta: &meta,
            kind: Kind::File(meta.len(), file),
        });
    }
    if !ft.is_dir() {
        tracing::warn!(path = %path.display(), "skipping a socket, fifo or device while archiving");
        return Ok(());
    }
    let dir = open(OFlags::RDONLY | OFlags::DIRECTORY)?;
    visit(Node {
        path,
        name,
        meta: &meta,
        kind: Kind::Dir,
    })?;
    let mut children = Vec::new();
    for entry in rustix::fs::Dir::read_from(&dir).map_err(|e| io("read dir", path, e))? {
        let entry = entry.map_err(|e| io("read dir", path, e))?;
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            children.push(OsStr::from_bytes(n).to_owned());
        }
    }
    children.sort();
    for c in children {
        walk_child(dir.as_fd(), &c, &path.join(&c), &name.join(&c), visit)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_keeps_paths_inside_the_root() {
        assert_eq!(clean(Path::new("/a/../../etc/x")), PathBuf::from("/etc/x"));
        assert_eq!(clean(Path::new("rel/./y")), PathBuf::from("/rel/y"));
        assert_eq!(clean(Path::new("/")), PathBuf::from("/"));
    }

    #[test]
    fn absolute_symlinks_resolve_inside_the_root() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        fs::create_dir_all(root.join("etc")).unwrap();
        fs::write(root.join("etc/secret"), b"inside").unwrap();
        fs::write(outer.path().join("secret"), b"outside").unwrap();
        // An absolute link and a climbing one: both must land inside `root`.
        std::os::unix::fs::symlink("/etc/secret", root.join("abs")).unwrap();
        std::os::unix::fs::symlink("../../../../secret", root.join("etc/up")).unwrap();
        let r = fs::File::open(&root).unwrap();
        let read = |p: &str| {
            use std::io::Read;
            let mut s = String::new();
            fs::File::from(open_in_root(r.as_fd(), Path::new(p), OFlags::RDONLY)?)
                .read_to_string(&mut s)
                .unwrap();
            Ok::<_, ArchiveError>(s)
        };
        assert_eq!(read("/abs").unwrap(), "inside");
        // `../../../../secret` from /etc clamps at the root, where no `secret` exists.
        assert!(
            read("/etc/up").unwrap_err().is_not_found(),
            "the climbing link escaped the root"
        );
    }

    #[test]
    fn host_roots_read_in_root_without_blocking() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("mainctrfs");
        fs::create_dir_all(root.join("mnt/vol")).unwrap();
        fs::write(root.join("mnt/vol/f"), b"in volume").unwrap();
        fs::write(outer.path().join("outside"), b"wait's own file").unwrap();
        std::os::unix::fs::symlink("/mnt/vol/f", root.join("mnt/vol/abs")).unwrap();
        std::os::unix::fs::symlink("../../../outside", root.join("mnt/vol/up")).unwrap();
        let read = |p: &str| {
            use std::io::Read;
            let mut s = String::new();
            open_read_in_root(&root, Path::new(p))?
                .read_to_string(&mut s)
                .unwrap();
            Ok::<_, ArchiveError>(s)
        };
        assert_eq!(read("/mnt/vol/abs").unwrap(), "in volume");
        assert_eq!(read("/mnt/vol/x/../f").unwrap(), "in volume");
        assert!(read("/mnt/vol/up").unwrap_err().is_not_found());
        assert_eq!(
            link_target_in_root(&root, Path::new("/mnt/vol/up")),
            Some(PathBuf::from("../../../outside"))
        );
        assert_eq!(link_target_in_root(&root, Path::new("/mnt/vol/f")), None);
        let fifo = root.join("mnt/vol/fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        // Returns at once (no writer would ever come).
        let f = open_read_in_root(&root, Path::new("/mnt/vol/fifo")).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(
            &f.metadata().unwrap().file_type()
        ));
        assert!(
            open_read_in_root(&outer.path().join("none"), Path::new("/f"))
                .unwrap_err()
                .is_not_found()
        );
    }
}
