//! The wrapper's file watcher: one inotify instance over its own `ctr/<name>` directory plus
//! any directory a phase adds (`ctr/` itself, dependencies' and main containers' directories),
//! or polling when inotify cannot be used.
//!
//! * The own directory is watched for `IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE`. Only a
//!   close-after-write or a rename-into-place named `signal` marks the signal file as worth
//!   reading, so a non-atomic writer is never caught half way; any event at all tells the
//!   phase to re-check what it waits for.
//! * Polling ([`Watcher::polling`]): when `inotify_init` fails (`EMFILE`: the per-user
//!   instance limit), when adding a watch fails for another reason than a missing directory
//!   (`ENOSPC`: the per-user watch limit), or when `ARGOEXEC_FS_WATCH=poll` forces it
//!   ([`argoexec_core::fswatch`]). The reactor then wakes every 2 s and reports every file
//!   as possibly changed, as Argo v4.1's fallback does. Watches already in place keep
//!   working beside the polling. One warning is logged, at the first fallback.

use argoexec_core::fswatch::{self, WatchMode};
use argoexec_core::protocol;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use std::io::{self, ErrorKind};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

/// What one read of the inotify queue found.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsEvents {
    /// The signal file was written or moved into place (or the queue overflowed).
    pub signal_file: bool,
    /// Any event at all.
    pub any: bool,
}

/// An inotify instance watching this container's directory (plus others), or a poller.
#[derive(Debug)]
pub struct Watcher {
    inotify: Option<Inotify>,
    own: Option<WatchDescriptor>,
    watched: Vec<PathBuf>,
    polling: bool,
    buf: Vec<u8>,
}

impl Watcher {
    /// Watch `own_dir` (`ctr/<name>`) in `mode`; any failure turns polling on.
    pub fn new(own_dir: &Path, mode: WatchMode) -> Self {
        let mut w = Self {
            inotify: None,
            own: None,
            watched: Vec::new(),
            polling: false,
            buf: vec![0; 4096],
        };
        if mode == WatchMode::Poll {
            tracing::info!(
                var = fswatch::MODE_ENV,
                period_s = fswatch::POLL_PERIOD.as_secs(),
                "file watching by polling, as asked"
            );
            w.polling = true;
            return w;
        }
        match Inotify::init() {
            Ok(i) => w.inotify = Some(i),
            Err(e) => {
                w.fall_back(&e, own_dir);
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
                Err(e) => w.fall_back(&e, own_dir),
            }
        }
        w
    }

    /// Turn polling on, warning once.
    fn fall_back(&mut self, e: &io::Error, dir: &Path) {
        if self.polling {
            return;
        }
        self.polling = true;
        let exhausted = fswatch::is_exhausted(e);
        tracing::warn!(
            error = %e,
            dir = %dir.display(),
            exhausted,
            period_s = fswatch::POLL_PERIOD.as_secs(),
            "inotify unavailable, polling files instead; if the inotify limits are exhausted, raise fs.inotify.max_user_instances / fs.inotify.max_user_watches"
        );
    }

    /// True when the callers must poll: some directory could not be watched.
    pub fn polling(&self) -> bool {
        self.polling
    }

    /// The inotify descriptor, if any.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.inotify.as_ref().map(|i| i.as_fd())
    }

    /// Add a watch on `dir` (idempotent). False when it is not watched: the directory does
    /// not exist yet (a watch on its parent tells when it appears), or the watcher polls
    /// (then the poller covers it).
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
            Err(e) if e.kind() == ErrorKind::NotFound => false,
            Err(e) => {
                self.fall_back(&e, dir);
                false
            }
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
                    tracing::warn!(error = %e, "reading inotify events failed, polling instead");
                    self.inotify = None;
                    self.own = None;
                    self.polling = true;
                    ev.any = true;
                    ev.signal_file = true;
                    return ev;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_the_signal_file() {
        let d = tempfile::tempdir().unwrap();
        let mut w = Watcher::new(d.path(), WatchMode::Inotify);
        assert!(!w.polling(), "inotify is expected to work where the tests run");
        std::fs::write(d.path().join("other"), "x").unwrap();
        let ev = w.read();
        assert!(ev.any && !ev.signal_file);
        protocol::write_atomic(&d.path().join("signal"), b"15", 0o666).unwrap();
        assert!(w.read().signal_file);
    }

    #[test]
    fn forced_polling_uses_no_inotify() {
        let d = tempfile::tempdir().unwrap();
        let mut w = Watcher::new(d.path(), WatchMode::Poll);
        assert!(w.polling() && w.fd().is_none());
        assert!(!w.watch(d.path(), WatchMask::CREATE), "a poller adds no watches");
        std::fs::write(d.path().join("signal"), "15").unwrap();
        assert!(!w.read().any, "a poller reports nothing by itself");
    }

    #[test]
    fn exhausted_watches_turn_polling_on_and_keep_the_watches() {
        let d = tempfile::tempdir().unwrap();
        let mut w = Watcher::new(d.path(), WatchMode::Inotify);
        w.fall_back(&io::Error::from_raw_os_error(libc::ENOSPC), d.path());
        assert!(w.polling());
        protocol::write_atomic(&d.path().join("signal"), b"15", 0o666).unwrap();
        assert!(
            w.read().signal_file,
            "the own directory's watch still works beside polling"
        );
    }

    #[test]
    fn a_missing_directory_is_not_a_fallback() {
        let d = tempfile::tempdir().unwrap();
        let mut w = Watcher::new(d.path(), WatchMode::Inotify);
        assert!(!w.watch(&d.path().join("not-yet"), WatchMask::CREATE));
        assert!(!w.polling(), "ENOENT waits for the directory, it does not poll");
    }
}
