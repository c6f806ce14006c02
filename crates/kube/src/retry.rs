//! Retrying API calls that failed transiently, with client-go's `wait.Backoff` shape
//! (`steps` attempts, a first wait multiplied by `factor` each time, plus up to `jitter` of
//! it at random, capped). Argo wraps its API calls in `retry.OnError(<backoff>,
//! IsTransientErr, …)` with different backoffs per caller; each caller here names its own
//! [`Backoff`] and shares [`is_transient`].
//!
//! Transient: 429, 500, 502, 503 and 504 answers, and failures without an HTTP answer
//! (connection refused or reset, time-outs, a broken event stream).

use std::future::Future;
use std::time::Duration;

/// How often and how long to retry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Attempts in all (at least 1).
    pub steps: u32,
    /// The wait after the first failure.
    pub first: Duration,
    /// Each wait is the previous one times this.
    pub factor: f64,
    /// Up to this fraction of a wait is added at random.
    pub jitter: f64,
    /// No wait is longer.
    pub cap: Duration,
}

impl Backoff {
    /// client-go's `retry.DefaultBackoff`: 4 attempts, 10 ms, ×5, 10 % jitter (Argo's
    /// resource templates and artifact GC).
    pub const DEFAULT: Backoff = Backoff {
        steps: 4,
        first: Duration::from_millis(10),
        factor: 5.0,
        jitter: 0.1,
        cap: Duration::from_secs(30),
    };

    /// The wait before attempt `attempt + 1` (attempts count from 1), without jitter.
    pub fn wait(&self, attempt: u32) -> Duration {
        let exp = self.factor.powi(attempt.saturating_sub(1) as i32);
        self.first.mul_f64(exp).min(self.cap)
    }
}

/// A uniform sample in [0, 1) from the standard library's randomly keyed hasher.
pub fn jitter_sample() -> f64 {
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

/// Run `op` up to `backoff.steps` times while it fails transiently.
///
/// # Errors
/// The last error: a permanent one at once, a transient one after the last attempt.
pub async fn retry<T, F, Fut>(backoff: &Backoff, mut op: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < backoff.steps && is_transient(&e) => {
                let wait = backoff.wait(attempt);
                let wait = wait + wait.mul_f64(backoff.jitter * jitter_sample());
                tracing::warn!(error = %e, attempt, "transient API failure, retrying");
                tokio::time::sleep(wait).await;
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
        kube::Error::Api(kube::core::Status::failure("x", "y").with_code(code).boxed())
    }

    #[test]
    fn waits_grow_by_the_factor_up_to_the_cap() {
        let b = Backoff {
            steps: 5,
            first: Duration::from_secs(1),
            factor: 2.0,
            jitter: 0.0,
            cap: Duration::from_secs(3),
        };
        let waits: Vec<u64> = (1..5).map(|a| b.wait(a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 3, 3]);
        assert_eq!(Backoff::DEFAULT.wait(3), Duration::from_millis(250));
    }

    #[test]
    fn transient_codes() {
        assert!(is_transient(&api(503)) && is_transient(&api(429)));
        assert!(!is_transient(&api(403)) && !is_transient(&api(404)));
        assert_eq!(status(&api(409)), Some(409));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_failures_only() {
        let mut calls = 0;
        let r: Result<(), _> = retry(&Backoff::DEFAULT, || {
            calls += 1;
            async { Err(api(503)) }
        })
        .await;
        assert_eq!(status(&r.unwrap_err()), Some(503));
        assert_eq!(calls, 4);
        let mut calls = 0;
        let r: Result<(), _> = retry(&Backoff::DEFAULT, || {
            calls += 1;
            async { Err(api(403)) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
