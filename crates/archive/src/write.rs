//! Writing tar and tar.gz archives of a file or directory in Argo's layout
//! (`util/archive.TarGzToWriter`): one top-level entry `basename(src)`, directories as
//! `name/` followed by their children sorted by name, symlinks stored as links, modes and
//! mtimes kept, GNU long-name records for names over 100 bytes. File contents are streamed;
//! nothing is held in memory beyond a small copy buffer (and the bounded gzip pipeline).

use std::fs;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use crate::ArchiveError;
use crate::pgzip::{GzipOptions, ParallelGzWriter};
use crate::tree::{self, Kind, Node};

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
        Kind::File(len) => {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(len);
            let file = fs::File::open(node.path).map_err(|e| ArchiveError::io("open", node.path, e))?;
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
    let mut b = tar::Builder::new(Counting { inner: out, n: 0 });
    tree::walk(src, &mut |node| append_node(&mut b, node))?;
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
    let mut gz = ParallelGzWriter::new(out, *opts);
    let n = write_tar(src, &mut gz)?;
    let mut inner = gz
        .finish()
        .map_err(|e| ArchiveError::io("compress archive of", src, e))?;
    inner
        .flush()
        .map_err(|e| ArchiveError::io("write archive of", src, e))?;
    Ok(n)
}
