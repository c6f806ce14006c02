//! The HTTP client settings every `object_store` driver shares: retries with backoff from
//! [`Settings`], timeouts sized for large parts, an optional extra CA bundle.

use std::time::Duration;

use object_store::{BackoffConfig, Certificate, ClientOptions, RetryConfig};

use crate::{ArtifactError, Settings};

/// Retries of transient failures (5xx, 429, connection errors) with exponential backoff.
pub fn retry(settings: &Settings) -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: settings.retries,
        retry_timeout: settings.retry_timeout,
    }
}

/// Client options: 10 s to connect, 5 min per request (a 64 MiB part on a slow link),
/// and the CA bundle `ca_pem` added to the system roots when given. TLS verification is
/// always on here; plain HTTP is the caller's explicit `allow_http`.
///
/// # Errors
/// A CA bundle that does not parse.
pub fn options(
    kind: &'static str,
    ca_pem: Option<&[u8]>,
    allow_http: bool,
) -> Result<ClientOptions, ArtifactError> {
    if allow_http {
        tracing::warn!(
            repository = kind,
            "plain HTTP to the {kind} endpoint (configured insecure): data and request signatures travel unencrypted"
        );
    }
    let mut o = ClientOptions::new()
        .with_allow_http(allow_http)
        .with_connect_timeout(Duration::from_secs(10))
        .with_timeout(Duration::from_secs(300))
        .with_pool_max_idle_per_host(64);
    if let Some(pem) = ca_pem {
        let certs = Certificate::from_pem_bundle(pem)
            .map_err(|e| ArtifactError::config(kind, format!("the CA bundle does not parse: {e}")))?;
        if certs.is_empty() {
            return Err(ArtifactError::config(kind, "the CA bundle holds no certificate"));
        }
        for c in certs {
            o = o.with_root_certificate(c);
        }
    }
    Ok(o)
}
