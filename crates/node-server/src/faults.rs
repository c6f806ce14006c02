//! Fault injection at the local node (`argoexec node --faults …`, `argoexec run --faults …`):
//! the failures a real cluster throws at an executor, on demand, so tests can show that
//! every step still ends with the right phase, message and outputs.
//!
//! A spec is a comma-separated list of `name=value` items (see [`FaultSpec::parse`]):
//!
//! | item | effect |
//! |---|---|
//! | `api-429=N[:S]` | the first N API requests made by pods answer 429 with `Retry-After: S` (1) |
//! | `api-500=N`, `api-503=N` | the first N API requests made by pods answer 500 / 503 |
//! | `api-503-for=MS` | every API request made by pods answers 503 for MS ms from the first one (an API server away for a while) |
//! | `api-delay=MS` | every API request made by a pod is answered MS ms late |
//! | `watch-cut-events=N` | every watch made by a pod ends (cleanly, as on a server's timeout) after N events |
//! | `watch-cut-secs=S` | every watch made by a pod ends after S seconds |
//! | `watch-expire=N` | the first N watches made by pods from a `resourceVersion` get `ERROR` 410 Expired |
//! | `exec-no-status=N\|all` | the first N exec sessions (API or kubelet) close without the channel-3 status |
//! | `kubelet-stale=MS` | the kubelet's `/pods` shows pods as they were MS ms ago |
//! | `api-restart=T[:MS]` | at trigger T the API endpoint drops its listener and every connection, and is back MS ms later (500) |
//! | `kubelet-restart=T[:MS]` | the same for the kubelet endpoint |
//! | `ca-rotate=T` | at T a new cluster CA signs new serving certificates; pods' `ca.crt` becomes old + new |
//! | `evict=T` | at T the pod is evicted as under node pressure (phase `Failed`, reason `Evicted`) |
//! | `delete=T` | at T the pod is deleted (its grace period applies) |
//! | `sigkill=T` | at T the trigger's container gets SIGKILL in its PID 1 (an emissary wrapper killed as the OOM killer would) |
//! | `emptydir-size=NAME:SIZE` | the pod's `emptyDir` NAME becomes a tmpfs of SIZE (a quantity, e.g. `48Mi`): a full disk |
//!
//! A trigger `T` is `<container>-running[+MS]`: MS ms (0) after that container of a pod
//! first shows `running` in the pod status; each trigger fires once per pod. "Requests made
//! by pods" are those authenticated with a pod-bound service-account token, so the admin
//! (`argoexec run` reading results back, kubectl) is never disturbed.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Request extension marking a request made by a pod (the faults apply to those only).
#[derive(Debug, Clone, Copy)]
pub struct FromPod;

/// When a timed fault fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// The container whose first `running` state starts the clock.
    pub container: String,
    /// Delay after that.
    pub after: Duration,
}

impl Trigger {
    fn parse(s: &str) -> Result<Self, String> {
        let (head, ms) = match s.split_once('+') {
            Some((h, ms)) => (h, parse_u64(ms, "trigger delay (ms)")?),
            None => (s, 0),
        };
        let container = head
            .strip_suffix("-running")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| format!("trigger {s:?}: expected <container>-running[+MS]"))?;
        Ok(Self {
            container: container.to_string(),
            after: Duration::from_millis(ms),
        })
    }
}

/// What happens at a trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Restart the API endpoint, down for the duration.
    ApiRestart(Duration),
    /// Restart the kubelet endpoint, down for the duration.
    KubeletRestart(Duration),
    /// Rotate the cluster CA and the serving certificates.
    CaRotate,
    /// Evict the pod (node pressure).
    Evict,
    /// Delete the pod.
    Delete,
    /// SIGKILL to the PID 1 of the trigger's container.
    SigKill,
}

