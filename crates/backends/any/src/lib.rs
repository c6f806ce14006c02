//! Backend selection by name: [`AnyRuntime`], one enum over every built backend.
//!
//! The binary holds this enum (no `dyn`), and it implements the seam by matching. Backends
//! that are not built yet answer [`select`] with a clear [`SelectError::NotBuilt`], naming
//! the executor and what works instead.

use std::path::Path;
use std::time::Duration;

use argoexec_backend_emissary::EmissaryExecutor;
use argoexec_core::{ExecutorKind, PodPaths};
use argoexec_runtime::{
    Capabilities, ContainerExit, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use tokio_util::sync::CancellationToken;

/// Why no backend could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The backend exists in Argo but not (yet) in this build.
    #[error(
        "the {0} executor is not built yet in this version of argoexec-rs; use emissary (ARGO_CONTAINER_RUNTIME_EXECUTOR=emissary)"
    )]
    NotBuilt(ExecutorKind),
}

/// Every built backend.
#[derive(Debug, Clone)]
pub enum AnyRuntime {
    /// The emissary backend.
    Emissary(EmissaryExecutor),
}

/// Choose the backend for `kind`.
///
/// # Errors
/// [`SelectError::NotBuilt`] for backends this build lacks.
pub fn select(kind: ExecutorKind, paths: &PodPaths) -> Result<AnyRuntime, SelectError> {
    match kind {
        ExecutorKind::Emissary => Ok(AnyRuntime::Emissary(EmissaryExecutor::new(paths.clone()))),
        other => Err(SelectError::NotBuilt(other)),
    }
}

macro_rules! dispatch {
    ($self:ident, $r:ident => $e:expr) => {
        match $self {
            AnyRuntime::Emissary($r) => $e,
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
    #[test]
    fn unbuilt_backends_say_so() {
        let p = PodPaths::default();
        assert!(matches!(
            select(ExecutorKind::Emissary, &p),
            Ok(AnyRuntime::Emissary(_))
        ));
        for k in [
            ExecutorKind::Docker,
            ExecutorKind::Kubelet,
            ExecutorKind::K8sApi,
            ExecutorKind::Pns,
        ] {
            let e = select(k, &p).unwrap_err().to_string();
            assert!(e.contains(k.as_str()) && e.contains("not built yet"), "{e}");
        }
    }
}
