//! Retries of transient API failures, as Argo wraps its kubectl calls in
//! `retry.OnError(retry.DefaultBackoff, IsTransientErr, …)`: client-go's `DefaultBackoff`
//! is 4 attempts, 10 ms first wait, ×5, 10 % jitter (waits of about 10, 50 and 250 ms).
//! Transient: 429, 500, 502, 503, 504 and errors without an HTTP answer (connection refused
//! or reset, time-outs). The loop and the classification are [`argoexec_kube::retry`]'s.

use std::future::Future;

use argoexec_kube::retry::Backoff;
pub use argoexec_kube::retry::{is_transient, status};

/// Attempts in all.
pub const STEPS: u32 = Backoff::DEFAULT.steps;

/// Run `op` up to [`STEPS`] times while it fails transiently.
///
/// # Errors
/// The last error.
pub async fn transient<T, F, Fut>(op: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    argoexec_kube::retry::retry(&Backoff::DEFAULT, op).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
