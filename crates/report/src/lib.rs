//! Output reporting behind the reporter seam, [`OutputReporter`] (defined in
//! `argoexec-runtime`, beside the runtime seam, so the flows need no HTTP client).
//!
//! The wait flow hands its captured outputs to a reporter. Two implement the trait:
//! - [`FileReporter`]: the local sink, the node result as JSON in a file (tests, local runs,
//!   `argoexec run` on the local node);
//! - [`ApiReporter`]: the Kubernetes API server, by the contract of the pod's Argo version
//!   (v3.3–v4.1): a `WorkflowTaskResult` named after the node, the v3.5+
//!   `report-outputs-completed` handshake ([`OutputReporter::start`] marks it `"false"`,
//!   [`OutputReporter::report`] `"true"`), progress ticks, retries with Argo's backoff, and
//!   for ≤ v3.5 pods the pod-annotation patch when task results are forbidden. Its
//!   configuration is discovered in-cluster ([`InClusterConfig`]).
//!
//! [`AnyReporter`] holds either, for a binary that picks one at run time.
//!
//! Modules: [`api`] (the API reporter), [`taskresult`] (its request bodies), [`incluster`]
//! (address, CA, token), [`retry`] (backoff and classification), [`error`].

use std::path::PathBuf;

use serde_json::json;

pub mod api;
pub mod error;
/// In-cluster configuration, from [`argoexec_kube`] (re-exported for existing callers).
pub use argoexec_kube::incluster;
pub mod retry;
pub mod taskresult;

pub use api::ApiReporter;
pub use error::ReportError;
pub use incluster::{InClusterConfig, InClusterError, TokenSource};
pub use taskresult::{Owner, TaskResultTarget};

/// The reporter seam lives in `argoexec-runtime`, beside the runtime seam; re-exported here.
pub use argoexec_runtime::report::{NodeResult, OutputReporter};

/// Writes the node result as JSON to a file, atomically.
#[derive(Debug, Clone)]
pub struct FileReporter {
    path: PathBuf,
}

impl FileReporter {
    /// A reporter writing to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file written.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl OutputReporter for FileReporter {
    type Error = ReportError;

    async fn report(&self, result: &NodeResult) -> Result<(), ReportError> {
        let mut doc = json!({ "outputs": result.outputs });
        if let Some(m) = &result.message {
            doc["message"] = json!(m);
        }
        if let Some(p) = &result.progress {
            doc["progress"] = json!(p);
        }
        let body = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        let path = self.path.clone();
        let err = |source| ReportError::Write {
            path: path.clone(),
            source,
        };
        if let Some(parent) = self.path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(err)?;
        }
        let p2 = self.path.clone();
        tokio::task::spawn_blocking(move || argoexec_core::protocol::write_atomic(&p2, &body, 0o644))
            .await
            .map_err(|e| err(std::io::Error::other(e.to_string())))?
            .map_err(err)
    }
}

/// Either reporter, chosen at run time.
#[derive(Debug)]
pub enum AnyReporter {
    /// The local JSON file.
    File(FileReporter),
    /// The API server.
    Api(Box<ApiReporter>),
}

impl AnyReporter {
    /// Where reports go, for logs: the file path, or the task result.
    pub fn describe(&self) -> String {
        match self {
            Self::File(f) => format!("file {}", f.path().display()),
            Self::Api(a) => a.target().describe(),
        }
    }
}

impl OutputReporter for AnyReporter {
    type Error = ReportError;

    async fn start(&self) -> Result<(), ReportError> {
        match self {
            Self::File(f) => f.start().await,
            Self::Api(a) => a.start().await,
        }
    }

    async fn progress(&self, progress: &str) -> Result<(), ReportError> {
        match self {
            Self::File(f) => f.progress(progress).await,
            Self::Api(a) => a.progress(progress).await,
        }
    }

    async fn report(&self, result: &NodeResult) -> Result<(), ReportError> {
        match self {
            Self::File(f) => f.report(result).await,
            Self::Api(a) => a.report(result).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[tokio::test]
    async fn writes_json() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/outputs.json");
        let mut r = NodeResult::default();
        r.outputs.result = Some("hi".into());
        r.message = Some("boom".into());
        FileReporter::new(&p).report(&r).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(v["outputs"]["result"], "hi");
        assert_eq!(v["message"], "boom");
    }
}
