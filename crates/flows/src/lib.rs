//! The executor flows: `argoexec init` ([`init`]), `argoexec wait` ([`wait`]) and the
//! init-less layout's `argoexec supervisor` ([`supervisor`]), which does both.
//!
//! Both are generic over the runtime seam ([`argoexec_runtime::RuntimeExecutor`]) and the
//! reporter ([`argoexec_runtime::report::OutputReporter`]); they never know which backend runs. The
//! output algorithms (parameters, artifacts, the script result, log archival) live in
//! [`outputs`], one module each, so the wait flow reads as the sequence Argo runs.

pub mod init;
pub mod outputs;
pub mod progress;
pub mod supervisor;
pub mod wait;

use std::path::PathBuf;

use argoexec_core::{ExecutorEnv, PodPaths, Template};

/// Everything a flow needs to know about the step it runs in.
#[derive(Debug, Clone)]
pub struct StepContext {
    /// In-pod path layout.
    pub paths: PodPaths,
    /// The parsed environment contract.
    pub env: ExecutorEnv,
    /// The resolved template.
    pub template: Template,
    /// Where the template came from (init writes `/var/run/argo/template` for an offloaded
    /// one, so the other containers find it).
    pub template_source: argoexec_core::env::TemplateSource,
    /// Artifact transfer settings (part size, parallelism, retries, secrets mount).
    pub artifacts: std::sync::Arc<argoexec_artifacts::Settings>,
}

/// Errors of the flows. Each names the artifact, parameter or file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// A runtime-seam call failed.
    #[error(transparent)]
    Runtime(#[from] argoexec_runtime::RuntimeError),
    /// An input artifact could not be loaded.
    #[error("input artifact {name:?}: {message}")]
    InputArtifact {
        /// Artifact name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// An output artifact could not be saved.
    #[error("output artifact {name:?}: {message}")]
    OutputArtifact {
        /// Artifact name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// An output parameter could not be read and had no default.
    #[error("output parameter {name:?}: {message}")]
    OutputParameter {
        /// Parameter name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// A local file operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// The operation.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Reporting the outputs failed.
    #[error(transparent)]
    Report(Box<dyn std::error::Error + Send + Sync>),
    /// The step was stopped (deadline or SIGTERM); the message is the node message.
    #[error("{0}")]
    Stopped(String),
    /// A step of a larger phase failed (the supervisor's preparation: Argo's wording for the
    /// step, then the cause).
    #[error("{step}: {source}")]
    Step {
        /// The step, e.g. `failed to load non-plugin input artifacts`.
        step: &'static str,
        /// The cause.
        #[source]
        source: Box<FlowError>,
    },
    /// A main container failed to be killed.
    #[error("kill main containers: {0}")]
    Kill(String),
}

impl FlowError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// Run a blocking closure on tokio's blocking pool, mapping a panic to an I/O error.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, FlowError> + Send + 'static,
) -> Result<T, FlowError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(FlowError::io(
            "run blocking task",
            "-",
            std::io::Error::other(e.to_string()),
        ))
    })
}