/// A parsed fault spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultSpec {
    /// `(status, count, retry_after)` answered to the first pod requests, in order.
    pub api_errors: Vec<(u16, u64, Option<u32>)>,
    /// Every pod request answers 503 for this long from the first one.
    pub api_outage: Option<Duration>,
    /// Delay of every pod request.
    pub api_delay: Option<Duration>,
    /// Events after which a pod's watch ends.
    pub watch_cut_events: Option<u64>,
    /// Time after which a pod's watch ends.
    pub watch_cut_after: Option<Duration>,
    /// Watches from a resourceVersion answered 410 Expired.
    pub watch_expire: u64,
    /// Exec sessions closed without their status (`u64::MAX`: all).
    pub exec_no_status: u64,
    /// Age of the kubelet's `/pods` view.
    pub kubelet_stale: Option<Duration>,
    /// Timed actions.
    pub timed: Vec<(Trigger, Action)>,
    /// `emptyDir` volumes made small tmpfs mounts: (volume name, size quantity).
    pub small_volumes: Vec<(String, String)>,
}

fn parse_u64(v: &str, what: &str) -> Result<u64, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{what}: {v:?} is not a non-negative integer"))
}

impl FaultSpec {
    /// Parse a spec (`""` is no fault).
    ///
    /// # Errors
    /// A message naming the item that does not parse.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut f = Self::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| format!("fault {item:?}: expected name=value"))?;
            let ms = |v: &str| parse_u64(v, k).map(Duration::from_millis);
            let with_down = |v: &str| -> Result<(Trigger, Duration), String> {
                let (t, down) = match v.split_once(':') {
                    Some((t, d)) => (t, ms(d)?),
                    None => (v, Duration::from_millis(500)),
                };
                Ok((Trigger::parse(t)?, down))
            };
            match k {
                "api-429" => {
                    let (n, s) = match v.split_once(':') {
                        Some((n, s)) => (n, parse_u64(s, "Retry-After")?),
                        None => (v, 1),
                    };
                    f.api_errors
                        .push((429, parse_u64(n, k)?, Some(u32::try_from(s).unwrap_or(u32::MAX))));
                }
                "api-500" => f.api_errors.push((500, parse_u64(v, k)?, None)),
                "api-503" => f.api_errors.push((503, parse_u64(v, k)?, None)),
                "api-503-for" => f.api_outage = Some(ms(v)?),
                "api-delay" => f.api_delay = Some(ms(v)?),
                "watch-cut-events" => f.watch_cut_events = Some(parse_u64(v, k)?.max(1)),
                "watch-cut-secs" => f.watch_cut_after = Some(Duration::from_secs(parse_u64(v, k)?.max(1))),
                "watch-expire" => f.watch_expire = parse_u64(v, k)?,
                "exec-no-status" => f.exec_no_status = if v == "all" { u64::MAX } else { parse_u64(v, k)? },
                "kubelet-stale" => f.kubelet_stale = Some(ms(v)?),
                "api-restart" => {
                    let (t, d) = with_down(v)?;
                    f.timed.push((t, Action::ApiRestart(d)));
                }
                "kubelet-restart" => {
                    let (t, d) = with_down(v)?;
                    f.timed.push((t, Action::KubeletRestart(d)));
                }
                "ca-rotate" => f.timed.push((Trigger::parse(v)?, Action::CaRotate)),
                "evict" => f.timed.push((Trigger::parse(v)?, Action::Evict)),
                "delete" => f.timed.push((Trigger::parse(v)?, Action::Delete)),
                "sigkill" => f.timed.push((Trigger::parse(v)?, Action::SigKill)),
                "emptydir-size" => {
                    let (name, size) = v
                        .split_once(':')
                        .filter(|(n, s)| !n.is_empty() && !s.is_empty())
                        .ok_or_else(|| format!("emptydir-size {v:?}: expected NAME:SIZE"))?;
                    f.small_volumes.push((name.into(), size.into()));
                }
                other => return Err(format!("unknown fault {other:?}")),
            }
        }
        Ok(f)
    }

    /// True when nothing is injected.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The live state of the injected faults: counters shared by both endpoints.
