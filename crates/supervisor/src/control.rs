//! Control files under `ctr/`: the `signal` file, the debug-pause files `before`/`after`,
//! and the `exitcode` files of container-set dependencies — watched with inotify, with
//! polling as the fallback.
//!
//! * `ctr/<name>` is watched for `IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE`. Only a
//!   close-after-write or a rename-into-place named `signal` triggers a read of the signal
//!   file, so a non-atomic writer is never caught half way; any event re-checks the pause
//!   files. If inotify cannot be set up the reactor polls every 100 ms instead (Argo polls the
//!   signal file every 2 s and the pause files every 1 s; milliseconds are cheap here).
//! * The signal file is read, deleted, and if it holds a number > 0 that number is the signal
//!   to send. An empty file is left alone (a writer may be mid-way); an unparsable one is
//!   deleted and logged.
//! * Dependencies: `ctr/` is watched for new directories and each `ctr/<dep>` for
//!   close-write/rename once it exists; on top of that the wait wakes every second, which
//!   covers a missed event. An empty `exitcode` file counts as not written yet.
//! * While no child runs (dependency wait, debug pauses, retry delay) a terminating signal
//!   — TERM, INT, HUP or QUIT sent to the wrapper, or TERM/INT/HUP/QUIT/KILL in the signal
//!   file — ends the wait with that number (exit 128 + N, e.g. 143 as
//!   late Argo v3.4 does while waiting for dependencies). Other signals are dropped.

use crate::error::{Stop, SupervisorError};
use crate::reactor::{Reactor, Wake};
use crate::signals::is_terminating;
use argoexec_core::protocol;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use std::io::ErrorKind;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a dependency wait re-checks even without an inotify event.
const DEPENDENCY_RECHECK: Duration = Duration::from_secs(1);

/// What one read of the inotify queue found.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsEvents {
    /// The signal file was written or moved into place.
    pub signal_file: bool,
    /// Any event at all.
    pub any: bool,
}

/// An inotify instance watching this container's directory (plus dependency directories).
#[derive(Debug)]
pub struct Watcher {
    inotify: Option<Inotify>,
    own: Option<WatchDescriptor>,
    watched: Vec<PathBuf>,
    buf: Vec<u8>,
}

impl Watcher {
    /// Watch `own_dir` (`ctr/<name>`); on any failure the watcher reports [`Self::polling`].
    pub fn new(own_dir: &Path) -> Self {
        let mut w = Self {
            inotify: None,
            own: None,
            watched: Vec::new(),
            buf: vec![0; 4096],
        };
        match Inotify::init() {
            Ok(i) => w.inotify = Some(i),
            Err(e) => {
                tracing::debug!("inotify unavailable, polling instead: {e}");
                return w;
            }
        }
        let mask = WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO | WatchMask::CREATE;
        if let Some(i) = w.inotify.as_mut() {
            match i.watches().add(own_dir, mask) {
                Ok(wd) => {
                    w.own = Some(wd);
                    w.watched.push(own_dir.to_path_buf());
                }
                Err(e) => tracing::debug!("cannot watch {}, polling instead: {e}", own_dir.display()),
            }
        }
        w
    }

    /// True when the own directory is not watched and callers must poll.
    pub fn polling(&self) -> bool {
        self.own.is_none()
    }

    /// The inotify descriptor, if any.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.inotify.as_ref().map(|i| i.as_fd())
    }

    /// Add a watch on `dir` (idempotent). False when it could not be added (e.g. the
    /// directory does not exist yet).
    pub fn watch(&mut self, dir: &Path, mask: WatchMask) -> bool {
        if self.watched.iter().any(|p| p == dir) {
            return true;
        }
        let Some(i) = self.inotify.as_mut() else {
            return false;
        };
        match i.watches().add(dir, mask) {
            Ok(_) => {
                self.watched.push(dir.to_path_buf());
                true
            }
            Err(_) => false,
        }
    }

    /// Read all queued events.
    pub fn read(&mut self) -> FsEvents {
        let mut ev = FsEvents::default();
        let Some(i) = self.inotify.as_mut() else { return ev };
        loop {
            match i.read_events(&mut self.buf) {
                Ok(events) => {
                    for e in events {
                        ev.any = true;
                        let own = self.own.as_ref() == Some(&e.wd);
                        let written = e.mask.intersects(EventMask::CLOSE_WRITE | EventMask::MOVED_TO);
                        if e.mask.contains(EventMask::Q_OVERFLOW)
                            || (own && written && e.name.is_some_and(|n| n == protocol::SIGNAL))
                        {
                            ev.signal_file = true;
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return ev,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::debug!("reading inotify events failed: {e}");
                    return ev;
                }
            }
        }
    }
}

/// Read and delete the signal file. Returns the signal number it asked for, if any.
pub fn take_signal(path: &Path) -> Option<i32> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::debug!("cannot read {}: {e}", path.display());
            return None;
        }
    };
    if text.trim().is_empty() {
        return None;
    }
    if let Err(e) = std::fs::remove_file(path) {
        tracing::debug!("cannot delete {}: {e}", path.display());
    }
    let sig = protocol::parse_signal(&text);
    if sig.is_none() {
        tracing::warn!("ignoring signal file with content {text:?}");
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
    tracing::info!("paused: create {} to continue", release.display());
    check_signal_file_idle(signal_file)?;
    while !exists(release) {
        let wake = reactor.wait(None, None);
        idle_signals(&wake, signal_file)?;
    }
    tracing::info!("pause released by {}", release.display());
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
        let d = std::env::temp_dir().join(format!("argoexec-control-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("signal");
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
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn watcher_sees_signal_file() {
        let d = std::env::temp_dir().join(format!("argoexec-watch-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let mut w = Watcher::new(&d);
        if w.polling() {
            return; // no inotify here; the fallback is exercised by the reactor
        }
        std::fs::write(d.join("other"), "x").unwrap();
        let ev = w.read();
        assert!(ev.any && !ev.signal_file);
        protocol::write_atomic(&d.join("signal"), b"15", 0o666).unwrap();
        assert!(w.read().signal_file);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
