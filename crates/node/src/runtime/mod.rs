//! The runtime seam under the local node: what the node asks of a container engine, in the
//! node's own terms, and nothing of any engine's. [`ContainerRuntime`] has krustlet's
//! provider shape: a sandbox (the pause role: the namespaces the pod's containers share),
//! create, start, wait for the exit (with the OOM verdict), stop with TERM → grace → KILL,
//! signal, remove, logs as a stream, and exec as an [`ExecHandle`] of channels. The pod
//! lifecycle, the status and the node server's wire protocols are written against it; the
//! Docker Engine is one implementation ([`docker::DockerRuntime`]).
//!
//! Futures are boxed (`BoxFuture`) so the node holds one `Arc<dyn ContainerRuntime>`
//! whichever engine it was started on.

pub mod containerd;
pub mod docker;
mod docker_io;
mod error;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::{mpsc, oneshot};

pub use error::RuntimeError;

/// The result of a runtime call.
pub type RuntimeResult<T> = Result<T, RuntimeError>;

/// What the node needs of a container engine.
pub trait ContainerRuntime: Send + Sync + std::fmt::Debug {
    /// The scheme of the container IDs in pod statuses (`docker`, `containerd`): a
    /// status's `containerID` is `<scheme>://<id>`.
    fn scheme(&self) -> &'static str;

    /// The configuration of a present image; `None` when the image is not present (no
    /// registry is reachable, nothing is pulled).
    fn image(&self, reference: &str) -> BoxFuture<'_, RuntimeResult<Option<ImageInfo>>>;

    /// Unpack the file system of a present image into the empty directory `into` (image
    /// volumes).
    fn export_image<'a>(&'a self, reference: &'a str, into: &'a Path) -> BoxFuture<'a, RuntimeResult<()>>;

    /// Create and start the pod's sandbox: the process that holds the namespaces its
    /// containers join. Returns its ID; on failure, the ID of whatever was left to remove.
    fn run_sandbox(&self, spec: SandboxSpec)
    -> BoxFuture<'_, Result<String, (Option<String>, RuntimeError)>>;

    /// Create container `spec` (not started); returns its ID.
    fn create(&self, spec: ContainerSpec) -> BoxFuture<'_, RuntimeResult<String>>;

    /// Start (or start again) the created container `id`. On failure, the exit code the
    /// engine recorded, if any, comes with the error.
    fn start<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), (RuntimeError, Option<i64>)>>;

    /// Wait for container `id` to stop running and say how it ended.
    fn wait<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Exit>;

    /// Whether the engine reports an OOM kill of `id` shortly after an exit that did not
    /// say so (engines that learn of OOM kills apart from exits, [`Exit::may_be_late_oom`]).
    fn late_oom<'a>(&'a self, _id: &'a str, _exit: &'a Exit) -> BoxFuture<'a, bool> {
        Box::pin(async { false })
    }

    /// Stop container `id`: TERM, then KILL after `grace`. Errors are logged, not returned:
    /// a container that is already gone is stopped.
    fn stop<'a>(&'a self, id: &'a str, grace: Duration) -> BoxFuture<'a, ()>;

    /// Send `signal` (`KILL`, `TERM`, …) to the first process of container `id`.
    fn signal<'a>(&'a self, id: &'a str, signal: &'a str) -> BoxFuture<'a, RuntimeResult<()>>;

    /// Remove containers (running or not, the sandbox too) and everything the engine kept
    /// for them; IDs already gone are skipped.
    fn remove<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, ()>;

    /// IDs of every container (running or not) whose label `key` is `value`.
    fn list<'a>(&'a self, key: &'a str, value: &'a str) -> BoxFuture<'a, RuntimeResult<Vec<String>>>;

    /// The log of container `id`: stdout and stderr interleaved as written.
    fn logs(&self, id: &str, request: LogRequest) -> BoxStream<'static, std::io::Result<Bytes>>;

    /// Run a process in the running container `id`.
    fn exec(&self, id: &str, request: ExecRequest) -> BoxFuture<'static, RuntimeResult<ExecHandle>>;
}

/// What the node reads of an image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageInfo {
    /// The engine's ID of the image (a content digest; a new build has a new one).
    pub id: String,
    /// Its configured `USER` (`""`: root), as the kubelet reads it for `runAsNonRoot`.
    pub user: String,
}

/// The pause role of a pod.
#[derive(Debug, Clone, Default)]
pub struct SandboxSpec {
    /// The runtime-level name.
    pub name: String,
    /// The image.
    pub image: String,
    /// Its command.
    pub command: Vec<String>,
    /// Labels (dockershim's, and the node's own).
    pub labels: HashMap<String, String>,
    /// The pod shares one process namespace (`shareProcessNamespace`): the sandbox must be a
    /// process, the namespace's first. Otherwise a runtime may keep the pod's IPC namespace
    /// without one (the containerd runtime does).
    pub share_pid: bool,
}

