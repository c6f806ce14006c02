//! The docker backend: the runtime seam over the Docker Engine API on the node's socket.
//!
//! For nodes whose kubelet runs containers through Docker (dockershim before Kubernetes 1.24,
//! cri-dockerd after). The pod builder mounts the node's `/var/run/docker.sock` into the wait
//! container for this executor only. Every operation is a Docker Engine API call (bollard), no
//! `docker` CLI and no shell in the executor image:
//!
//! | seam method | Docker API |
//! |---|---|
//! | container identity | `GET /containers/json?all` filtered by the pod's labels: UID and name, else namespace and name ([`identity`]) |
//! | get file contents | `GET /containers/{id}/archive` → the tar's single file (works after exit) |
//! | copy file | the same archive, streamed and re-written as `basename(src)` in a `.tar.gz` |
//! | output stream | `GET /containers/{id}/logs`, stdout-only or combined |
//! | wait | `GET /events` for the pod, re-evaluating `inspect` on each event; no container of the pod at all for the pod-lookup bound is `NotFound` |
//! | kill | `POST /containers/{id}/kill` SIGTERM, grace, SIGKILL |
//! | list names | the label-filtered listing |
//!
//! Unlike the emissary, this backend can read the main container's base image layer after it
//! exited and really separates stdout from stderr.
//!
//! Time-outs: bollard's request time-out covers request → response headers; response bodies
//! (archives, logs) additionally have an idle time-out ([`DockerExecutor::with_idle_timeout`]).

mod connect;
mod copy;
mod errors;
mod files;
pub mod identity;
mod kill;
mod logs;
mod stream;
mod wait;

use std::path::{Path, PathBuf};
use std::time::Duration;

use argoexec_core::ExecutorKind;
use argoexec_runtime::{
    Capabilities, ContainerExit, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use bollard::Docker;
use tokio_util::sync::CancellationToken;

/// Default time-out of a request until the daemon's response headers arrive.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default longest gap between two chunks of a response body (archive, log).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `wait` rides out a daemon that does not answer (a restart) before giving up.
pub const DEFAULT_OUTAGE_TOLERANCE: Duration = Duration::from_secs(120);
/// How long `wait` tolerates listings without any container of the pod (the wait container
/// itself is one, so an empty listing means a wrong identity or another runtime) before it
/// fails with `NotFound`.
pub const DEFAULT_POD_LOOKUP_TIMEOUT: Duration = Duration::from_secs(60);

pub use identity::{NoPodIdentity, PodRef};

/// The docker backend for one pod.
#[derive(Debug, Clone)]
pub struct DockerExecutor {
    docker: Docker,
    socket: PathBuf,
    pod: PodRef,
    idle_timeout: Duration,
    outage: Duration,
    lookup: Duration,
}

impl DockerExecutor {
    /// Connect to the daemon on the unix socket `socket` (e.g. `/var/run/docker.sock`) and
    /// agree on an API version (an older daemon, such as Engine 20.10 with API 1.41, is
    /// spoken to at its version), for the containers of `pod`.
    ///
    /// # Errors
    /// `Transient` when the socket is missing or the daemon does not answer, `Denied` when it
    /// refuses, `Fatal` otherwise.
    pub async fn connect(socket: &Path, pod: PodRef) -> Result<Self, RuntimeError> {
        let docker = connect::connect(socket, DEFAULT_REQUEST_TIMEOUT).await?;
        Ok(Self {
            docker,
            socket: socket.to_path_buf(),
            pod,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            outage: DEFAULT_OUTAGE_TOLERANCE,
            lookup: DEFAULT_POD_LOOKUP_TIMEOUT,
        })
    }

    /// Set how long `wait` tolerates listings without any container of the pod before it
    /// fails with `NotFound` (default [`DEFAULT_POD_LOOKUP_TIMEOUT`]). A pod that has
    /// containers, but not yet the one waited for, is waited for without a bound.
    #[must_use]
    pub fn with_pod_lookup_timeout(mut self, bound: Duration) -> Self {
        self.lookup = bound;
        self
    }

    /// Set how long `wait` keeps retrying while the daemon does not answer (default
    /// [`DEFAULT_OUTAGE_TOLERANCE`]): a daemon restart shorter than this is ridden out.
    #[must_use]
    pub fn with_outage_tolerance(mut self, outage: Duration) -> Self {
        self.outage = outage;
        self
    }

    /// Set the longest gap between two chunks of a response body before the read fails as
    /// `Transient` (default [`DEFAULT_IDLE_TIMEOUT`]).
    #[must_use]
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// Set the time-out of each request until its response headers arrive (default
    /// [`DEFAULT_REQUEST_TIMEOUT`]).
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.docker = self.docker.with_timeout(timeout);
        self
    }

    /// The idle time-out of response bodies.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The API version agreed with the daemon, e.g. `"1.41"`.
    pub fn api_version(&self) -> String {
        self.docker.client_version().to_string()
    }

    /// The underlying bollard client (at the negotiated API version), e.g. for tools and
    /// tests that create containers.
    pub fn client(&self) -> &Docker {
        &self.docker
    }

    /// The pod this backend looks at.
    pub fn pod(&self) -> &PodRef {
        &self.pod
    }
}

impl RuntimeExecutor for DockerExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Docker
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            base_layer_read: true,
            stdout_only_stream: true,
            kill_without_shell: true,
        }
    }

    async fn get_file_contents(&self, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        self.read_file(container, path).await
    }

    async fn copy_file(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        level: Option<u32>,
    ) -> Result<(), RuntimeError> {
        self.copy_out(container, src, dest, level).await
    }

    async fn output_stream(&self, container: &str, kind: StreamKind) -> Result<OutputStream, RuntimeError> {
        self.logs_of(container, kind).await
    }

    async fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        self.wait_all(containers, cancel).await
    }

    async fn kill(&self, containers: &[String], grace: Duration) -> Result<(), RuntimeError> {
        self.stop(containers, grace).await
    }

    async fn list_container_names(&self) -> Result<Vec<String>, RuntimeError> {
        let mut names: Vec<String> = self
            .pod_containers("list containers of", "")
            .await?
            .into_keys()
            .collect();
        names.sort();
        Ok(names)
    }
}
