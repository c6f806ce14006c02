//! Control files under `ctr/`: the `signal` file, the debug-pause files `before`/`after`,
//! and the `exitcode` files of container-set dependencies — watched through the reactor's
//! [`Watcher`](crate::watch::Watcher) (inotify, or polling every 2 s as the fallback).
//!
//! * The signal file is read, deleted, and if it holds a number > 0 that number is the signal
//!   to send. An empty file is left alone (a writer may be mid-way); an unparsable one is
//!   deleted and logged.
//! * Dependencies: `ctr/` is watched for new directories and each `ctr/<dep>` for
//!   close-write/rename once it exists; on top of that the wait wakes every second, which
//!   covers a missed event. An empty `exitcode` file counts as not written yet.
//! * Pauses: any event in `ctr/<name>` re-checks the release file.
//! * While no child runs (dependency wait, debug pauses, retry delay) a terminating signal
//!   — TERM, INT, HUP or QUIT sent to the wrapper, or TERM/INT/HUP/QUIT/KILL in the signal
//!   file — ends the wait with that number (exit 128 + N, e.g. 143 as
//!   late Argo v3.4 does while waiting for dependencies). Other signals are dropped.

use crate::error::{Stop, SupervisorError};
use crate::reactor::{Reactor, Wake};
use crate::signals::is_terminating;
use argoexec_core::protocol;
use inotify::WatchMask;
use std::io::ErrorKind;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a dependency wait re-checks even without an inotify event.
const DEPENDENCY_RECHECK: Duration = Duration::from_secs(1);

/// Read and delete the signal file. Returns the signal number it asked for, if any.
pub fn take_signal(path: &Path) -> Option<i32> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "cannot read the signal file");
            return None;
        }
    };
    if text.trim().is_empty() {
        return None;
    }
    if let Err(e) = std::fs::remove_file(path) {
        tracing::debug!(path = %path.display(), error = %e, "cannot delete the signal file");
    }
    let sig = protocol::parse_signal(&text);
    if sig.is_none() {
        tracing::warn!(content = ?text, "ignoring a signal file that holds no signal number");
    }
    sig
}

/// Whether a path exists (without following a final symlink).
fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Handle the signals of a wake while no child runs: reap orphans, and turn a terminating
/// signal (from the wrapper's signals or the signal file) into [`Stop::Signalled`].
pub(crate) fn idle_signals(wake: &Wake, signal_file: &Path) -> Result<(), Stop> {
    if wake.child_event {
        crate::spawn::reap(None);
    }
    for r in &wake.signals {
        if is_terminating(r.signo) {
            tracing::info!(signo = r.signo, "terminated while no child was running");
            return Err(Stop::Signalled(r.signo));
        }
        tracing::debug!(signo = r.signo, "no child to forward the signal to");
    }
    if wake.signal_file {
        check_signal_file_idle(signal_file)?;
    }
    Ok(())
}

/// Check the signal file while no child runs.
pub(crate) fn check_signal_file_idle(signal_file: &Path) -> Result<(), Stop> {
    match take_signal(signal_file) {
        Some(n) if is_terminating(n) => {
            tracing::info!(
                signo = n,
                "signal file asked to terminate while no child was running"
            );
            Err(Stop::Signalled(n))
        }
        Some(n) => {
            tracing::debug!(signo = n, "no child to deliver the signal file's signal to");
            Ok(())
        }
        None => Ok(()),
    }
}

/// Block until `release` exists (a debug pause).
pub(crate) fn pause_until(reactor: &mut Reactor, release: &Path, signal_file: &Path) -> Result<(), Stop> {
    tracing::info!(release = %release.display(), "paused: create the release file to continue");
    check_signal_file_idle(signal_file)?;
    while !exists(release) {
        let wake = reactor.wait(None, None);
        idle_signals(&wake, signal_file)?;
    }
    tracing::info!(release = %release.display(), "pause released");
    Ok(())
}

/// Sleep for `delay` (between retries), cut short by a terminating signal.
pub(crate) fn sleep(reactor: &mut Reactor, delay: Duration, signal_file: &Path) -> Result<(), Stop> {
    let end = Instant::now() + delay;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let wake = reactor.wait(Some(left), None);
        idle_signals(&wake, signal_file)?;
    }
}

/// Wait until every dependency in `deps` has written `ctr/<dep>/exitcode`; fail on the first
/// non-zero code.
pub(crate) fn wait_dependencies(
    reactor: &mut Reactor,
    paths: &argoexec_core::PodPaths,
    deps: &[String],
    signal_file: &Path,
) -> Result<(), Stop> {
    if deps.is_empty() {
        return Ok(());
    }
    tracing::info!(?deps, "waiting for dependencies");
    reactor.watcher_mut().watch(
        &paths.ctr_root(),
        WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR,
    );
    check_signal_file_idle(signal_file)?;
    let mut pending: Vec<&String> = deps.iter().collect();
    loop {
        let mut failure = None;
        pending.retain(|dep| {
            if failure.is_some() {
                return true;
            }
            reactor
                .watcher_mut()
                .watch(&paths.ctr_dir(dep), WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO);
            match dependency_state(paths, dep) {
                Ok(None) => true,
                Ok(Some(())) => {
                    tracing::debug!(dep = dep.as_str(), "dependency succeeded");
                    false
                }
                Err(e) => {
                    failure = Some(e);
                    true
                }
            }
        });
        if let Some(e) = failure {
            return Err(e.into());
        }
        if pending.is_empty() {
            return Ok(());
        }
        let wake = reactor.wait(Some(DEPENDENCY_RECHECK), None);
        idle_signals(&wake, signal_file)?;
    }
}

/// `Ok(None)`: not finished; `Ok(Some(()))`: exited 0; `Err`: failed or unreadable.
fn dependency_state(paths: &argoexec_core::PodPaths, dep: &str) -> Result<Option<()>, SupervisorError> {
    let text = match std::fs::read_to_string(paths.exitcode_file(dep)) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SupervisorError::ReadDependency {
                dep: dep.to_string(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    match protocol::parse_exitcode(&text) {
        Some(0) => Ok(Some(())),
        Some(code) => Err(SupervisorError::Dependency {
            dep: dep.to_string(),
            code,
        }),
        None => Err(SupervisorError::BadDependencyCode {
            dep: dep.to_string(),
            text,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_file_rules() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("signal");
        assert_eq!(take_signal(&p), None);
        std::fs::write(&p, "").unwrap();
        assert_eq!(take_signal(&p), None);
        assert!(p.exists(), "an empty file is left for its writer to finish");
        std::fs::write(&p, "15").unwrap();
        assert_eq!(take_signal(&p), Some(15));
        assert!(!p.exists(), "read and deleted");
        std::fs::write(&p, "junk").unwrap();
        assert_eq!(take_signal(&p), None);
        assert!(!p.exists());
    }
}
