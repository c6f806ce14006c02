//! `copy_file`: a path of a container's filesystem as a `.tar.gz` in Argo's layout.
//!
//! The daemon's archive of `src` is streamed (never buffered whole) through a bounded channel
//! into a blocking thread that re-writes it entry by entry into the project's multi-threaded
//! gzip writer ([`argoexec_archive::ParallelGzWriter`]). Re-writing is where the layout is
//! enforced: the single top-level entry must be `basename(src)`. Docker already names it so
//! for ordinary paths; when it does not (e.g. `src` ending in `/.`, or several top-level
//! entries) the names are re-rooted under `basename(src)`.
//!
//! Memory stays bounded: at most [`CHANNEL_DEPTH`] body chunks wait in the channel, plus the
//! gzip writer's few blocks in flight. A partly written destination is removed on every
//! failure, including the caller dropping the future.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use argoexec_archive::{GzipOptions, ParallelGzWriter};
use argoexec_runtime::{ErrorKind, RuntimeError};
use bytes::{Buf, Bytes};
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::DockerExecutor;
use crate::errors::{error, io_err};
use crate::files::path_str;

const ACTION: &str = "copy file from";

/// Body chunks buffered between the download and the re-writing thread.
const CHANNEL_DEPTH: usize = 32;

/// A blocking `Read` over chunks received from the download task.
struct ChunkReader {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    cur: Bytes,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while !self.cur.has_remaining() {
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Ok(b)) => self.cur = b,
                Some(Err(e)) => return Err(e),
            }
        }
        let n = buf.len().min(self.cur.len());
        self.cur.copy_to_slice(&mut buf[..n]);
        Ok(n)
    }
}

/// Removes the destination on drop unless disarmed.
struct DestGuard {
    path: PathBuf,
    armed: bool,
}

impl Drop for DestGuard {
    fn drop(&mut self) {
        if self.armed {
            match std::fs::remove_file(&self.path) {
                Ok(()) => tracing::debug!(dest = %self.path.display(), "removed partial archive"),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(dest = %self.path.display(), error = %e, "cannot remove partial archive")
                }
            }
        }
    }
}

/// Aborts a task on drop.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Maps entry paths of Docker's archive onto `want/…`.
struct Rerooter {
    want: Option<OsString>,
    root: Option<OsString>,
    renamed: bool,
}

fn normal_parts(p: &Path) -> io::Result<Vec<OsString>> {
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_os_string()),
            Component::CurDir => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unsafe entry path {} in the daemon's archive", p.display()),
                ));
            }
        }
    }
    Ok(parts)
}

impl Rerooter {
    fn new(src: &Path) -> Self {
        Self {
            want: src.file_name().map(|n| n.to_os_string()),
            root: None,
            renamed: false,
        }
    }

    /// The output path of an entry (for links, of their target too).
    fn map(&mut self, p: &Path) -> io::Result<PathBuf> {
        let parts = normal_parts(p)?;
        let Some(want) = &self.want else {
            // `src` has no base name (`/`): keep Docker's names.
            return Ok(parts.iter().collect());
        };
        let first = parts.first().cloned().unwrap_or_default();
        let root = self.root.get_or_insert_with(|| first.clone());
        let mut out = PathBuf::from(want);
        if first == *root && !first.is_empty() {
            out.extend(&parts[1..]);
        } else {
            out.extend(&parts);
        }
        if out != parts.iter().collect::<PathBuf>() {
            self.renamed = true;
        }
        Ok(out)
    }
}

/// Re-write the tar read from `input` into a gzip-compressed tar at `dest`. Returns the
/// number of entries written.
fn rewrite(input: impl Read, dest: &Path, src: &Path, opts: GzipOptions) -> io::Result<u64> {
    let file = File::create(dest)?;
    let gz = ParallelGzWriter::new(BufWriter::with_capacity(1 << 20, file), opts);
    let mut out = tar::Builder::new(gz);
    let mut archive = tar::Archive::new(input);
    let mut names = Rerooter::new(src);
    let mut count = 0u64;
    for entry in archive.entries()? {
        let mut entry = entry?;
        let kind = entry.header().entry_type();
        if matches!(kind, tar::EntryType::XGlobalHeader) {
            continue;
        }
        let path = names.map(&entry.path()?)?;
        let mut header = entry.header().clone();
        if kind.is_symlink() || kind.is_hard_link() {
            let target = entry.link_name()?.map(|t| t.into_owned()).unwrap_or_default();
            let target = if kind.is_hard_link() {
                names.map(&target)?
            } else {
                target
            };
            out.append_link(&mut header, &path, &target)?;
        } else {
            out.append_data(&mut header, &path, &mut entry)?;
        }
        count += 1;
    }
    if names.renamed {
        tracing::debug!(src = %src.display(), "re-rooted the daemon's archive under basename(src)");
    }
    let gz = out.into_inner()?;
    let mut buf = gz.finish()?;
    buf.flush()?;
    let file = buf.into_inner().map_err(|e| e.into_error())?;
    file.sync_data()?;
    Ok(count)
}

