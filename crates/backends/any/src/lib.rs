//! Backend selection by name: [`AnyRuntime`], one enum over every built backend.
//!
//! The binary holds this enum (no `dyn`), and it implements the seam by matching. All five
//! of Argo v3.3's executors are built.

use std::path::Path;
use std::time::Duration;

use argoexec_backend_docker::DockerExecutor;
use argoexec_backend_emissary::EmissaryExecutor;
use argoexec_backend_k8sapi::K8sApiExecutor;
use argoexec_backend_kubelet::{KubeletConfig, KubeletExecutor};
use argoexec_backend_pns::PnsExecutor;
use argoexec_core::{ExecutorEnv, ExecutorKind, PodPaths};
use argoexec_runtime::{
    Capabilities, ContainerExit, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use tokio_util::sync::CancellationToken;

/// Why no backend could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The backend could not be set up (e.g. the Docker socket does not answer).
    #[error(transparent)]
    Setup(#[from] RuntimeError),
}

/// Where the docker backend finds the Engine: the pod builder mounts the node's socket here.
pub const DOCKER_SOCKET: &str = "/var/run/docker.sock";

/// Every built backend.
#[derive(Debug, Clone)]
pub enum AnyRuntime {
    /// The emissary backend.
    Emissary(EmissaryExecutor),
    /// The docker backend.
    Docker(DockerExecutor),
    /// The kubelet backend (boxed: two clients and its configuration).
    Kubelet(Box<KubeletExecutor>),
    /// The k8sapi backend.
    K8sApi(K8sApiExecutor),
    /// The pns backend.
    Pns(PnsExecutor),
}

/// Work a backend wants done before anything else in `wait`, given the executor name from
/// `ARGO_CONTAINER_RUNTIME_EXECUTOR`: pns starts tracking processes.
pub fn prestart(executor: Option<&str>) {
    if executor == Some("pns") {
        argoexec_backend_pns::start_early();
    }
}

/// Choose and set up the backend for `kind`. The docker backend connects to
/// [`DOCKER_SOCKET`] (override: `ARGOEXEC_DOCKER_SOCKET`) and finds the pod's containers by
/// `env.namespace` (default `default`) and `env.pod_name`.
///
/// # Errors
/// [`SelectError::Setup`] when the backend cannot start.
pub async fn select(
    kind: ExecutorKind,
    env: &ExecutorEnv,
    paths: &PodPaths,
) -> Result<AnyRuntime, SelectError> {
    match kind {
        ExecutorKind::Emissary => Ok(AnyRuntime::Emissary(EmissaryExecutor::new(paths.clone()))),
        ExecutorKind::Docker => {
            let socket: std::path::PathBuf =
                std::env::var_os("ARGOEXEC_DOCKER_SOCKET").map_or_else(|| DOCKER_SOCKET.into(), Into::into);
            let ns = env.namespace.as_deref().unwrap_or("default");
            let d = DockerExecutor::connect(&socket, ns, &env.pod_name).await?;
            Ok(AnyRuntime::Docker(d))
        }
        ExecutorKind::Kubelet => {
            let config = KubeletConfig::from_env(|k| std::env::var(k).ok()).map_err(|e| {
                RuntimeError::new(
                    argoexec_runtime::ErrorKind::Fatal,
                    kind,
                    "configure",
                    "kubelet",
                    e.to_string(),
                )
            })?;
            let ns = env.namespace.as_deref().unwrap_or("default");
            let k = KubeletExecutor::new(config, paths, ns, &env.pod_name)?;
            Ok(AnyRuntime::Kubelet(Box::new(k)))
        }
        ExecutorKind::K8sApi => {
            let ns = env.namespace.as_deref().unwrap_or("default");
            Ok(AnyRuntime::K8sApi(K8sApiExecutor::new(paths, ns, &env.pod_name)?))
        }
        ExecutorKind::Pns => {
            let ns = env.namespace.as_deref().unwrap_or("default");
            Ok(AnyRuntime::Pns(PnsExecutor::new(paths, ns, &env.pod_name)?))
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $r:ident => $e:expr) => {
        match $self {
            AnyRuntime::Emissary($r) => $e,
            AnyRuntime::Docker($r) => $e,
            AnyRuntime::Kubelet($r) => $e,
            AnyRuntime::K8sApi($r) => $e,
            AnyRuntime::Pns($r) => $e,
        }
    };
}

impl RuntimeExecutor for AnyRuntime {
    fn kind(&self) -> ExecutorKind {
        dispatch!(self, r => r.kind())
    }
    fn capabilities(&self) -> Capabilities {
        dispatch!(self, r => r.capabilities())
    }
    async fn get_file_contents(&self, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        dispatch!(self, r => r.get_file_contents(container, path).await)
    }
    async fn copy_file(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        level: Option<u32>,
    ) -> Result<(), RuntimeError> {
        dispatch!(self, r => r.copy_file(container, src, dest, level).await)
    }
    async fn output_stream(&self, container: &str, kind: StreamKind) -> Result<OutputStream, RuntimeError> {
        dispatch!(self, r => r.output_stream(container, kind).await)
    }
    async fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        dispatch!(self, r => r.wait(containers, cancel).await)
    }
    async fn kill(&self, containers: &[String], grace: Duration) -> Result<(), RuntimeError> {
        dispatch!(self, r => r.kill(containers, grace).await)
    }
    async fn list_container_names(&self) -> Result<Vec<String>, RuntimeError> {
        dispatch!(self, r => r.list_container_names().await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn emissary_needs_nothing_to_start() {
        let p = PodPaths::default();
        let env = ExecutorEnv::parse(|k| (k == "ARGO_POD_NAME").then(|| "p".to_string())).unwrap();
        assert!(matches!(
            select(ExecutorKind::Emissary, &env, &p).await,
            Ok(AnyRuntime::Emissary(_))
        ));
    }
}
