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

/// A uniform sample in [0, 1) from the standard library's randomly keyed hasher.
fn jitter_sample() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

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
                let jitter = wait.mul_f64(0.1 * jitter_sample());
                tracing::warn!(error = %e, attempt, "transient API failure, retrying");
                tokio::time::sleep(wait + jitter).await;
                wait *= FACTOR;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(kube::core::Status::failure("m", "r").with_code(code).boxed())
    }

    #[test]
    fn transient_statuses() {
        for code in [429, 500, 502, 503, 504] {
            assert!(is_transient(&api(code)), "{code}");
        }
        for code in [400, 403, 404, 409, 413, 422] {
            assert!(!is_transient(&api(code)), "{code}");
        }
        assert_eq!(status(&api(403)), Some(403));
    }

    #[tokio::test(start_paused = true)]
    async fn four_attempts_with_growing_waits() {
        let mut calls = 0;
        let started = tokio::time::Instant::now();
        let r: Result<(), _> = transient(|| {
            calls += 1;
            async { Err(api(503)) }
        })
        .await;
        assert_eq!(status(&r.unwrap_err()), Some(503));
        assert_eq!(calls, STEPS);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(310) && waited < Duration::from_millis(345),
            "{waited:?}"
        );
        let mut calls = 0;
        let r: Result<(), _> = transient(|| {
            calls += 1;
            async { Err(api(404)) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls, 1, "not retried");
    }
}
