//! The reporter seam, beside the runtime seam: [`OutputReporter`], the one trait the wait flow
//! reports through, and [`NodeResult`], what it reports. The flows are generic over it and
//! never know whether the result goes to the Kubernetes API (by an Argo version's contract,
//! `argoexec-report`) or to a file; they link no HTTP client, TLS or Kubernetes types.
//!
//! Each reporter names its own error type ([`OutputReporter::Error`]): the flows keep it as
//! the source of their error, unchanged, so nothing of the API's answer is lost.

use std::future::Future;

use argoexec_core::template::Outputs;

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
    /// Why a report could not be delivered.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Announce, before waiting for the main containers, that outputs will come (Argo
    /// v3.5's `InitializeOutput`). The default does nothing.
    ///
    /// # Errors
    /// When the announcement could not be delivered.
    fn start(&self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// Report the step's self-reported progress `N/M` while main runs. The default does
    /// nothing.
    ///
    /// # Errors
    /// When the progress could not be delivered.
    fn progress(&self, progress: &str) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let _ = progress;
        async { Ok(()) }
    }

    /// Report (create or update) the node result.
    ///
    /// # Errors
    /// When the report could not be delivered.
    fn report(&self, result: &NodeResult) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
