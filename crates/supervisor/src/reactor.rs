//! The wrapper's single event loop: one `poll(2)` over the signalfd, the inotify descriptor
//! and the child's output pipes.
//!
//! Every phase of a run (waiting for dependencies, a debug pause, a running child, the delay
//! between retries) calls [`Reactor::wait`] in a loop and reacts to the [`Wake`] it returns.
//! Output is copied inside `wait` (one buffer per ready pipe per wake), so the phases only
//! deal with signals, child exits and file changes. When inotify is unavailable the loop
//! wakes at least every 100 ms and reports "files may have changed", which is the polling
//! fallback for the signal file and the pause/dependency files.

use crate::control::Watcher;
use crate::signals::{Received, Signals};
use crate::tee::{Stream, Tee};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::time::{Duration, Instant};

/// Polling period when inotify cannot be used.
pub const FALLBACK_PERIOD: Duration = Duration::from_millis(100);

/// What happened during one [`Reactor::wait`].
#[derive(Debug, Default)]
pub struct Wake {
    /// Signals received, SIGCHLD excluded.
    pub signals: Vec<Received>,
    /// A SIGCHLD arrived: reap.
    pub child_event: bool,
    /// The signal file may have been written: check it.
    pub signal_file: bool,
    /// Some watched file may have appeared: re-check what the phase waits for.
    pub fs_changed: bool,
}

/// The signalfd, the file watcher, and the poll loop over them.
#[derive(Debug)]
pub struct Reactor {
    signals: Signals,
    watcher: Watcher,
    last_fallback: Instant,
}

fn ready(p: &PollFd<'_>) -> bool {
    p.revents()
        .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR))
}

fn to_poll_timeout(t: Option<Duration>) -> PollTimeout {
    match t {
        None => PollTimeout::NONE,
        // Round up so a sub-millisecond remainder does not spin.
        Some(d) => {
            let ms = d.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
        }
    }
}

impl Reactor {
    /// Combine the signalfd and the watcher.
    pub fn new(signals: Signals, watcher: Watcher) -> Self {
        Self {
            signals,
            watcher,
            last_fallback: Instant::now(),
        }
    }

    /// The file watcher (to add dependency watches).
    pub fn watcher_mut(&mut self) -> &mut Watcher {
        &mut self.watcher
    }

    /// Block until something happens or `timeout` passes (`None` waits for ever), copying
    /// ready output through `tee` on the way.
    pub fn wait(&mut self, timeout: Option<Duration>, tee: Option<&mut Tee>) -> Wake {
        let polling = self.watcher.polling();
        let timeout = if polling {
            Some(timeout.map_or(FALLBACK_PERIOD, |t| t.min(FALLBACK_PERIOD)))
        } else {
            timeout
        };
        let [out_fd, err_fd] = tee.as_deref().map(Tee::fds).unwrap_or([None, None]);
        let mut fds = Vec::with_capacity(4);
        fds.push(PollFd::new(self.signals.fd(), PollFlags::POLLIN));
        let ino = self.watcher.fd().map(|fd| {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
            fds.len() - 1
        });
        let out = out_fd.map(|fd| {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
            fds.len() - 1
        });
        let err = err_fd.map(|fd| {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
            fds.len() - 1
        });
        let mut wake = Wake::default();
        if let Err(e) = poll(&mut fds, to_poll_timeout(timeout))
            && e != nix::errno::Errno::EINTR
        {
            tracing::warn!("poll failed: {e}");
            std::thread::sleep(FALLBACK_PERIOD);
        }
        let is = |i: Option<usize>| i.is_some_and(|i| ready(&fds[i]));
        let (sig_ready, ino_ready, out_ready, err_ready) = (ready(&fds[0]), is(ino), is(out), is(err));
        drop(fds);

        if sig_ready {
            let mut all = Vec::new();
            self.signals.drain(&mut all);
            for r in all {
                if r.is_child_event() {
                    wake.child_event = true;
                } else {
                    wake.signals.push(r);
                }
            }
        }
        if ino_ready {
            let ev = self.watcher.read();
            wake.signal_file |= ev.signal_file;
            wake.fs_changed |= ev.any;
        }
        if polling && self.last_fallback.elapsed() >= FALLBACK_PERIOD {
            self.last_fallback = Instant::now();
            wake.signal_file = true;
            wake.fs_changed = true;
        }
        if let Some(tee) = tee {
            if out_ready {
                tee.pump(Stream::Out);
            }
            if err_ready {
                tee.pump(Stream::Err);
            }
        }
        wake
    }
}