impl DockerExecutor {
    /// See [`argoexec_runtime::RuntimeExecutor::copy_file`].
    pub(crate) async fn copy_out(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        level: Option<u32>,
    ) -> Result<(), RuntimeError> {
        let id = self.require_id(ACTION, container).await?;
        let mut body = self.archive_body(&id, path_str(ACTION, container, src)?);
        // The first chunk carries the daemon's verdict (404 for a missing `src`): get it
        // before creating anything at `dest`.
        let first = match body.next().await {
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                return Err(self.not_found_hint(e.into_runtime(&self.socket, ACTION, container), src));
            }
            None => Bytes::new(),
        };

        let failure: Arc<Mutex<Option<RuntimeError>>> = Arc::new(Mutex::new(None));
        let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(CHANNEL_DEPTH);
        let pump = {
            let failure = Arc::clone(&failure);
            let socket = self.socket.clone();
            let name = container.to_string();
            tokio::spawn(async move {
                if tx.send(Ok(first)).await.is_err() {
                    return;
                }
                while let Some(chunk) = body.next().await {
                    let item = match chunk {
                        Ok(b) => Ok(b),
                        Err(e) => {
                            let re = e.into_runtime(&socket, ACTION, &name);
                            let msg = re.to_string();
                            if let Ok(mut slot) = failure.lock() {
                                *slot = Some(re);
                            }
                            Err(io::Error::other(msg))
                        }
                    };
                    let stop = item.is_err();
                    if tx.send(item).await.is_err() || stop {
                        return;
                    }
                }
            })
        };
        let _pump = AbortOnDrop(pump);

        let mut guard = DestGuard {
            path: dest.to_path_buf(),
            armed: true,
        };
        let opts = GzipOptions {
            level: level.unwrap_or(6).min(9),
            ..GzipOptions::default()
        };
        let (dest_owned, src_owned) = (dest.to_path_buf(), src.to_path_buf());
        let reader = ChunkReader {
            rx,
            cur: Bytes::new(),
        };
        let job = tokio::task::spawn_blocking(move || {
            let r = rewrite(reader, &dest_owned, &src_owned, opts);
            if r.is_err() {
                // Also here, not only in `DestGuard`: if the caller dropped the future before
                // this thread created the file, the guard's removal came too early.
                let _ = std::fs::remove_file(&dest_owned);
            }
            r
        });
        let result = match job.await {
            Ok(r) => r,
            Err(e) => Err(io::Error::other(format!("archive writer thread failed: {e}"))),
        };
        match result {
            Ok(0) => Err(error(
                ErrorKind::NotFound,
                ACTION,
                container,
                format!("the daemon returned an empty archive for {}", src.display()),
            )),
            Ok(entries) => {
                guard.armed = false;
                tracing::debug!(container, src = %src.display(), dest = %dest.display(), entries, "copied");
                Ok(())
            }
            Err(e) => {
                let download = failure.lock().ok().and_then(|mut s| s.take());
                Err(download.unwrap_or_else(|| {
                    io_err(
                        ACTION,
                        container,
                        &format!("writing {} as {}", src.display(), dest.display()),
                        e,
                    )
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reroot() {
        let mut r = Rerooter::new(Path::new("/tmp/out"));
        assert_eq!(r.map(Path::new("out")).ok(), Some(PathBuf::from("out")));
        assert_eq!(r.map(Path::new("out/a/b")).ok(), Some(PathBuf::from("out/a/b")));
        assert!(!r.renamed);

        let mut r = Rerooter::new(Path::new("/tmp/out"));
        assert_eq!(r.map(Path::new("./")).ok(), Some(PathBuf::from("out")));
        assert_eq!(r.map(Path::new("./x")).ok(), Some(PathBuf::from("out/x")));
        assert!(r.renamed);

        let mut r = Rerooter::new(Path::new("/tmp/out"));
        assert_eq!(r.map(Path::new("other/x")).ok(), Some(PathBuf::from("out/x")));
        assert!(r.map(Path::new("../evil")).is_err());
    }
}
