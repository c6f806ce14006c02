//! Exponential backoff for API calls, and which failures are worth another attempt.
//!
//! Argo ≤ v3.6 retries task-result writes with `wait.Backoff{Duration: 1s, Factor: 2,
//! Jitter: 0.1, Steps: 5, Cap: 30s}` ([`Backoff::TASK_RESULT`]). As in Kubernetes'
//! `wait.Backoff`, `steps` counts *attempts*, so there are at most four waits: about 1, 2, 4
//! and 8 s, each lengthened by up to 10 % of jitter, never above the cap. Argo v3.7.1+
//! retries every task-result write forever (`Steps: MaxInt32`, AW#14555, after AW#14560 saw
//! steps fail when the API server was briefly away): [`Backoff::TASK_RESULT_FOREVER`].
//!
//! Retried ([`verdict`]): 429 Too Many Requests (after the server's `Retry-After` when it
//! sent one, capped), every 5xx, 409 Conflict (a concurrent write; a create's 409
//! AlreadyExists never gets here, it turns into a patch), connection errors and time-outs.
//! Not retried: every other 4xx, TLS verification failures, local configuration errors.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use crate::ReportError;

/// Exponential backoff parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The first wait.
    pub initial: Duration,
    /// Each wait is the previous one times this.
    pub factor: f64,
    /// Up to this fraction of the wait is added at random.
    pub jitter: f64,
    /// Attempts in all (the first one included).
    pub steps: u32,
    /// No wait is longer than this.
    pub cap: Duration,
}

impl Backoff {
    /// Argo's task-result backoff: 1 s, ×2, jitter 0.1, 5 attempts, cap 30 s.
    pub const TASK_RESULT: Backoff = Backoff {
        initial: Duration::from_secs(1),
        factor: 2.0,
        jitter: 0.1,
        steps: 5,
        cap: Duration::from_secs(30),
    };

    /// Argo v3.7.1+'s task-result backoff: as [`Self::TASK_RESULT`], but without a limit on
    /// attempts (waits of 1, 2, 4, 8, 16 s, then 30 s each).
    pub const TASK_RESULT_FOREVER: Backoff = Backoff {
        steps: u32::MAX,
        ..Self::TASK_RESULT
    };

