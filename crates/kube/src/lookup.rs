//! Finding the own pod: the rule every backend follows when it cannot.
//!
//! The wait container is one of the pod's containers, so a backend that gets answers and
//! still does not find its own pod is looking at the wrong place (a wrong namespace, the
//! wrong node or runtime), and waiting longer will not help. The rule, the same in every
//! backend:
//!
//! - **pod missing** — the endpoint answers, but not with the pod: tolerated for the
//!   pod-lookup bound ([`DEFAULT_POD_LOOKUP_TIMEOUT`], `ARGOEXEC_POD_LOOKUP_TIMEOUT`),
//!   counted from the first answer without it and reset whenever it is seen; then the call
//!   ends with a `NotFound` error naming the pod, what was looked at and the likely cause;
//! - **container missing** — the pod is there, a named container is not (yet): image
//!   pulling, init containers still running. Waited for without a bound, as before;
//! - **no answer** — connection failures, 5xx: the backend's own outage tolerance, not
//!   this bound.
//!
//! [`Absence`] is the clock of the first case; it is pure so the rule is unit-tested here.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

/// How long a backend tolerates answers without its pod before it gives up.
pub const DEFAULT_POD_LOOKUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the namespace came from, for the error of a pod not found: `ARGO_NAMESPACE` when
/// set, else the service account's `namespace` file in `service_account_dir`.
pub fn namespace_source(service_account_dir: &Path) -> String {
    format!(
        "ARGO_NAMESPACE when set, else {}",
        service_account_dir.join("namespace").display()
    )
}

/// How long the own pod has been missing from the answers (the first case of the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Absence {
    bound: Duration,
    since: Option<Instant>,
}

impl Absence {
    /// A clock that gives up after `bound` of answers without the pod.
    pub fn new(bound: Duration) -> Self {
        Self { bound, since: None }
    }

    /// The bound.
    pub fn bound(&self) -> Duration {
        self.bound
    }

    /// The pod was in an answer: the clock starts over.
    pub fn seen(&mut self) {
        self.since = None;
    }

    /// An answer at `now` did not have the pod. Returns for how long it has been missing
    /// once that reaches the bound (time to give up), `None` before.
    pub fn missing(&mut self, now: Instant) -> Option<Duration> {
        let since = *self.since.get_or_insert(now);
        let gone_for = now.saturating_duration_since(since);
        (gone_for >= self.bound).then_some(gone_for)
    }

    /// When the bound passes, while the pod is missing.
    pub fn deadline(&self) -> Option<Instant> {
        self.since.map(|s| s + self.bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_up_only_after_the_bound_of_answers_without_the_pod() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut a = Absence::new(2 * s);
        assert_eq!(a.deadline(), None, "nothing missing yet");
        assert_eq!(a.missing(t0), None);
        assert_eq!(a.deadline(), Some(t0 + 2 * s));
        assert_eq!(a.missing(t0 + s), None);
        assert_eq!(a.missing(t0 + 2 * s), Some(2 * s));
        assert_eq!(a.missing(t0 + 3 * s), Some(3 * s));
    }

    #[test]
    fn names_the_namespace_file() {
        let s = namespace_source(Path::new("/sa"));
        assert_eq!(s, "ARGO_NAMESPACE when set, else /sa/namespace");
    }

    #[test]
    fn a_sighting_starts_the_clock_over() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut a = Absence::new(2 * s);
        assert_eq!(a.missing(t0), None);
        assert_eq!(a.missing(t0 + s), None);
        a.seen();
        assert_eq!(a.deadline(), None);
        assert_eq!(a.missing(t0 + 2 * s), None, "missing for 0 s since the sighting");
        assert_eq!(a.missing(t0 + 3 * s), None);
        assert_eq!(a.missing(t0 + 4 * s), Some(2 * s));
    }
}
