//! The wrapper's single event loop: one `poll(2)` over the signalfd, the inotify descriptor
//! and the child's output pipes.
//!
//! Every phase of a run (waiting for dependencies, a debug pause, a running child, the delay
//! between retries) calls [`Reactor::wait`] in a loop and reacts to the [`Wake`] it returns.
//! Output is copied inside `wait` (one buffer per ready pipe per wake), so the phases only
//! deal with signals, child exits and file changes. When the watcher polls
//! ([`Watcher::polling`]) the loop wakes every [`POLL_PERIOD`] (2 s) and reports "files may
//! have changed", which is the polling fallback for the signal file, the pause markers and
//! the `exitcode` files of dependencies and main containers.

use crate::signals::{Received, Signals};
use crate::tee::{Stream, Tee};
use crate::watch::Watcher;
use argoexec_core::fswatch::POLL_PERIOD;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

/// How long to back off after `poll(2)` itself failed.
const POLL_ERROR_BACKOFF: Duration = Duration::from_millis(100);

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
    /// When the files were last reported as possibly changed by the poller.
    last_poll: Instant,
}

fn ready(p: &PollFd<'_>) -> bool {
    p.revents()
        .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// Add `fd` (if any) to the poll set; its index there.
fn push<'fd>(fds: &mut Vec<PollFd<'fd>>, fd: Option<BorrowedFd<'fd>>) -> Option<usize> {
    fd.map(|fd| {
        fds.push(PollFd::new(fd, PollFlags::POLLIN));
        fds.len() - 1
    })
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
            last_poll: Instant::now(),
        }
    }

    /// The file watcher (to add dependency watches).
    pub fn watcher_mut(&mut self) -> &mut Watcher {
        &mut self.watcher
    }

    /// Block until something happens or `timeout` passes (`None` waits for ever), copying
    /// ready output (and a terminal's input) through `tee` on the way.
    pub fn wait(&mut self, timeout: Option<Duration>, tee: Option<&mut Tee>) -> Wake {
        let polling = self.watcher.polling();
        let timeout = if polling {
            let next_poll = (self.last_poll + POLL_PERIOD).saturating_duration_since(Instant::now());
            Some(timeout.map_or(next_poll, |t| t.min(next_poll)))
        } else {
            timeout
        };
        let [out_fd, err_fd, in_fd] = tee.as_deref().map(Tee::fds).unwrap_or([None, None, None]);
        let mut fds = Vec::with_capacity(5);
        fds.push(PollFd::new(self.signals.fd(), PollFlags::POLLIN));
        let ino = push(&mut fds, self.watcher.fd());
        let (out, err, input) = (
            push(&mut fds, out_fd),
            push(&mut fds, err_fd),
            push(&mut fds, in_fd),
        );
        let mut wake = Wake::default();
        if let Err(e) = poll(&mut fds, to_poll_timeout(timeout))
            && e != nix::errno::Errno::EINTR
        {
            tracing::warn!(error = %e, "poll failed");
            std::thread::sleep(POLL_ERROR_BACKOFF);
        }
        let is = |i: Option<usize>| i.is_some_and(|i| ready(&fds[i]));
        let (sig_ready, ino_ready, out_ready, err_ready, in_ready) =
            (ready(&fds[0]), is(ino), is(out), is(err), is(input));
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
        if self.watcher.polling() && self.last_poll.elapsed() >= POLL_PERIOD {
            self.last_poll = Instant::now();
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
            if in_ready {
                tee.relay_input();
            }
        }
        wake
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argoexec_core::fswatch::WatchMode;

    #[test]
    fn a_polling_watcher_wakes_the_loop_every_poll_period() {
        let d = tempfile::tempdir().unwrap();
        let signals = Signals::block_all().unwrap();
        let mut reactor = Reactor::new(signals, Watcher::new(d.path(), WatchMode::Poll));
        let start = Instant::now();
        let wake = reactor.wait(None, None);
        let took = start.elapsed();
        assert!(wake.fs_changed && wake.signal_file, "{wake:?}");
        assert!(
            took >= POLL_PERIOD - Duration::from_millis(50),
            "woke after {took:?}"
        );
        assert!(took < POLL_PERIOD * 2, "woke after {took:?}");
        let wake = reactor.wait(Some(Duration::from_millis(10)), None);
        assert!(!wake.fs_changed, "no poll before the period is over: {wake:?}");
    }
}