    /// The wait after failed attempt number `failed` (1-based), without jitter.
    pub fn base_delay(&self, failed: u32) -> Duration {
        let exp = i32::try_from(failed.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.initial.as_secs_f64() * self.factor.powi(exp);
        self.clamp(secs)
    }

    /// The wait after failed attempt number `failed`, with jitter `sample` ∈ [0, 1):
    /// `base × (1 + jitter × sample)`, capped.
    pub fn delay(&self, failed: u32, sample: f64) -> Duration {
        let base = self.base_delay(failed).as_secs_f64();
        self.clamp(base * (1.0 + self.jitter * sample.clamp(0.0, 1.0)))
    }

    fn clamp(&self, secs: f64) -> Duration {
        if !secs.is_finite() || secs >= self.cap.as_secs_f64() {
            self.cap
        } else {
            Duration::from_secs_f64(secs.max(0.0))
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Try again, after the server's requested wait if it gave one.
    Retry {
        /// `Retry-After` (or `details.retryAfterSeconds`), when present.
        after: Option<Duration>,
    },
    /// Give up: retrying cannot help.
    Stop,
}

/// Whether a failure is transient.
pub fn verdict(err: &ReportError) -> Verdict {
    match err {
        ReportError::Api {
            code: 429,
            retry_after,
            ..
        } => Verdict::Retry { after: *retry_after },
        ReportError::Api { code: 409, .. } => Verdict::Retry { after: None },
        ReportError::Api { code, .. } if *code >= 500 => Verdict::Retry { after: None },
        ReportError::Transport { .. } => Verdict::Retry { after: None },
        _ => Verdict::Stop,
    }
}

/// Run `op` until it succeeds, fails for good, or `backoff.steps` attempts are used; the
/// last error is returned. `what` names the operation in the retry log lines.
///
/// # Errors
/// The error of the last attempt.
pub async fn retry<T, F, Fut>(backoff: &Backoff, what: &str, op: F) -> Result<T, ReportError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ReportError>>,
{
    retry_with(backoff, what, op, tokio::time::sleep, jitter_sample).await
}

/// [`retry`] with the sleep and the jitter source injected (tests).
pub(crate) async fn retry_with<T, F, Fut, S, SFut>(
    backoff: &Backoff,
    what: &str,
    mut op: F,
    mut sleep: S,
    mut sample: impl FnMut() -> f64,
) -> Result<T, ReportError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ReportError>>,
    S: FnMut(Duration) -> SFut,
    SFut: Future<Output = ()>,
{
    let steps = backoff.steps.max(1);
    let mut attempt = 1;
    loop {
        let err = match op().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let Verdict::Retry { after } = verdict(&err) else {
            return Err(err);
        };
        if attempt >= steps {
            tracing::warn!(error = %err, attempts = attempt, operation = what, "giving up");
            return Err(err);
        }
        let wait = match after {
            Some(a) => a.min(backoff.cap),
            None => backoff.delay(attempt, sample()),
        };
        tracing::warn!(error = %err, attempt, ?wait, operation = what, "transient failure, retrying");
        sleep(wait).await;
        attempt = attempt.saturating_add(1);
    }
}

/// A uniform sample in [0, 1) from the standard library's randomly keyed hasher.
fn jitter_sample() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Parse a `Retry-After` header given in seconds (the form API Priority and Fairness uses).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn api(code: u16, retry_after: Option<Duration>) -> ReportError {
        ReportError::Api {
            action: "create",
            object: "x".into(),
            code,
            reason: String::new(),
            message: String::new(),
            retry_after,
        }
    }

    #[test]
    fn task_result_sequence() {
        let b = Backoff::TASK_RESULT;
        let base: Vec<_> = (1..=4).map(|n| b.base_delay(n).as_secs_f64()).collect();
        assert_eq!(base, [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(b.delay(3, 0.0), Duration::from_secs(4));
        assert_eq!(b.delay(3, 0.999_999), Duration::from_secs_f64(4.0 * 1.099_999_9));
        assert!(b.delay(1, 0.5) > Duration::from_secs(1) && b.delay(1, 0.5) < Duration::from_millis(1100));
        assert_eq!(b.base_delay(6), Duration::from_secs(30), "capped");
        assert_eq!(b.delay(5, 1.0), Duration::from_secs_f64(16.0 * 1.1));
        let near = Backoff {
            initial: Duration::from_secs(28),
            ..b
        };
        assert_eq!(
            near.delay(1, 0.99),
            Duration::from_secs(30),
            "jitter never passes the cap"
        );
        assert_eq!(b.base_delay(1000), Duration::from_secs(30));
        for _ in 0..100 {
            let s = jitter_sample();
            assert!((0.0..1.0).contains(&s), "{s}");
        }
    }

    #[test]
    fn classification() {
        let retry = Verdict::Retry { after: None };
        assert_eq!(verdict(&api(500, None)), retry);
        assert_eq!(verdict(&api(503, None)), retry);
        assert_eq!(verdict(&api(504, None)), retry);
        assert_eq!(verdict(&api(409, None)), retry);
        assert_eq!(
            verdict(&api(429, Some(Duration::from_secs(3)))),
            Verdict::Retry {
                after: Some(Duration::from_secs(3))
            }
        );
        for code in [400, 401, 403, 404, 415, 422] {
            assert_eq!(verdict(&api(code, None)), Verdict::Stop, "{code}");
        }
        let t = ReportError::Transport {
            action: "create",
            object: "x".into(),
            message: "connection refused".into(),
        };
        assert_eq!(verdict(&t), retry);
        let tls = ReportError::Tls {
            action: "create",
            object: "x".into(),
            message: "UnknownIssuer".into(),
        };
        assert_eq!(verdict(&tls), Verdict::Stop);
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    /// Run `retry_with` over scripted results, recording the sleeps.
    async fn run(script: Vec<Result<u32, ReportError>>) -> (Result<u32, ReportError>, Vec<Duration>, usize) {
        let script = RefCell::new(script.into_iter());
        let calls = RefCell::new(0usize);
        let sleeps = RefCell::new(Vec::new());
        let r = retry_with(
            &Backoff::TASK_RESULT,
            "test",
            || {
                *calls.borrow_mut() += 1;
                let next = script.borrow_mut().next().expect("script too short");
                async move { next }
            },
            |d| {
                sleeps.borrow_mut().push(d);
                async {}
            },
            || 0.0,
        )
        .await;
        (r, sleeps.into_inner(), calls.into_inner())
    }

    #[tokio::test]
    async fn five_attempts_then_the_last_error() {
        let script = (0..5).map(|i| Err(api(500 + i, None))).collect();
        let (r, sleeps, calls) = run(script).await;
        assert_eq!(r.unwrap_err().status_code(), Some(504));
        assert_eq!(calls, 5);
        let secs: Vec<_> = sleeps.iter().map(Duration::as_secs).collect();
        assert_eq!(secs, [1, 2, 4, 8]);
    }

    #[tokio::test]
    async fn retry_after_is_honoured_and_capped() {
        let script = vec![
            Err(api(429, Some(Duration::from_secs(5)))),
            Err(api(429, Some(Duration::from_secs(600)))),
            Err(api(429, None)),
            Ok(7),
        ];
        let (r, sleeps, calls) = run(script).await;
        assert_eq!(r.unwrap(), 7);
        assert_eq!(calls, 4);
        let secs: Vec<_> = sleeps.iter().map(Duration::as_secs).collect();
        assert_eq!(secs, [5, 30, 4]);
    }

    #[tokio::test]
    async fn permanent_errors_are_not_retried() {
        let (r, sleeps, calls) = run(vec![Err(api(403, None))]).await;
        assert!(r.unwrap_err().is_forbidden());
        assert!(sleeps.is_empty());
        assert_eq!(calls, 1);
        let (r, _, calls) = run(vec![Err(api(502, None)), Ok(1)]).await;
        assert_eq!((r.unwrap(), calls), (1, 2));
    }
}
