//! Retries of transient API failures, as Argo wraps its kubectl calls in
//! `retry.OnError(retry.DefaultBackoff, IsTransientErr, …)`: client-go's `DefaultBackoff`
//! is 4 attempts, 10 ms first wait, ×5, 10 % jitter (waits of about 10, 50 and 250 ms).
//! Transient: 429, 500, 502, 503, 504 and errors without an HTTP answer (connection refused
//! or reset, time-outs).

use std::future::Future;
use std::time::Duration;

/// Attempts in all.
pub const STEPS: u32 = 4;
/// The first wait.
pub const FIRST_WAIT: Duration = Duration::from_millis(10);
/// Each wait is the previous one times this.
pub const FACTOR: u32 = 5;

/// The HTTP status of an API error.
pub fn status(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Whether another attempt may succeed.
pub fn is_transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => matches!(s.code, 429 | 500 | 502 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// Run `op` up to [`STEPS`] times while it fails transiently.
///
/// # Errors
/// The last error.
pub async fn transient<T, F, Fut>(mut op: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut wait = FIRST_WAIT;
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < STEPS && is_transient(&e) => {
                let jitter = wait.mul_f64(0.1 * f64::from(std::process::id() % 10) / 10.0);
                tracing::warn!(error = %e, attempt, "transient API failure, retrying");
                tokio::time::sleep(wait + jitter).await;
                wait *= FACTOR;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}
