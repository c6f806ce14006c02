//! [`PluginClient`]: one connection to one artifact plugin, as Argo's executor makes it
//! (`workflow/artifacts/plugin`):
//! * the socket is `/tmp/artifact-plugins/<name>/socket`; the client waits for it to appear,
//!   checking once a second for up to 120 s (the plugin's container may start after ours);
//! * plaintext HTTP/2 over the Unix socket, connected within the artifact's
//!   `connectionTimeoutSeconds` (5 s when 0), dialling again while the plugin refuses
//!   ([`crate::dial`]; grpc-go's back-off does this for Argo);
//! * no per-call deadline (a large upload takes what it takes) and no retries here;
//! * a call fails on a gRPC error, on `success: false` (Load, Save, Delete) or on a non-empty
//!   `error` (ListObjects, IsDirectory), with Argo's `plugin <name> <op> failed: …` wording.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

use crate::wire::{self, artifact_service_client::ArtifactServiceClient};

/// Where plugin `name` listens.
pub fn socket_path(name: &str) -> PathBuf {
    PathBuf::from("/tmp/artifact-plugins").join(name).join("socket")
}

/// The connection time-out when the artifact names none (Argo's default).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long to wait for the socket to appear, and how often to look (Argo: 120 × 1 s).
pub const SOCKET_WAIT: (u32, Duration) = (120, Duration::from_secs(1));

/// Why a plugin call failed.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The socket never appeared.
    #[error(
        "plugin {name} expected unix socket at {:?} but it does not exist after waiting for {secs} seconds",
        socket.display().to_string()
    )]
    NoSocket {
        /// The plugin.
        name: String,
        /// The socket path.
        socket: PathBuf,
        /// How long the client waited.
        secs: u64,
    },
    /// The socket could not be looked at.
    #[error("plugin {name}: cannot stat {}: {source}", socket.display())]
    Stat {
        /// The plugin.
        name: String,
        /// The socket path.
        socket: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The socket accepted no connection within the time-out.
    #[error("plugin {name}: cannot connect to {} within {timeout:?}: {source}", socket.display())]
    Connect {
        /// The plugin.
        name: String,
        /// The socket path.
        socket: PathBuf,
        /// The connection time-out.
        timeout: Duration,
        /// The last dial's error.
        source: std::io::Error,
    },
    /// Connected, but no HTTP/2 connection could be set up over the socket.
    #[error("plugin {name}: no HTTP/2 connection over {}: {source}", socket.display())]
    Handshake {
        /// The plugin.
        name: String,
        /// The socket path.
        socket: PathBuf,
        /// The cause.
        source: tonic::transport::Error,
    },
    /// The call itself failed (transport or gRPC status).
    #[error("plugin {name} {op} failed: {source}")]
    Call {
        /// The plugin.
        name: String,
        /// The operation (`load`, `save`, …).
        op: &'static str,
        /// The gRPC status.
        source: Box<tonic::Status>,
    },
    /// The plugin answered that it failed.
    #[error("plugin {name} {op} failed: {message}")]
    Refused {
        /// The plugin.
        name: String,
        /// The operation.
        op: &'static str,
        /// The plugin's `error`.
        message: String,
    },
}

/// A connected artifact plugin.
#[derive(Debug, Clone)]
pub struct PluginClient {
    name: String,
    client: ArtifactServiceClient<Channel>,
}

