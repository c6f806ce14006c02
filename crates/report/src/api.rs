//! [`ApiReporter`]: the step's result as a `WorkflowTaskResult` on the API server, speaking
//! the contract of the controller version that built the pod ([`ArgoVersion`], inferred by
//! the executor from its environment).
//!
//! - [`OutputReporter::start`] (called by the wait flow before it waits for main) creates
//!   the task result with no outputs and `report-outputs-completed: "false"`, so the
//!   controller knows outputs are coming (v3.5+ `InitializeOutput`; v3.3 pods skip it).
//! - [`OutputReporter::progress`] merge-patches `progress` (v3.6+) or, for ≤ v3.5 pods, the
//!   pod's `workflows.argoproj.io/progress` annotation.
//! - [`OutputReporter::report`] merge-patches `outputs`, `message`, `progress` and the label
//!   `"true"` (`ReportOutputs` + `FinalizeOutput` in one write).
//!
//! Writes per step: the create, then one patch (two in all; v3.3 pods: one), whatever the
//! concurrency; progress ticks add a patch each, only when the progress changed. The first
//! write is a `POST`; a 409 AlreadyExists turns it into a `PATCH` with
//! `application/merge-patch+json`; once this reporter has written the object every later
//! write patches directly (404 → create again). Each write is retried as a whole on
//! transient failures ([`crate::retry`]): five attempts for ≤ v3.5 pods, forever for v3.6+
//! ([`Backoff::TASK_RESULT_FOREVER`], as Argo v3.7.1+), every retry logged; each request has
//! a time-out.
//!
//! On 403 Forbidden (the service account may not write task results): pods of ≤ v3.5
//! merge-patch the pod's `workflows.argoproj.io/outputs` (and `progress`) annotations
//! instead, as their controllers read them; the handshake label has no equivalent there, so
//! `start` only logs the 403. Pods of v3.6+ get no fallback (their controllers never read
//! the annotation, AW#13100): `start` warns naming the missing rule and `report` fails with
//! [`ReportError::MissingRule`].

use std::time::Duration;

use argoexec_core::{ArgoVersion, ExecutorEnv};
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, StatusCode};

use crate::error::chain;
use crate::incluster::{InClusterConfig, TokenSource};
use crate::retry::{Backoff, parse_retry_after, retry};
use crate::taskresult::{TaskResultTarget, pod_annotation_patch, pod_progress_patch, progress_patch};
use crate::{NodeResult, OutputReporter, ReportError};

/// `Content-Type` of a JSON merge patch (RFC 7386).
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// Default time-out of one request (connect, send, read the answer).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Reports through the Kubernetes API server; see the module docs.
pub struct ApiReporter {
    client: kube::Client,
    token: TokenSource,
    target: TaskResultTarget,
    version: ArgoVersion,
    backoff: Backoff,
    request_timeout: Duration,
    /// This reporter created or patched the task result already: the next write patches
    /// first (one request instead of create → 409 → patch).
    exists: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for ApiReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiReporter")
            .field("target", &self.target)
            .field("version", &self.version)
            .field("token", &self.token)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

/// How an upsert ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upserted {
    Created,
    Patched,
}

impl ApiReporter {
    /// Connect to the configured API server and report for the step `env` describes, in
    /// `ARGO_NAMESPACE` or else the service account's namespace, by the contract of
    /// `env.argo_version`. Call inside a Tokio runtime.
    ///
    /// # Errors
    /// [`ReportError::InCluster`] when the namespace, `ca.crt` or the token is unusable.
    pub fn connect(config: &InClusterConfig, env: &ExecutorEnv) -> Result<Self, ReportError> {
        let namespace = match &env.namespace {
            Some(ns) => ns.clone(),
            None => config.namespace()?,
        };
        let (client, token) = config.connect()?;
        Ok(
            Self::new(client, token, TaskResultTarget::from_env(env, namespace))
                .with_version(env.argo_version),
        )
    }