#[derive(Debug, Default)]
pub struct Faults {
    /// What to inject.
    pub spec: FaultSpec,
    pod_requests: AtomicU64,
    errors_sent: AtomicU64,
    expired_watches: AtomicU64,
    silent_execs: AtomicU64,
    cut_watches: AtomicU64,
    stale_answers: AtomicU64,
    outage_from: std::sync::OnceLock<std::time::Instant>,
    fired: Mutex<HashSet<(String, usize)>>,
    done: Mutex<Vec<String>>,
}

impl Faults {
    /// Faults from a spec.
    pub fn new(spec: FaultSpec) -> Self {
        Self {
            spec,
            ..Self::default()
        }
    }

    /// For a request made by a pod: the error to answer instead (status, Retry-After).
    pub fn api_error(&self) -> Option<(u16, Option<u32>)> {
        if let Some(outage) = self.spec.api_outage {
            let from = *self.outage_from.get_or_init(std::time::Instant::now);
            if from.elapsed() < outage {
                self.errors_sent.fetch_add(1, Ordering::SeqCst);
                tracing::info!(left = ?outage.saturating_sub(from.elapsed()), "fault: the API is away (503)");
                return Some((503, None));
            }
        }
        if self.spec.api_errors.is_empty() {
            return None;
        }
        let n = self.pod_requests.fetch_add(1, Ordering::SeqCst);
        let mut start = 0;
        for &(code, count, retry) in &self.spec.api_errors {
            if n < start + count {
                self.errors_sent.fetch_add(1, Ordering::SeqCst);
                tracing::info!(
                    code,
                    request = n + 1,
                    "fault: answering an API request with an error"
                );
                return Some((code, retry));
            }
            start += count;
        }
        None
    }

    /// Whether this watch (made by a pod, from a resourceVersion) is answered 410.
    pub fn expire_watch(&self) -> bool {
        self.spec.watch_expire > 0
            && self.expired_watches.fetch_add(1, Ordering::SeqCst) < self.spec.watch_expire
    }

    /// Whether this exec session closes without its status.
    pub fn drop_exec_status(&self) -> bool {
        self.spec.exec_no_status > 0
            && self.silent_execs.fetch_add(1, Ordering::SeqCst) < self.spec.exec_no_status
    }

    /// Count a watch ended by `watch-cut-*`.
    pub fn watch_cut(&self) {
        self.cut_watches.fetch_add(1, Ordering::SeqCst);
    }

    /// Count a `/pods` answered from the past.
    pub fn stale_answer(&self) {
        self.stale_answers.fetch_add(1, Ordering::SeqCst);
    }

