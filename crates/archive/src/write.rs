//! Writing tar and tar.gz archives of a file or directory in Argo's layout
//! (`util/archive.TarGzToWriter`): one top-level entry `basename(src)`, directories as
//! `name/` followed by their children sorted by name, symlinks stored as links, modes and
//! mtimes kept, GNU long-name records for names over 100 bytes. File contents are streamed;
//! nothing is held in memory beyond a small copy buffer (and the bounded gzip pipeline).

use std::fs;
use std::io::{self, BufReader, Read, Write};
use std::os::fd::BorrowedFd;
use std::path::Path;

use crate::ArchiveError;
use crate::pgzip::{GzipOptions, ParallelGzWriter};
use crate::tree::{self, Kind, Node};
use crate::tree_at;

/// Counts the bytes passing through.
struct Counting<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(b)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Yields exactly `left` bytes of a file whose size was recorded in the tar header: a file
/// that grew is cut at the recorded size, one that shrank is padded with zeros, so the
/// archive stays well-formed either way.
struct ExactSize<'a> {
    file: fs::File,
    left: u64,
    padding: bool,
    path: &'a Path,
}

impl Read for ExactSize<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = if self.padding {
            buf[..want].fill(0);
            want
        } else {
            match self.file.read(&mut buf[..want])? {
                0 => {
                    tracing::warn!(path = %self.path.display(), "file shrank while archiving; padding with zeros");
                    self.padding = true;
                    buf[..want].fill(0);
                    want
                }
                n => n,
            }
        };
        self.left -= n as u64;
        Ok(n)
    }
}

fn append_node<W: Write>(b: &mut tar::Builder<W>, node: Node<'_>) -> Result<(), ArchiveError> {
    let mut h = tar::Header::new_gnu();
    h.set_metadata_in_mode(node.meta, tar::HeaderMode::Complete);
    let err = |e| ArchiveError::io("archive", node.path, e);
    match node.kind {
        Kind::Dir => {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            let mut name = node.name.as_os_str().to_owned();
            name.push("/");
            b.append_data(&mut h, Path::new(&name), io::empty()).map_err(err)
        }
        Kind::Symlink(target) => {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            b.append_link(&mut h, node.name, &target).map_err(err)
        }
        Kind::File(len, file) => {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(len);
            let data = ExactSize {
                file,
                left: len,
                padding: false,
                path: node.path,
            };
            b.append_data(&mut h, node.name, BufReader::with_capacity(128 * 1024, data))
                .map_err(err)
        }
    }
}

/// Write an uncompressed tar of `src` to `out`; returns the tar size in bytes.
///
/// # Errors
/// [`ArchiveError::NotFound`] when `src` is missing, otherwise [`ArchiveError::Io`].
pub fn write_tar<W: Write>(src: &Path, out: W) -> Result<u64, ArchiveError> {
    tar_of(src, out, &mut |src, visit| tree::walk(src, visit))
}

