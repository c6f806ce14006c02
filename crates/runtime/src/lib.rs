//! The runtime seam: [`RuntimeExecutor`], the one trait every backend implements.
//!
//! The init/wait flows are generic over it and never know which backend runs. The method set
//! is Argo v3.3's `ContainerRuntimeExecutor` (get file contents, copy file, output stream,
//! wait, kill, list container names), addressed by container *name* as from v3.0, with a
//! [`Capabilities`] description so callers (and the pod builder's validation) can tell ahead
//! of time what a backend cannot do instead of discovering it from an error.
//!
//! Errors carry a [`ErrorKind`] the flows branch on (`NotFound` → skip an optional artifact,
//! `Unsupported` → use a parameter's default), never on message text.
//!
//! Beside it, the reporter seam ([`report::OutputReporter`]): where the wait flow's result goes.

pub mod report;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use argoexec_core::ExecutorKind;
use tokio::io::AsyncRead;
use tokio_util::sync::CancellationToken;

/// A byte stream of a container's output.
pub type OutputStream = Pin<Box<dyn AsyncRead + Send + Unpin>>;

/// Which output a caller wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// stdout only, when the backend can separate it (the script result).
    Stdout,
    /// stdout and stderr (log archival).
    Combined,
}

/// What a backend can and cannot do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Can read files of the main container's base image layer after it exited.
    pub base_layer_read: bool,
    /// [`StreamKind::Stdout`] really excludes stderr.
    pub stdout_only_stream: bool,
    /// Can signal containers whose image has no shell.
    pub kill_without_shell: bool,
}

/// Classification of a [`RuntimeError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file or container does not exist (optional outputs are skipped).
    NotFound,
    /// The backend cannot do this at all (e.g. base-layer reads on kubelet/k8sapi).
    Unsupported,
    /// A transient failure worth retrying.
    Transient,
    /// Permission denied by the runtime or API.
    Denied,
    /// The operation was cancelled.
    Cancelled,
    /// The file exists but cannot be used as asked: an output parameter that is a directory,
    /// a FIFO, a socket or device, or larger than the limit
    /// ([`argoexec_core::param_file`]). A parameter's default does not hide this.
    Invalid,
    /// Anything else.
    Fatal,
}

/// An error from a backend, naming the operation and container.
#[derive(Debug, thiserror::Error)]
#[error("{backend} executor: {action} {container:?}: {message}")]
pub struct RuntimeError {
    /// Classification.
    pub kind: ErrorKind,
    /// The backend.
    pub backend: ExecutorKind,
    /// The operation, e.g. "read file from", "wait for".
    pub action: &'static str,
    /// The container name.
    pub container: String,
    /// What went wrong.
    pub message: String,
    /// The underlying error, when there is one.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl RuntimeError {
    /// A new error without a source.
    pub fn new(
        kind: ErrorKind,
        backend: ExecutorKind,
        action: &'static str,
        container: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            backend,
            action,
            container: container.into(),
            message: message.into(),
            source: None,
        }
    }

    /// Attach a source error.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The classification.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Shorthand for `kind() == NotFound`.
    pub fn is_not_found(&self) -> bool {
        self.kind == ErrorKind::NotFound
    }
}

/// How a waited-for container ended, when the backend knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerExit {
    /// Container name.
    pub name: String,
    /// Exit code, if known.
    pub exit_code: Option<i32>,
}

/// The runtime seam. Methods return `Send` futures so flows can run on a multi-thread runtime.
pub trait RuntimeExecutor: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> ExecutorKind;

    /// What this backend can do.
    fn capabilities(&self) -> Capabilities;

    /// The full contents of a regular file on the named container's base layer (an output
    /// parameter), at most [`argoexec_core::param_file::MAX_PARAMETER_BYTES`]; reading never
    /// blocks on a FIFO.
    ///
    /// # Errors
    /// `NotFound` when missing, `Unsupported` when the backend cannot read base layers,
    /// `Invalid` when the path is not a regular file or is larger than the limit.
    fn get_file_contents(
        &self,
        container: &str,
        path: &Path,
    ) -> impl Future<Output = Result<Vec<u8>, RuntimeError>> + Send;

    /// Write to `dest` a gzip-compressed tar whose single top-level entry is `basename(src)`,
    /// at gzip `level` (`None` = default; backends may ignore the level for pre-made archives).
    ///
    /// # Errors
    /// `NotFound` when `src` does not exist (optional artifacts are then skipped).
    fn copy_file(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        level: Option<u32>,
    ) -> impl Future<Output = Result<(), RuntimeError>> + Send;

    /// The container's output, stdout-only or combined.
    ///
    /// # Errors
    /// `NotFound` when there is no output to read.
    fn output_stream(
        &self,
        container: &str,
        kind: StreamKind,
    ) -> impl Future<Output = Result<OutputStream, RuntimeError>> + Send;

    /// Block until every named container has terminated, tolerating containers that have not
    /// started yet or already exited. Returns early with `Cancelled` when `cancel` fires.
    ///
    /// # Errors
    /// `Cancelled`, or a backend failure.
    fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<Vec<ContainerExit>, RuntimeError>> + Send;

    /// Send SIGTERM, wait up to `grace`, then SIGKILL and wait again. Containers that already
    /// terminated are not an error.
    ///
    /// # Errors
    /// Every container that could not be stopped, aggregated.
    fn kill(
        &self,
        containers: &[String],
        grace: Duration,
    ) -> impl Future<Output = Result<(), RuntimeError>> + Send;

    /// Names of every container this backend can see in the pod.
    ///
    /// # Errors
    /// A backend failure.
    fn list_container_names(&self) -> impl Future<Output = Result<Vec<String>, RuntimeError>> + Send;
}
