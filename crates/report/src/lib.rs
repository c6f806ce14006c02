//! Output reporting behind one small trait, [`OutputReporter`].
//!
//! The wait flow hands its captured outputs to a reporter. This crate has the local sink,
//! [`FileReporter`], which writes the node result as JSON to a file (tests, local runs). The
//! API-server reporter (WorkflowTaskResult with the pod-annotation fallback) comes with the
//! local node and implements the same trait.

use std::future::Future;
use std::path::PathBuf;

use argoexec_core::template::Outputs;
use serde_json::json;

/// Errors of reporters.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Writing the local sink failed.
    #[error("write outputs to {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// What a step reports besides its outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeResult {
    /// Captured outputs.
    pub outputs: Outputs,
    /// The first error, if the step failed.
    pub message: Option<String>,
    /// Self-reported progress `N/M`, if any.
    pub progress: Option<String>,
}

/// Reports a step's result to whoever assesses the node.
pub trait OutputReporter: Send + Sync {
    /// Report (create or update) the node result.
    ///
    /// # Errors
    /// When the report could not be delivered.
    fn report(&self, result: &NodeResult) -> impl Future<Output = Result<(), ReportError>> + Send;
}

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
}

impl OutputReporter for FileReporter {
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
