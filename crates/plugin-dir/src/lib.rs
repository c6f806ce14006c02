//! `argoexec-plugin-dir`: an Argo v4.0+ artifact plugin of the project's own, for tests and
//! as an example of the contract (`docs/design/artifact-plugins.md` §5). It serves
//! `artifact.ArtifactService` (h2c) on a Unix socket and keeps artifacts as files and
//! directories under a root directory that each artifact's `plugin.configuration` names
//! ([`config`]: `root: /data`, and the test knob `refuse: [save, …]`); the key `k` is
//! `<root>/k`.
//!
//! * Load: copies the file, or recursively the directory, at the key to the request's
//!   `path` (creating its parents); a missing key fails, naming the key.
//! * Save: copies the request's `path` (a file or a directory) to the key, replacing what
//!   was there; written beside it first and renamed into place ([`store`]).
//! * Delete: removes the key recursively; a missing key is a success.
//! * ListObjects: every file under the key (or the key itself when it is a file) as keys
//!   relative to the root (`wf/pod/a.txt`), sorted; a missing key has none.
//! * IsDirectory: whether the key is a directory (a missing key is not).
//! * OpenStream: the file in 1 MiB `data` frames, then `is_end`; a directory or a missing key
//!   is an `error` frame.
//! * SaveStream: `UNIMPLEMENTED`; GetCapabilities: `supports_save_stream: false`.
//!
//! [`serve`] (and [`Listener`]) serve it on a socket until a shutdown future completes, then
//! remove the socket; the binary (`src/main.rs`) does that until SIGTERM or SIGINT.

pub mod config;
mod service;
pub mod store;

use std::future::Future;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::time::Duration;

use argoexec_artifact_plugin::wire::artifact_service_server::ArtifactServiceServer;
use tokio::net::{UnixListener, UnixStream};

pub use config::{Config, Op};
pub use service::{DirPlugin, FRAME_SIZE, Frames};

/// How long a shutdown waits for calls in flight before it stops serving anyway.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the plugin could not listen or serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The socket's directory could not be created.
    #[error("cannot create the directory {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Something other than a socket is at the socket's path.
    #[error("{} exists and is not a socket", .0.display())]
    NotASocket(PathBuf),
    /// The socket's path could not be looked at, or a stale socket removed.
    #[error("cannot clear {}: {source}", socket.display())]
    Stale {
        /// The socket path.
        socket: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The socket could not be bound.
    #[error("cannot listen on {}: {source}", socket.display())]
    Bind {
        /// The socket path.
        socket: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The server failed.
    #[error("serving on {}: {source}", socket.display())]
    Serve {
        /// The socket path.
        socket: PathBuf,
        /// The cause.
        source: tonic::transport::Error,
    },
    /// The socket could not be removed after serving.
    #[error("cannot remove {}: {source}", socket.display())]
    Remove {
        /// The socket path.
        socket: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// A bound socket, not yet served. Dropped unserved, it leaves the socket file behind (the
/// next [`Listener::bind`] replaces it).
#[derive(Debug)]
pub struct Listener {
    listener: std::os::unix::net::UnixListener,
    socket: PathBuf,
}

impl Listener {
    /// Create `socket`'s directory, remove a stale socket at `socket` and listen on it.
    ///
    /// # Errors
    /// [`ServeError::Dir`], [`ServeError::NotASocket`], [`ServeError::Stale`] or
    /// [`ServeError::Bind`].
    pub fn bind(socket: &Path) -> Result<Self, ServeError> {
        if let Some(dir) = socket.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| ServeError::Dir {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let stale = |source| ServeError::Stale {
            socket: socket.to_path_buf(),
            source,
        };
        match std::fs::symlink_metadata(socket) {
            Ok(m) if m.file_type().is_socket() => std::fs::remove_file(socket).map_err(stale)?,
            Ok(_) => return Err(ServeError::NotASocket(socket.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(stale(e)),
        }
        let bound = std::os::unix::net::UnixListener::bind(socket);
        let listener = bound
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|source| ServeError::Bind {
                socket: socket.to_path_buf(),
                source,
            })?;
        Ok(Self {
            listener,
            socket: socket.to_path_buf(),
        })
    }

    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Serve [`DirPlugin`] until `shutdown` completes, then stop accepting, let the calls in
    /// flight finish (for up to [`DRAIN_TIMEOUT`]) and remove the socket.
    ///
    /// # Errors
    /// [`ServeError::Bind`] when the socket cannot join the runtime, [`ServeError::Serve`]
    /// or [`ServeError::Remove`].
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let Self { listener, socket } = self;
        let listener = UnixListener::from_std(listener).map_err(|source| ServeError::Bind {
            socket: socket.clone(),
            source,
        })?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // In a block, so that the server (and the listener, if it still has it) is dropped
        // before the socket is removed.
        let served = {
            let server = tonic::transport::Server::builder().serve_with_incoming_shutdown(
                ArtifactServiceServer::new(DirPlugin),
                incoming(listener),
                async {
                    // Either a stop or the sender dropped: stop either way.
                    let _ = stopped.await;
                },
            );
            let mut server = pin!(server);
            tokio::select! {
                r = &mut server => r,
                () = shutdown => {
                    let _ = stop.send(());
                    // Calls still running after the time-out are abandoned.
                    tokio::time::timeout(DRAIN_TIMEOUT, &mut server).await.unwrap_or(Ok(()))
                }
            }
        };
        let removed = match std::fs::remove_file(&socket) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        served.map_err(|source| ServeError::Serve {
            socket: socket.clone(),
            source,
        })?;
        removed.map_err(|source| ServeError::Remove { socket, source })
    }
}

/// Serve [`DirPlugin`] on `socket` until `shutdown` completes (see [`Listener::bind`] and
/// [`Listener::serve`]).
///
/// # Errors
/// A [`ServeError`].
pub async fn serve(socket: &Path, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
    Listener::bind(socket)?.serve(shutdown).await
}

/// The connections `listener` accepts. After a failed accept (out of file descriptors, say)
/// it waits a little before the next, so that a lasting failure does not spin.
fn incoming(listener: UnixListener) -> impl futures::Stream<Item = io::Result<UnixStream>> {
    futures::stream::unfold(listener, |l| async move {
        let accepted = l.accept().await.map(|(s, _)| s);
        if accepted.is_err() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some((accepted, l))
    })
}