type Walker<'w> =
    dyn FnMut(&Path, &mut dyn FnMut(Node<'_>) -> Result<(), ArchiveError>) -> Result<(), ArchiveError> + 'w;

fn tar_of<W: Write>(src: &Path, out: W, walk: &mut Walker<'_>) -> Result<u64, ArchiveError> {
    let mut b = tar::Builder::new(Counting { inner: out, n: 0 });
    walk(src, &mut |node| append_node(&mut b, node))?;
    let mut c = b
        .into_inner()
        .map_err(|e| ArchiveError::io("finish tar of", src, e))?;
    c.flush().map_err(|e| ArchiveError::io("flush tar of", src, e))?;
    Ok(c.n)
}

/// Write a tar.gz of `src` to `out` at gzip `level` (`None` = 6, clamped to 9) using every
/// core (see [`crate::pgzip`]); returns the uncompressed tar size in bytes.
///
/// # Errors
/// As [`write_tar`].
pub fn write_tar_gz<W: Write + Send>(src: &Path, out: W, level: Option<u32>) -> Result<u64, ArchiveError> {
    let opts = GzipOptions {
        level: level.unwrap_or(6).min(9),
        ..GzipOptions::default()
    };
    write_tar_gz_with(src, out, &opts)
}

/// [`write_tar_gz`] of what `src` points to when it is a symbolic link: the link is followed
/// once, at the top, and the archive still names the top-level entry `basename(src)`. For a
/// process archiving its own file system (the wrapper staging main's outputs, where an
/// init-less pod's input artifact is a link into the shared volume); links below the top are
/// stored as links, as always.
///
/// # Errors
/// As [`write_tar`]; a dangling link is [`ArchiveError::NotFound`].
pub fn write_tar_gz_following<W: Write + Send>(
    src: &Path,
    out: W,
    level: Option<u32>,
) -> Result<u64, ArchiveError> {
    let (abs, name) = tree::resolve(src)?;
    let target = match std::fs::canonicalize(&abs) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ArchiveError::NotFound {
                path: src.to_path_buf(),
            });
        }
        Err(e) => return Err(ArchiveError::io("resolve", src, e)),
    };
    let opts = GzipOptions {
        level: level.unwrap_or(6).min(9),
        ..GzipOptions::default()
    };
    gz_of(&target, out, &opts, &mut |src, visit| {
        tree::walk_named(src, &name, visit)
    })
}

/// [`write_tar_gz`] with explicit gzip tuning (level, block size, threads).
///
/// # Errors
/// As [`write_tar`]; a failure of `out` is reported as [`ArchiveError::Io`] naming `src`.
pub fn write_tar_gz_with<W: Write + Send>(
    src: &Path,
    out: W,
    opts: &GzipOptions,
) -> Result<u64, ArchiveError> {
    // Resolve first so a missing source is NotFound before any thread starts.
    tree::resolve(src)?;
    gz_of(src, out, opts, &mut |src, visit| tree::walk(src, visit))
}

/// [`write_tar_gz_with`] for a `src` inside another root directory (`root`, e.g. a held
/// `/proc/<pid>/root` handle): `src` and the symlinks on its way resolve as they would inside
/// that root (`openat2(RESOLVE_IN_ROOT)`), never escaping it; the layout is the same.
///
/// # Errors
/// As [`write_tar`]; [`ArchiveError::NotFound`] when `src` is missing inside `root`.
pub fn write_tar_gz_in_root<W: Write + Send>(
    root: BorrowedFd<'_>,
    src: &Path,
    out: W,
    opts: &GzipOptions,
) -> Result<u64, ArchiveError> {
    let clean = tree_at::clean(src);
    let parent = clean.parent().unwrap_or(Path::new("/"));
    // Fail with NotFound before any compression thread starts.
    let dir = tree_at::open_in_root(
        root,
        parent,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
    )?;
    if let Some(base) = clean.file_name() {
        rustix::fs::statat(&dir, base, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).map_err(|e| match e {
            rustix::io::Errno::NOENT => ArchiveError::NotFound {
                path: src.to_path_buf(),
            },
            e => ArchiveError::io("stat", src, e.into()),
        })?;
    }
    gz_of(src, out, opts, &mut |src, visit| {
        tree_at::walk_in_root(root, src, visit)
    })
}

fn gz_of<W: Write + Send>(
    src: &Path,
    out: W,
    opts: &GzipOptions,
    walk: &mut Walker<'_>,
) -> Result<u64, ArchiveError> {
    let mut gz = ParallelGzWriter::new(out, *opts);
    let n = tar_of(src, &mut gz, walk)?;
    let mut inner = gz
        .finish()
        .map_err(|e| ArchiveError::io("compress archive of", src, e))?;
    inner
        .flush()
        .map_err(|e| ArchiveError::io("write archive of", src, e))?;
    Ok(n)
}