impl PluginClient {
    /// Wait for `socket` (see [`SOCKET_WAIT`]) and connect to plugin `name` within
    /// `timeout` ([`DEFAULT_CONNECT_TIMEOUT`] when zero), dialling again while the plugin
    /// is not listening yet ([`crate::dial`]).
    ///
    /// # Errors
    /// [`PluginError::NoSocket`], [`PluginError::Stat`], [`PluginError::Connect`] or
    /// [`PluginError::Handshake`].
    pub async fn connect(
        name: &str,
        socket: &Path,
        timeout: Duration,
        wait: (u32, Duration),
    ) -> Result<Self, PluginError> {
        wait_for_socket(name, socket, wait).await?;
        let timeout = if timeout.is_zero() {
            DEFAULT_CONNECT_TIMEOUT
        } else {
            timeout
        };
        let first = dial(name, socket, timeout)
            .await
            .map_err(|source| PluginError::Connect {
                name: name.to_string(),
                socket: socket.to_path_buf(),
                timeout,
                source,
            })?;
        // The first connection is the one dialled above; a reconnection dials again, with
        // the same patience.
        let first = std::sync::Mutex::new(Some(first));
        let (path, plugin) = (socket.to_path_buf(), name.to_string());
        let connector = tower::service_fn(move |_: tonic::transport::Uri| {
            let ready = first.lock().ok().and_then(|mut f| f.take());
            let (path, plugin) = (path.clone(), plugin.clone());
            async move {
                let stream = match ready {
                    Some(stream) => stream,
                    None => dial(&plugin, &path, timeout).await?,
                };
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        });
        // The URI is a placeholder: the connector always dials the socket.
        let channel = Endpoint::from_static("http://localhost")
            .connect_with_connector(connector)
            .await
            .map_err(|source| PluginError::Handshake {
                name: name.to_string(),
                socket: socket.to_path_buf(),
                source,
            })?;
        tracing::debug!(plugin = name, socket = %socket.display(), "connected to the artifact plugin");
        Ok(Self {
            name: name.to_string(),
            client: ArtifactServiceClient::new(channel),
        })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn call_err(&self, op: &'static str) -> impl FnOnce(tonic::Status) -> PluginError + '_ {
        move |s| PluginError::Call {
            name: self.name.clone(),
            op,
            source: Box::new(s),
        }
    }

    fn check(&self, op: &'static str, success: bool, error: String) -> Result<(), PluginError> {
        if success && error.is_empty() {
            return Ok(());
        }
        Err(PluginError::Refused {
            name: self.name.clone(),
            op,
            message: if error.is_empty() {
                "the plugin reported no success".into()
            } else {
                error
            },
        })
    }

    /// Have the plugin write `art` at `path` (a file or a directory).
    ///
    /// # Errors
    /// [`PluginError::Call`] or [`PluginError::Refused`].
    pub async fn load(&self, art: wire::Artifact, path: &Path) -> Result<(), PluginError> {
        let req = wire::LoadArtifactRequest {
            input_artifact: Some(art),
            path: path.display().to_string(),
        };
        let r = self
            .client
            .clone()
            .load(req)
            .await
            .map_err(self.call_err("load"))?
            .into_inner();
        self.check("load", r.success, r.error)
    }

    /// Have the plugin store what is at `path` (a file or a directory) as `art`.
    ///
    /// # Errors
    /// [`PluginError::Call`] or [`PluginError::Refused`].
    pub async fn save(&self, path: &Path, art: wire::Artifact) -> Result<(), PluginError> {
        let req = wire::SaveArtifactRequest {
            path: path.display().to_string(),
            output_artifact: Some(art),
        };
        let r = self
            .client
            .clone()
            .save(req)
            .await
            .map_err(self.call_err("save"))?
            .into_inner();
        self.check("save", r.success, r.error)
    }

    /// Have the plugin delete `art`.
    ///
    /// # Errors
    /// [`PluginError::Call`] or [`PluginError::Refused`].
    pub async fn delete(&self, art: wire::Artifact) -> Result<(), PluginError> {
        let req = wire::DeleteArtifactRequest { artifact: Some(art) };
        let r = self
            .client
            .clone()
            .delete(req)
            .await
            .map_err(self.call_err("delete"))?
            .into_inner();
        self.check("delete", r.success, r.error)
    }

    /// The objects under `art`'s key.
    ///
    /// # Errors
    /// [`PluginError::Call`] or [`PluginError::Refused`].
    pub async fn list_objects(&self, art: wire::Artifact) -> Result<Vec<String>, PluginError> {
        let req = wire::ListObjectsRequest { artifact: Some(art) };
        let r = self
            .client
            .clone()
            .list_objects(req)
            .await
            .map_err(self.call_err("list objects"))?
            .into_inner();
        self.check("list objects", true, r.error)?;
        Ok(r.objects)
    }

    /// Whether `art` is a directory.
    ///
    /// # Errors
    /// [`PluginError::Call`] or [`PluginError::Refused`].
    pub async fn is_directory(&self, art: wire::Artifact) -> Result<bool, PluginError> {
        let req = wire::IsDirectoryRequest { artifact: Some(art) };
        let r = self
            .client
            .clone()
            .is_directory(req)
            .await
            .map_err(self.call_err("is directory"))?
            .into_inner();
        self.check("is directory", true, r.error)?;
        Ok(r.is_directory)
    }

    /// `art`'s bytes, as the plugin streams them (until the end of the stream or `is_end`).
    ///
    /// # Errors
    /// [`PluginError::Call`], or [`PluginError::Refused`] for a frame with an `error`.
    pub async fn read_all(&self, art: wire::Artifact) -> Result<Vec<u8>, PluginError> {
        let req = wire::OpenStreamRequest { artifact: Some(art) };
        let mut stream = self
            .client
            .clone()
            .open_stream(req)
            .await
            .map_err(self.call_err("open stream"))?
            .into_inner();
        let mut out = Vec::new();
        while let Some(frame) = stream.message().await.map_err(self.call_err("open stream"))? {
            self.check("open stream", true, frame.error)?;
            out.extend_from_slice(&frame.data);
            if frame.is_end {
                break;
            }
        }
        Ok(out)
    }
}

/// Dial plugin `name` at `socket` within `timeout`, logging the first refusal.
async fn dial(name: &str, socket: &Path, timeout: Duration) -> std::io::Result<tokio::net::UnixStream> {
    let mut logged = false;
    let deadline = tokio::time::Instant::now() + timeout;
    crate::dial::dial(socket, deadline, |e| {
        if !std::mem::replace(&mut logged, true) {
            tracing::info!(plugin = name, socket = %socket.display(), error = %e, "the artifact plugin is not listening yet; dialling again");
        }
    })
    .await
}

/// Wait until `socket` exists, checking `wait.0` times `wait.1` apart.
async fn wait_for_socket(name: &str, socket: &Path, wait: (u32, Duration)) -> Result<(), PluginError> {
    let (tries, every) = wait;
    for i in 0..tries.max(1) {
        match std::fs::symlink_metadata(socket) {
            Ok(m) => {
                use std::os::unix::fs::FileTypeExt;
                if !m.file_type().is_socket() {
                    tracing::warn!(plugin = name, path = %socket.display(), "the plugin's socket path is not a socket");
                }
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if i == 0 {
                    tracing::info!(plugin = name, socket = %socket.display(), "waiting for the artifact plugin's socket");
                }
                tokio::time::sleep(every).await;
            }
            Err(source) => {
                return Err(PluginError::Stat {
                    name: name.to_string(),
                    socket: socket.to_path_buf(),
                    source,
                });
            }
        }
    }
    Err(PluginError::NoSocket {
        name: name.to_string(),
        socket: socket.to_path_buf(),
        secs: (every * tries).as_secs(),
    })
}
