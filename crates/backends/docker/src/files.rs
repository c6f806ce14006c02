//! `get_file_contents`: one file of a container's filesystem (base layer included, also after
//! the container exited) through the archive endpoint (`GET /containers/{id}/archive`).
//!
//! The daemon answers with a tar of the path; for a regular file that is a single entry whose
//! bytes are the result. A directory, FIFO, socket or device is an `Invalid` error naming what
//! it is (the daemon archives a FIFO as a header, never opening it); a symbolic link is
//! followed (relative to the link's directory, a few hops at most) the way `cat` would,
//! inside the container's filesystem. The download is bounded: at most the parameter limit
//! plus [`HEADER_SLACK`] bytes are read, and a file whose header says it is larger than
//! [`argoexec_core::param_file::MAX_PARAMETER_BYTES`] is refused without reading its data.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use argoexec_runtime::{ErrorKind, RuntimeError};
use bollard::query_parameters::DownloadFromContainerOptionsBuilder;
use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::DockerExecutor;
use crate::errors::{error, io_err};
use crate::stream::{BodyError, idle_timeout};

const ACTION: &str = "read file from";

/// How many symbolic links are followed before giving up.
const MAX_LINK_HOPS: usize = 8;

/// Room for the tar headers (PAX records of a long name included) before the file's data.
const HEADER_SLACK: usize = 1024 * 1024;

/// What the first entry of a downloaded archive is.
enum FirstEntry {
    File(Vec<u8>),
    Link(PathBuf),
}

/// The path as the string the archive endpoint takes.
pub(crate) fn path_str<'a>(
    action: &'static str,
    container: &str,
    path: &'a Path,
) -> Result<&'a str, RuntimeError> {
    path.to_str().ok_or_else(|| {
        error(
            ErrorKind::Fatal,
            action,
            container,
            format!("path {} is not UTF-8", path.display()),
        )
    })
}