/// One container to create, in the node's terms.
#[derive(Debug, Clone, Default)]
pub struct ContainerSpec {
    /// The runtime-level name (dockershim's `k8s_<container>_<pod>_<ns>_<uid>_0`).
    pub name: String,
    /// The image.
    pub image: String,
    /// Replaces the image's entrypoint (Kubernetes `command`).
    pub entrypoint: Option<Vec<String>>,
    /// Replaces the image's command (Kubernetes `args`).
    pub cmd: Option<Vec<String>>,
    /// The environment, in order.
    pub env: Vec<(String, String)>,
    /// The working directory.
    pub working_dir: Option<String>,
    /// `uid`, `uid:gid` or `0:gid`; `None`: the image's user.
    pub user: Option<String>,
    /// Allocate a TTY.
    pub tty: bool,
    /// Keep stdin open.
    pub stdin: bool,
    /// Labels.
    pub labels: HashMap<String, String>,
    /// Bind mounts.
    pub mounts: Vec<BindMount>,
    /// The sandbox whose IPC namespace (and PID namespace, with `share_pid`) it joins.
    pub sandbox: String,
    /// Join the sandbox's PID namespace (`shareProcessNamespace`).
    pub share_pid: bool,
    /// `privileged`.
    pub privileged: bool,
    /// Capabilities added.
    pub cap_add: Vec<String>,
    /// Capabilities dropped.
    pub cap_drop: Vec<String>,
    /// A read-only root file system.
    pub read_only_rootfs: bool,
    /// Memory limit in bytes.
    pub memory: Option<i64>,
    /// CPU limit in billionths of a CPU.
    pub nano_cpus: Option<i64>,
}

/// A host path bound into a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindMount {
    /// The host path.
    pub source: PathBuf,
    /// The path in the container.
    pub target: String,
    /// Read-only.
    pub read_only: bool,
}

/// How a container ended, as far as the engine knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exit {
    /// The exit code (`-1` when the engine could not say).
    pub code: i64,
    /// The kernel killed it for memory.
    pub oom_killed: bool,
    /// It ran under a memory limit.
    pub memory_limited: bool,
    /// When it started, if the engine recorded it.
    pub started_at: Option<Timestamp>,
    /// When it ended, if the engine recorded it.
    pub finished_at: Option<Timestamp>,
    /// The engine's ID of its image.
    pub image_id: String,
}

/// Exit code of a process ended by SIGKILL.
const SIGKILL_EXIT: i64 = 128 + 9;

impl Exit {
    /// Whether the exit could be an OOM kill the engine has not recorded yet: SIGKILL under
    /// a memory limit, not marked as OOM.
    pub fn may_be_late_oom(&self) -> bool {
        self.memory_limited && self.code == SIGKILL_EXIT && !self.oom_killed
    }
}

/// Which part of a log to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogRequest {
    /// Keep streaming until the container stops.
    pub follow: bool,
    /// Only lines written at or after this Unix time.
    pub since: Option<i64>,
    /// Prefix each line with its RFC 3339 nanosecond timestamp.
    pub timestamps: bool,
    /// Only the last N lines.
    pub tail: Option<i64>,
}

/// A process to run in a container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecRequest {
    /// argv.
    pub command: Vec<String>,
    /// Attach stdin.
    pub stdin: bool,
    /// Attach stdout.
    pub stdout: bool,
    /// Attach stderr.
    pub stderr: bool,
    /// Allocate a TTY (stderr is then merged into stdout).
    pub tty: bool,
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// stdout (with a TTY: everything).
    Stdout,
    /// stderr.
    Stderr,
}

/// What a client sends to a running exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Bytes for stdin.
    Stdin(Bytes),
    /// End of stdin.
    Eof,
    /// A TTY resize (width, height).
    Resize(u16, u16),
}

/// How an exec ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEnd {
    /// The process exited with this code.
    Exited(i64),
    /// The process could not be started (the engine's words).
    NotStarted(String),
}

/// A running exec: its output, its input and its end. Dropping the handle abandons the
/// process (the engine ends it with the container, or when its stdin closes).
#[derive(Debug)]
pub struct ExecHandle {
    /// Output chunks of the streams asked for; ends when the process's output ends.
    pub output: mpsc::Receiver<(OutputStream, Bytes)>,
    /// Stdin bytes, its end, and resizes.
    pub input: mpsc::Sender<Input>,
    /// How it ended; sent once the output has ended.
    pub end: oneshot::Receiver<ExecEnd>,
}

impl ExecHandle {
    /// A handle of a process that has already ended (`end`), with no output.
    pub fn finished(end: ExecEnd) -> Self {
        let (handle, d) = Self::channels();
        let _ = d.end.send(end);
        handle
    }

    /// A handle and the other ends of its channels, for a runtime (or a test) to drive.
    pub fn channels() -> (Self, ExecDriver) {
        let (out_tx, output) = mpsc::channel(16);
        let (input, in_rx) = mpsc::channel(16);
        let (end_tx, end) = oneshot::channel();
        (
            Self { output, input, end },
            ExecDriver {
                output: out_tx,
                input: in_rx,
                end: end_tx,
            },
        )
    }
}

/// The runtime's side of an [`ExecHandle`].
#[derive(Debug)]
pub struct ExecDriver {
    /// Where output chunks go.
    pub output: mpsc::Sender<(OutputStream, Bytes)>,
    /// What the client sends.
    pub input: mpsc::Receiver<Input>,
    /// Where the end goes.
    pub end: oneshot::Sender<ExecEnd>,
}
