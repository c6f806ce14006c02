//! A `kube::Client` for one HTTPS endpoint (the API server or a kubelet) with this crate's
//! TLS verification ([`crate::tls`]) and a bearer token re-read whenever its file changes
//! ([`TokenSource`]).
//!
//! The stack is kube-rs' own minus its auth and TLS setup: base URI → `Authorization` →
//! hyper-util's pooled HTTP/1.1 client over hyper-rustls. HTTP/1.1 only, because exec is an
//! HTTP/1.1 upgrade (WebSocket). kube-rs' token-file auth is not used: it re-reads only on a
//! ~60 s timer, too late for a projected token rotated mid-step.

use std::sync::Arc;
use std::time::Duration;

use http::header::AUTHORIZATION;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::{Body, ConfigExt};
use tower::ServiceBuilder;
use tower::util::MapRequestLayer;

use crate::incluster::TokenSource;
use crate::tls::{TlsError, TlsPolicy};

/// Time allowed for the TCP connect (the TLS handshake follows within the request).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors building a client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL does not parse.
    #[error("{url:?} is not a valid URL: {reason}")]
    BadUrl {
        /// The URL.
        url: String,
        /// The parse error.
        reason: String,
    },
    /// The TLS configuration cannot be built.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// One endpoint: where, how to verify it, and whose token to send.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `https://host:port`.
    pub url: String,
    /// How the server's certificate is verified.
    pub tls: TlsPolicy,
    /// The bearer token, shared by every client of the process.
    pub token: Arc<TokenSource>,
    /// The client's default namespace.
    pub namespace: String,
    /// What the endpoint is, for messages ("kubelet", "API server").
    pub what: &'static str,
}

impl Endpoint {
    /// Build the client. Call inside a Tokio runtime.
    ///
    /// # Errors
    /// [`ClientError`] for a bad URL or TLS configuration.
    pub fn client(&self) -> Result<kube::Client, ClientError> {
        let uri: http::Uri = self
            .url
            .parse()
            .map_err(|e: http::uri::InvalidUri| ClientError::BadUrl {
                url: self.url.clone(),
                reason: e.to_string(),
            })?;
        let tls = self.tls.client_config(self.what)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(http);
        let hyper: HyperClient<_, Body> = HyperClient::builder(TokioExecutor::new()).build(https);
        let base = kube::Config::new(uri).base_uri_layer();
        let token = self.token.clone();
        let service = ServiceBuilder::new()
            .layer(base)
            .layer(MapRequestLayer::new(move |mut req: http::Request<Body>| {
                match token.header() {
                    Ok(h) => {
                        req.headers_mut().insert(AUTHORIZATION, h);
                    }
                    Err(e) => tracing::warn!(error = %e, "no service-account token for the request"),
                }
                req
            }))
            .service(hyper);
        Ok(kube::Client::new(service, self.namespace.clone()))
    }
}

/// Classify a kube-rs error and describe it for a message naming `endpoint` and `call`:
/// HTTP status errors keep their code and body text; transport errors (connect, TLS) keep
/// the whole chain, so an x509 failure shows [`crate::VerifyFailure`]'s CA and names.
pub fn describe(e: &kube::Error, endpoint: &str, call: &str) -> (argoexec_runtime::ErrorKind, String) {
    use argoexec_runtime::ErrorKind as K;
    match e {
        kube::Error::Api(s) => {
            let kind = match s.code {
                401 | 403 => K::Denied,
                404 => K::NotFound,
                408 | 429 | 500..=599 => K::Transient,
                _ => K::Fatal,
            };
            (kind, format!("{call} {endpoint}: HTTP {}: {}", s.code, s.message))
        }
        #[cfg(feature = "exec")]
        kube::Error::UpgradeConnection(kube::client::UpgradeConnectionError::ProtocolSwitch(code)) => {
            let kind = match code.as_u16() {
                401 | 403 => K::Denied,
                404 => K::NotFound,
                _ => K::Fatal,
            };
            (
                kind,
                format!("{call} {endpoint}: HTTP {code} instead of a protocol upgrade"),
            )
        }
        other => {
            let text = crate::chain(other);
            let kind = if text.contains("x509:") {
                K::Fatal
            } else {
                K::Transient
            };
            (kind, format!("{call} {endpoint}: {text}"))
        }
    }
}