/// Resolve a link `target` found at `link` (absolute or relative to the link's directory),
/// lexically, to an absolute path.
fn resolve_link(link: &Path, target: &Path) -> PathBuf {
    let joined = if target.is_absolute() {
        target.to_path_buf()
    } else {
        link.parent().unwrap_or(Path::new("/")).join(target)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn first_entry(tar_bytes: &[u8], container: &str, path: &Path) -> Result<FirstEntry, RuntimeError> {
    let bad =
        |what: &str, e: std::io::Error| io_err(ACTION, container, &format!("{what} {}", path.display()), e);
    let invalid = |e: argoexec_core::param_file::ParamFileError| {
        error(ErrorKind::Invalid, ACTION, container, e.to_string())
    };
    let mut archive = tar::Archive::new(tar_bytes);
    let mut entries = archive.entries().map_err(|e| bad("reading the archive of", e))?;
    let Some(entry) = entries.next() else {
        return Err(error(
            ErrorKind::NotFound,
            ACTION,
            container,
            format!("the daemon returned an empty archive for {}", path.display()),
        ));
    };
    let mut entry = entry.map_err(|e| bad("reading the archive of", e))?;
    let kind = entry.header().entry_type();
    if kind.is_file() {
        // The header's size decides before any data is read (the download stopped early).
        argoexec_core::param_file::check_size(path, entry.size()).map_err(invalid)?;
        let mut buf = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry
            .read_to_end(&mut buf)
            .map_err(|e| bad("reading the archived bytes of", e))?;
        return Ok(FirstEntry::File(buf));
    }
    if kind.is_symlink() {
        let target = entry
            .link_name()
            .map_err(|e| bad("reading the link target of", e))?
            .map(|t| t.into_owned())
            .unwrap_or_default();
        return Ok(FirstEntry::Link(resolve_link(path, &target)));
    }
    let what = match kind {
        tar::EntryType::Directory => "a directory",
        tar::EntryType::Fifo => "a FIFO (named pipe)",
        tar::EntryType::Char => "a character device",
        tar::EntryType::Block => "a block device",
        _ => "not a regular file",
    };
    Err(invalid(argoexec_core::param_file::ParamFileError::NotRegular {
        path: path.to_path_buf(),
        kind: what,
    }))
}

impl DockerExecutor {
    /// The archive of `path` in container `id`, with the idle time-out applied.
    pub(crate) fn archive_body(
        &self,
        id: &str,
        path: &str,
    ) -> impl Stream<Item = Result<Bytes, BodyError>> + Send + Unpin + 'static {
        let opts = DownloadFromContainerOptionsBuilder::new().path(path).build();
        idle_timeout(
            self.docker.download_from_container(id, Some(opts)),
            self.idle_timeout,
        )
    }

    /// The start of the archive of `path`: all of it, or the first `limit` + [`HEADER_SLACK`]
    /// bytes (enough for the header of a file above the limit; the rest is never fetched).
    async fn download_head(&self, id: &str, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        let cap = usize::try_from(argoexec_core::param_file::MAX_PARAMETER_BYTES).unwrap_or(usize::MAX)
            + HEADER_SLACK;
        let mut body = self.archive_body(id, path_str(ACTION, container, path)?);
        let mut out = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk
                .map_err(|e| self.not_found_hint(e.into_runtime(&self.socket, ACTION, container), path))?;
            out.extend_from_slice(&chunk);
            if out.len() >= cap {
                break;
            }
        }
        Ok(out)
    }

    /// Add what was missing to a `NotFound` from the archive endpoint.
    pub(crate) fn not_found_hint(&self, mut e: RuntimeError, path: &Path) -> RuntimeError {
        if e.is_not_found() {
            e.message = format!(
                "{} does not exist in the container (or the container is gone): {}",
                path.display(),
                e.message
            );
        }
        e
    }

    /// See [`argoexec_runtime::RuntimeExecutor::get_file_contents`].
    pub(crate) async fn read_file(&self, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        let id = self.require_id(ACTION, container).await?;
        let mut current = path.to_path_buf();
        for _ in 0..=MAX_LINK_HOPS {
            let tar_bytes = self.download_head(&id, container, &current).await?;
            match first_entry(&tar_bytes, container, &current)? {
                FirstEntry::File(bytes) => {
                    tracing::debug!(container, path = %path.display(), bytes = bytes.len(), "read file");
                    return Ok(bytes);
                }
                FirstEntry::Link(target) => {
                    tracing::debug!(container, link = %current.display(), target = %target.display(), "following symlink");
                    current = target;
                }
            }
        }
        Err(error(
            ErrorKind::Fatal,
            ACTION,
            container,
            format!(
                "{}: more than {MAX_LINK_HOPS} levels of symbolic links",
                path.display()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_lexically() {
        assert_eq!(
            resolve_link(Path::new("/a/b/l"), Path::new("c")),
            PathBuf::from("/a/b/c")
        );
        assert_eq!(
            resolve_link(Path::new("/a/b/l"), Path::new("../c")),
            PathBuf::from("/a/c")
        );
        assert_eq!(
            resolve_link(Path::new("/a/l"), Path::new("/x/y")),
            PathBuf::from("/x/y")
        );
        assert_eq!(
            resolve_link(Path::new("/l"), Path::new("../../x")),
            PathBuf::from("/x")
        );
    }

    #[test]
    fn directory_is_an_error() {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
        h.set_mode(0o755);
        b.append_data(&mut h, "d/", std::io::empty()).ok();
        let bytes = b.into_inner().unwrap_or_default();
        let e = first_entry(&bytes, "main", Path::new("/d"))
            .err()
            .map(|e| e.message);
        assert!(e.is_some_and(|m| m.contains("is a directory")));
    }

    #[test]
    fn fifo_and_oversized_files_are_invalid_from_the_header_alone() {
        let header = |kind: tar::EntryType, size: u64| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_size(size);
            h.set_mode(0o644);
            h.set_path("p").unwrap();
            h.set_cksum();
            h.as_bytes().to_vec()
        };
        // Only the 512-byte header of a 10 MiB file: its data was never downloaded.
        let e = first_entry(
            &header(tar::EntryType::Regular, 10 << 20),
            "main",
            Path::new("/tmp/p"),
        )
        .err()
        .unwrap();
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert!(e.message.contains("/tmp/p is 10485760 bytes"), "{}", e.message);
        let e = first_entry(&header(tar::EntryType::Fifo, 0), "main", Path::new("/tmp/f"))
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert!(e.message.contains("/tmp/f is a FIFO"), "{}", e.message);
    }
}
