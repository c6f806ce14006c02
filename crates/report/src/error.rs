//! [`ReportError`]: what can go wrong while reporting, naming the action and the object.
//!
//! API failures carry the HTTP status code and the message of the server's `metav1.Status`
//! body (k8s-wire-protocols §2.8); the pod-annotation fallback names both failures.

use std::path::PathBuf;
use std::time::Duration;

use crate::incluster::InClusterError;

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
    /// The in-cluster configuration (service-account files, API server address) is unusable.
    #[error(transparent)]
    InCluster(#[from] InClusterError),
    /// The API server answered with an error status.
    #[error("{action} {object}: HTTP {code} {reason}: {message}")]
    Api {
        /// What was attempted (`create`, `patch`).
        action: &'static str,
        /// The object, e.g. `workflowtaskresult argo/my-wf-123`.
        object: String,
        /// The HTTP status code.
        code: u16,
        /// The Status `reason` (`Forbidden`, `NotFound`, …), else the HTTP reason phrase.
        reason: String,
        /// The Status `message`, else the start of the response body.
        message: String,
        /// How long the server asked us to wait (`Retry-After`, or the Status
        /// `details.retryAfterSeconds`), if it did.
        retry_after: Option<Duration>,
    },
    /// The request did not get an answer (connection refused or reset, time-out, DNS).
    #[error("{action} {object}: {message}")]
    Transport {
        /// What was attempted.
        action: &'static str,
        /// The object.
        object: String,
        /// The error chain.
        message: String,
    },
    /// The API server's certificate did not verify against the service account's `ca.crt`.
    #[error("{action} {object}: TLS verification of the API server failed: {message}")]
    Tls {
        /// What was attempted.
        action: &'static str,
        /// The object.
        object: String,
        /// The error chain.
        message: String,
    },
    /// The service account may not write task results, and the pod's controller (Argo
    /// v3.6+) reads outputs from nowhere else.
    #[error(
        "{source}; the pod's service account lacks the rule `{verb}` on `workflowtaskresults.argoproj.io` in \
         namespace {namespace:?}: bind Argo's executor role (create and patch on workflowtaskresults, see Argo's \
         workflow-rbac docs); Argo v3.6+ controllers read outputs only from task results, so there is no \
         pod-annotation fallback"
    )]
    MissingRule {
        /// The verb refused (`create` or `patch`).
        verb: &'static str,
        /// The namespace.
        namespace: String,
        /// The 403 answer.
        #[source]
        source: Box<ReportError>,
    },
    /// The task result was refused and the pod-annotation fallback failed too.
    #[error("{task_result}; fallback to the pod annotation failed too: {pod}")]
    Fallback {
        /// Why the task result could not be written.
        task_result: Box<ReportError>,
        /// Why the pod annotation could not be written.
        pod: Box<ReportError>,
    },
}

impl ReportError {
    /// The HTTP status code, for API errors.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// True for a 403 Forbidden answer (missing RBAC for the task result).
    pub fn is_forbidden(&self) -> bool {
        match self {
            Self::MissingRule { .. } => true,
            _ => self.status_code() == Some(403),
        }
    }
}

pub(crate) use argoexec_kube::chain;

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> ReportError {
        ReportError::Api {
            action: "create",
            object: "workflowtaskresult argo/n1".into(),
            code,
            reason: "Forbidden".into(),
            message: "denied".into(),
            retry_after: None,
        }
    }

    #[test]
    fn messages_name_status_and_both_failures() {
        assert_eq!(
            api(403).to_string(),
            "create workflowtaskresult argo/n1: HTTP 403 Forbidden: denied"
        );
        let both = ReportError::Fallback {
            task_result: Box::new(api(403)),
            pod: Box::new(ReportError::Api {
                action: "patch",
                object: "pod argo/p".into(),
                code: 404,
                reason: "NotFound".into(),
                message: "pods \"p\" not found".into(),
                retry_after: None,
            }),
        };
        let s = both.to_string();
        assert!(s.contains("HTTP 403 Forbidden: denied"), "{s}");
        assert!(s.contains("HTTP 404 NotFound: pods \"p\" not found"), "{s}");
        assert!(api(403).is_forbidden() && !api(404).is_forbidden());
    }

    #[test]
    fn chain_joins_sources() {
        let inner = std::io::Error::other("connection refused");
        #[derive(Debug, thiserror::Error)]
        #[error("client error")]
        struct Outer(#[source] std::io::Error);
        assert_eq!(chain(&Outer(inner)), "client error: connection refused");
    }
}