    /// A reporter over an existing client, for the newest contract.
    pub fn new(client: kube::Client, token: TokenSource, target: TaskResultTarget) -> Self {
        Self {
            client,
            token,
            target,
            version: ArgoVersion::NEWEST,
            backoff: Backoff::TASK_RESULT_FOREVER,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            exists: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Speak the contract of `version` (handshake, fallback, retries); resets the backoff
    /// to that version's.
    pub fn with_version(mut self, version: ArgoVersion) -> Self {
        self.version = version;
        self.backoff = if version.retries_forever() {
            Backoff::TASK_RESULT_FOREVER
        } else {
            Backoff::TASK_RESULT
        };
        self
    }

    /// The contract spoken.
    pub fn version(&self) -> ArgoVersion {
        self.version
    }

    /// Use another backoff (tests).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Use another per-request time-out.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// What this reporter writes to.
    pub fn target(&self) -> &TaskResultTarget {
        &self.target
    }

    /// Create the task result, or merge-patch it when it exists; retried as a whole.
    async fn upsert(&self, result: Option<&NodeResult>) -> Result<Upserted, ReportError> {
        let create = self.target.create_body(result);
        let patch = self.target.patch_body(result);
        self.upsert_bodies(&create, &patch, &self.backoff).await
    }

    /// [`Self::upsert`] with given bodies and backoff.
    async fn upsert_bodies(
        &self,
        create: &serde_json::Value,
        patch: &serde_json::Value,
        backoff: &Backoff,
    ) -> Result<Upserted, ReportError> {
        let create = serde_json::to_vec(create).unwrap_or_default();
        let patch = serde_json::to_vec(patch).unwrap_or_default();
        let object = self.target.describe();
        let (collection, item) = (self.target.collection_path(), self.target.item_path());
        let (create, patch, object, collection, item) = (&create, &patch, &object, &collection, &item);
        let known = self.exists.load(std::sync::atomic::Ordering::Relaxed);
        let done = retry(backoff, "write the task result", move || async move {
            if known {
                match self
                    .send(Method::PATCH, item, MERGE_PATCH, patch.clone(), "patch", object)
                    .await
                {
                    Ok(()) => return Ok(Upserted::Patched),
                    // Deleted meanwhile: create it again below.
                    Err(ReportError::Api { code: 404, .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            let created = self
                .send(
                    Method::POST,
                    collection,
                    "application/json",
                    create.clone(),
                    "create",
                    object,
                )
                .await;
            match created {
                Ok(()) => Ok(Upserted::Created),
                Err(ReportError::Api { code: 409, .. }) => self
                    .send(Method::PATCH, item, MERGE_PATCH, patch.clone(), "patch", object)
                    .await
                    .map(|()| Upserted::Patched),
                Err(e) => Err(e),
            }
        })
        .await;
        if done.is_ok() {
            self.exists.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        done
    }

    /// The fallback: merge-patch the pod's annotations with `body`.
    async fn patch_pod(&self, body: &serde_json::Value) -> Result<(), ReportError> {
        let body = serde_json::to_vec(body).unwrap_or_default();
        let (path, object) = (self.target.pod_path(), self.target.describe_pod());
        let (path, object, body) = (&path, &object, &body);
        retry(&self.backoff, "annotate the pod", move || {
            self.send(Method::PATCH, path, MERGE_PATCH, body.clone(), "patch", object)
        })
        .await
    }

    /// One request: bearer token, JSON in and out, error statuses as [`ReportError::Api`].
    async fn send(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
        action: &'static str,
        object: &str,
    ) -> Result<(), ReportError> {
        let auth = self.token.header()?;
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header(CONTENT_TYPE, content_type)
            .header(ACCEPT, "application/json")
            .header(AUTHORIZATION, auth)
            .body(kube::client::Body::from(body))
            .map_err(|e| transport(action, object, &e))?;
        let exchange = async {
            let res = self
                .client
                .send(req)
                .await
                .map_err(|e| transport(action, object, &e))?;
            let status = res.status();
            let retry_after = res
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let bytes = res
                .into_body()
                .collect_bytes()
                .await
                .map_err(|e| transport(action, object, &e))?;
            if status.is_success() {
                tracing::debug!(action, object, code = status.as_u16(), "API request done");
                Ok(())
            } else {
                Err(api_error(action, object, status, retry_after, &bytes))
            }
        };
        match tokio::time::timeout(self.request_timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(ReportError::Transport {
                action,
                object: object.to_string(),
                message: format!("no answer within {:?}", self.request_timeout),
            }),
        }
    }
}

impl ApiReporter {
    /// A 403 of a v3.6+ pod, turned into the error naming the missing rule.
    fn missing_rule(&self, err: ReportError) -> ReportError {
        let verb = match &err {
            ReportError::Api { action: "patch", .. } => "patch",
            _ => "create",
        };
        ReportError::MissingRule {
            verb,
            namespace: self.target.namespace.clone(),
            source: Box::new(err),
        }
    }
}

impl OutputReporter for ApiReporter {
    type Error = ReportError;

    async fn start(&self) -> Result<(), ReportError> {
        if !self.version.has_report_handshake() {
            return Ok(());
        }
        match self.upsert(None).await {
            Ok(how) => {
                tracing::info!(
                    object = %self.target.describe(),
                    ?how,
                    "task result marked report-outputs-completed=false"
                );
                Ok(())
            }
            Err(e) if e.is_forbidden() && self.version.has_annotation_fallback() => {
                tracing::warn!(
                    error = %e,
                    "task results are forbidden for this service account; outputs will go to the \
                     pod annotation, where the report-outputs-completed handshake does not apply"
                );
                Ok(())
            }
            Err(e) if e.is_forbidden() => {
                // The final report fails with the same error; say it now, while main runs.
                tracing::warn!(error = %self.missing_rule(e), "outputs cannot be reported");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    async fn progress(&self, progress: &str) -> Result<(), ReportError> {
        if self.version.has_annotation_fallback() {
            return self.patch_pod(&pod_progress_patch(progress)).await;
        }
        let mut create = self.target.create_body(None);
        create["progress"] = serde_json::json!(progress);
        // Progress is advisory: a tick that cannot be written gives way to the next one.
        self.upsert_bodies(&create, &progress_patch(progress), &Backoff::TASK_RESULT)
            .await
            .map(|_| ())
    }

    async fn report(&self, result: &NodeResult) -> Result<(), ReportError> {
        let err = match self.upsert(Some(result)).await {
            Ok(how) => {
                tracing::info!(object = %self.target.describe(), ?how, "reported outputs");
                return Ok(());
            }
            Err(e) if e.is_forbidden() && self.version.has_annotation_fallback() => e,
            Err(e) if e.is_forbidden() => return Err(self.missing_rule(e)),
            Err(e) => return Err(e),
        };
        tracing::warn!(
            error = %err,
            pod = %self.target.describe_pod(),
            "task results are forbidden; falling back to the pod annotation \
             (no report-outputs-completed handshake there)"
        );
        match self.patch_pod(&pod_annotation_patch(result)).await {
            Ok(()) => {
                tracing::info!(pod = %self.target.describe_pod(), "reported outputs in the pod annotation");
                Ok(())
            }
            Err(pod) => Err(ReportError::Fallback {
                task_result: Box::new(err),
                pod: Box::new(pod),
            }),
        }
    }
}

/// A request that got no HTTP answer: TLS verification failures apart (not retried), a
/// transport error (retried).
fn transport(action: &'static str, object: &str, err: &(dyn std::error::Error + 'static)) -> ReportError {
    let message = chain(err);
    let object = object.to_string();
    if is_tls_verification_failure(err) {
        ReportError::Tls {
            action,
            object,
            message,
        }
    } else {
        ReportError::Transport {
            action,
            object,
            message,
        }
    }
}

/// Whether a rustls certificate error is somewhere in the chain (also inside `io::Error`s,
/// whose `source()` skips the error they wrap).
fn is_tls_verification_failure(err: &(dyn std::error::Error + 'static)) -> bool {
    // The in-cluster verifier (`argoexec_kube::tls::NameFallbackVerifier`) reports its
    // failure, naming the CA file and every name tried, as `General("x509: …")`.
    let is_cert = |e: &(dyn std::error::Error + 'static)| match e.downcast_ref::<rustls::Error>() {
        Some(
            rustls::Error::InvalidCertificate(_)
            | rustls::Error::NoCertificatesPresented
            | rustls::Error::UnsupportedNameType,
        ) => true,
        Some(rustls::Error::General(m)) => m.starts_with("x509:"),
        _ => false,
    };
    let mut cur = Some(err);
    while let Some(e) = cur {
        if is_cert(e) {
            return true;
        }
        if let Some(inner) = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref())
            && is_tls_verification_failure(inner)
        {
            return true;
        }
        cur = e.source();
    }
    false
}

/// An error status as [`ReportError::Api`], from the `metav1.Status` body when there is one.
fn api_error(
    action: &'static str,
    object: &str,
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
) -> ReportError {
    let parsed: Option<kube::core::Status> = serde_json::from_slice(body).ok();
    let (reason, message, details_wait) = match parsed {
        Some(s) => (
            s.reason,
            s.message,
            s.details
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(u64::from(s))),
        ),
        None => (String::new(), String::new(), None),
    };
    let reason = if reason.is_empty() {
        status.canonical_reason().unwrap_or("").to_string()
    } else {
        reason
    };
    let message = if message.is_empty() {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        if text.is_empty() {
            "(empty body)".to_string()
        } else {
            text.chars().take(512).collect()
        }
    } else {
        message
    };
    ReportError::Api {
        action,
        object: object.to_string(),
        code: status.as_u16(),
        reason,
        message,
        retry_after: retry_after.or(details_wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bodies_become_api_errors() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"workflowtaskresults.argoproj.io is forbidden: User \"system:serviceaccount:argo:default\" cannot create resource","reason":"Forbidden",
            "details":{"group":"argoproj.io","kind":"workflowtaskresults"},"code":403}"#;
        let e = api_error(
            "create",
            "workflowtaskresult argo/n1",
            StatusCode::FORBIDDEN,
            None,
            body,
        );
        assert!(e.is_forbidden());
        let s = e.to_string();
        assert!(
            s.starts_with("create workflowtaskresult argo/n1: HTTP 403 Forbidden: workflowtaskresults.argoproj.io is forbidden"),
            "{s}"
        );
        let body = br#"{"kind":"Status","status":"Failure","message":"slow down","reason":"TooManyRequests","details":{"retryAfterSeconds":2},"code":429}"#;
        let e = api_error("patch", "x", StatusCode::TOO_MANY_REQUESTS, None, body);
        assert!(matches!(e, ReportError::Api { retry_after: Some(d), .. } if d == Duration::from_secs(2)));
        let e = api_error(
            "patch",
            "x",
            StatusCode::TOO_MANY_REQUESTS,
            Some(Duration::from_secs(5)),
            body,
        );
        assert!(
            matches!(e, ReportError::Api { retry_after: Some(d), .. } if d == Duration::from_secs(5)),
            "the header wins"
        );
        let e = api_error("patch", "x", StatusCode::BAD_GATEWAY, None, b"upstream down\n");
        assert_eq!(e.to_string(), "patch x: HTTP 502 Bad Gateway: upstream down");
        let e = api_error("patch", "x", StatusCode::SERVICE_UNAVAILABLE, None, b"");
        assert_eq!(
            e.to_string(),
            "patch x: HTTP 503 Service Unavailable: (empty body)"
        );
    }

    #[test]
    fn tls_failures_are_recognised_inside_io_errors() {
        let cert = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, cert);
        #[derive(Debug, thiserror::Error)]
        #[error("client error (Connect)")]
        struct Wrap(#[source] std::io::Error);
        let e = transport("create", "x", &Wrap(io));
        assert!(matches!(e, ReportError::Tls { .. }), "{e}");
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let e = transport("create", "x", &Wrap(refused));
        assert!(matches!(e, ReportError::Transport { .. }), "{e}");
        assert!(e.to_string().contains("connection refused"), "{e}");
    }
}