    /// Record a timed action carried out (`what` names it and its pod).
    pub fn acted(&self, what: String) {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).push(what);
    }

    /// What was injected so far, for tests and `argoexec run -o json`: counts per fault and
    /// the timed actions carried out.
    pub fn report(&self) -> serde_json::Value {
        let n = |a: &AtomicU64| a.load(Ordering::SeqCst);
        let expired = n(&self.expired_watches).min(self.spec.watch_expire);
        let silent = n(&self.silent_execs).min(self.spec.exec_no_status);
        serde_json::json!({
            "apiErrors": n(&self.errors_sent),
            "expiredWatches": expired,
            "cutWatches": n(&self.cut_watches),
            "silentExecs": silent,
            "staleAnswers": n(&self.stale_answers),
            "actions": *self.done.lock().unwrap_or_else(|p| p.into_inner()),
        })
    }

    /// The timed actions of `pod_uid` due now that `running` containers run, each once, with
    /// the container of their trigger.
    pub fn due(&self, pod_uid: &str, running: &[String]) -> Vec<(Duration, Action, String)> {
        let mut fired = self.fired.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        for (i, (t, a)) in self.spec.timed.iter().enumerate() {
            if running.contains(&t.container) && fired.insert((pod_uid.to_string(), i)) {
                out.push((t.after, *a, t.container.clone()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_are_named() {
        let f = FaultSpec::parse(
            "api-429=3:2, api-503=1, watch-cut-events=2, watch-expire=1, exec-no-status=all, kubelet-stale=800, api-restart=main-running+200:700, evict=main-running",
        )
        .unwrap();
        assert_eq!(f.api_errors, vec![(429, 3, Some(2)), (503, 1, None)]);
        assert_eq!(f.watch_cut_events, Some(2));
        assert_eq!(f.exec_no_status, u64::MAX);
        assert_eq!(f.kubelet_stale, Some(Duration::from_millis(800)));
        assert_eq!(
            f.timed[0],
            (
                Trigger {
                    container: "main".into(),
                    after: Duration::from_millis(200)
                },
                Action::ApiRestart(Duration::from_millis(700))
            )
        );
        assert_eq!(f.timed[1].1, Action::Evict);
        let f = FaultSpec::parse("sigkill=main-running+300").unwrap();
        assert_eq!(f.timed[0].1, Action::SigKill);
        assert_eq!(f.timed[0].0.container, "main");
        let f = FaultSpec::parse("emptydir-size=var-run-argo:48Mi").unwrap();
        assert_eq!(f.small_volumes, vec![("var-run-argo".into(), "48Mi".into())]);
        assert!(FaultSpec::parse("").unwrap().is_empty());
        for (bad, needle) in [
            ("api-429", "expected name=value"),
            ("nope=1", "unknown fault \"nope\""),
            ("api-500=x", "api-500: \"x\""),
            ("evict=main", "expected <container>-running"),
            ("delete=-running", "expected <container>-running"),
            ("emptydir-size=x", "expected NAME:SIZE"),
        ] {
            let e = FaultSpec::parse(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn errors_come_in_order_then_stop() {
        let f = Faults::new(FaultSpec::parse("api-429=2:5,api-500=1").unwrap());
        let got: Vec<_> = (0..4).map(|_| f.api_error()).collect();
        assert_eq!(
            got,
            vec![
                Some((429, Some(5))),
                Some((429, Some(5))),
                Some((500, None)),
                None
            ]
        );
        let f = Faults::new(FaultSpec::parse("watch-expire=1,exec-no-status=2").unwrap());
        assert_eq!([f.expire_watch(), f.expire_watch()], [true, false]);
        assert_eq!(
            [f.drop_exec_status(), f.drop_exec_status(), f.drop_exec_status()],
            [true, true, false]
        );
    }

    #[test]
    fn an_outage_answers_503_until_it_is_over() {
        let f = Faults::new(FaultSpec::parse("api-503-for=150").unwrap());
        assert_eq!(f.spec.api_outage, Some(Duration::from_millis(150)));
        assert_eq!(
            f.api_error(),
            Some((503, None)),
            "the first request starts the outage"
        );
        assert_eq!(f.api_error(), Some((503, None)));
        // The fault is a span of time: let it pass.
        std::thread::sleep(Duration::from_millis(160));
        assert_eq!(f.api_error(), None, "over after 150 ms");
    }

    #[test]
    fn timed_actions_fire_once_per_pod() {
        let f = Faults::new(FaultSpec::parse("delete=main-running+5,ca-rotate=wait-running").unwrap());
        assert!(f.due("u1", &["init".into()]).is_empty());
        assert_eq!(
            f.due("u1", &["wait".into()]),
            vec![(Duration::ZERO, Action::CaRotate, "wait".to_string())]
        );
        assert_eq!(
            f.due("u1", &["wait".into(), "main".into()]),
            vec![(Duration::from_millis(5), Action::Delete, "main".to_string())]
        );
        assert!(f.due("u1", &["wait".into(), "main".into()]).is_empty());
        assert_eq!(f.due("u2", &["main".into()]).len(), 1);
    }
}
