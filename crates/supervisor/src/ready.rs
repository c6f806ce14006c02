//! Init-less layout: wait until the `supervisor` container has made the pod ready
//! (`ARGO_WAIT_FOR_READY=true`; the protocol is [`argoexec_core::ready`]).
//!
//! `/var/run/argo` is watched for the marker's rename into place (inotify, or the watcher's
//! 2 s polling fallback) and the marker is re-checked every
//! [`RECHECK`](argoexec_core::ready::RECHECK) regardless, as Argo does. [`evaluate`] decides:
//! `READY` ends the wait, `FAILED` fails it with the supervisor's message, a marker missing
//! for [`STALE_AFTER`] after the wait began or a non-terminal one whose mtime is older than
//! that fails it as "presumed dead". Every failure ends the wrapper with 65
//! ([`argoexec_core::exit::SUPERVISOR_PRE_MAIN`]) before the command starts, as Argo's does.
//! A terminating signal during the wait is a failure too (Argo's cancelled context), so the
//! controller still ranks the supervisor's status first.

use crate::error::Stop;
use crate::reactor::Reactor;
use crate::signals::is_terminating;
use argoexec_core::PodPaths;
use argoexec_core::ready::{Marker, RECHECK, STALE_AFTER};
use inotify::WatchMask;
use std::io::{self, ErrorKind};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// Why the pod never became ready (messages as Argo's, where it has one).
#[derive(Debug, thiserror::Error)]
pub enum ReadyError {
    /// No marker within [`STALE_AFTER`] of the start of the wait.
    #[error("supervisor presumed dead: status marker never appeared within {}s", .0.as_secs())]
    NeverAppeared(Duration),
    /// A non-terminal marker older than [`STALE_AFTER`].
    #[error("supervisor presumed dead: no status update within {}s", .0.as_secs())]
    Stale(Duration),
    /// The supervisor wrote `FAILED`.
    #[error("supervisor reported pre-main failure: {0}")]
    Failed(String),
    /// The marker could not be looked at.
    #[error("stat supervisor status: {0}")]
    Stat(#[source] io::Error),
    /// A terminating signal arrived during the wait.
    #[error("terminated by signal {0} while waiting for the supervisor")]
    Terminated(i32),
}

/// Decide on the marker at `marker`: `Ok(true)` ready, `Ok(false)` keep waiting.
/// `waited` is how long the wait has run; `now` is the wall clock the mtime is judged by.
///
/// # Errors
/// The [`ReadyError`] that ends the wait.
pub fn evaluate(marker: &Path, waited: Duration, now: SystemTime) -> Result<bool, ReadyError> {
    let meta = match std::fs::metadata(marker) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return if waited > STALE_AFTER {
                Err(ReadyError::NeverAppeared(STALE_AFTER))
            } else {
                Ok(false)
            };
        }
        Err(e) => return Err(ReadyError::Stat(e)),
    };
    // A read that fails after the stat raced a rename: look again at the next event.
    let Ok(text) = std::fs::read_to_string(marker) else {
        return Ok(false);
    };
    match Marker::parse(&text) {
        Some(Marker::Ready) => Ok(true),
        Some(Marker::Failed(message)) => Err(ReadyError::Failed(message)),
        _ => {
            let age = meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .unwrap_or_default();
            if age > STALE_AFTER {
                Err(ReadyError::Stale(STALE_AFTER))
            } else {
                Ok(false)
            }
        }
    }
}

/// Block until the marker says `READY`.
pub(crate) fn wait_ready(reactor: &mut Reactor, paths: &PodPaths) -> Result<(), Stop> {
    let dir = paths.var_run_argo();
    let marker = paths.status_marker();
    reactor.watcher_mut().watch(
        &dir,
        WatchMask::MOVED_TO | WatchMask::CLOSE_WRITE | WatchMask::CREATE,
    );
    let start = Instant::now();
    tracing::info!(marker = %marker.display(), "waiting for the supervisor to make the pod ready");
    loop {
        match evaluate(&marker, start.elapsed(), SystemTime::now()) {
            Ok(true) => {
                tracing::info!(
                    waited_ms = start.elapsed().as_millis() as u64,
                    "supervisor is ready"
                );
                return Ok(());
            }
            Ok(false) => {}
            Err(e) => {
                tracing::error!(error = %e, "supervisor failed before main container started");
                return Err(Stop::Failed(e.into()));
            }
        }
        let wake = reactor.wait(Some(RECHECK), None);
        if wake.child_event {
            crate::spawn::reap(None);
        }
        if let Some(r) = wake.signals.iter().find(|r| is_terminating(r.signo)) {
            return Err(Stop::Failed(ReadyError::Terminated(r.signo).into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, m: &Marker) {
        std::fs::write(p, m.render()).unwrap();
    }

    #[test]
    fn the_marker_decides() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("status");
        let now = SystemTime::now();
        let early = Duration::from_secs(1);
        assert!(!evaluate(&p, early, now).unwrap(), "missing, early: wait");
        let e = evaluate(&p, Duration::from_secs(31), now).unwrap_err();
        assert_eq!(
            e.to_string(),
            "supervisor presumed dead: status marker never appeared within 30s"
        );
        write(&p, &Marker::Running);
        assert!(
            !evaluate(&p, Duration::from_secs(300), now).unwrap(),
            "fresh RUNNING"
        );
        let later = now + Duration::from_secs(31);
        assert_eq!(
            evaluate(&p, early, later).unwrap_err().to_string(),
            "supervisor presumed dead: no status update within 30s"
        );
        std::fs::write(&p, "PARTIAL").unwrap();
        assert!(!evaluate(&p, early, now).unwrap(), "unknown token: not terminal");
        assert!(evaluate(&p, early, later).is_err(), "unknown token, stale");
        write(&p, &Marker::Ready);
        assert!(evaluate(&p, early, later).unwrap(), "READY wins whatever its age");
        write(&p, &Marker::Failed("no such key".into()));
        assert_eq!(
            evaluate(&p, early, now).unwrap_err().to_string(),
            "supervisor reported pre-main failure: no such key"
        );
    }
}
