//! Signal reception through a `signalfd`, and forwarding to the child's process group.
//!
//! Before anything is spawned, [`Signals::block_all`] blocks every signal in the (single
//! threaded) wrapper and opens a non-blocking signalfd for the full set, so signals become
//! readable events in the wrapper's one poll loop instead of asynchronous handlers. The
//! child must not inherit the mask: `spawn` clears it in the child before `exec`.
//!
//! Forwarding rules (Argo v3.4+): every signal except SIGCHLD and SIGURG goes to the child's
//! process group (`kill(-pgid)`), falling back to the child's pid when the group is gone.
//! One addition: a signal whose sender is the wrapper itself is not forwarded — the only way
//! that happens is a SIGPIPE raised by the wrapper's own write to a closed stdout, which
//! says nothing about the child.
//!
//! Caveat for the caller: signals are blocked only in the calling thread, so the wrapper
//! must run before the process creates any other thread.

use crate::error::SupervisorError;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::os::fd::{AsFd, BorrowedFd};

/// A signal read from the signalfd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The signal number.
    pub signo: i32,
    /// The sender's pid (0 for the kernel).
    pub sender: i32,
}

impl Received {
    /// Whether this is SIGCHLD (a child changed state).
    pub fn is_child_event(&self) -> bool {
        self.signo == Signal::SIGCHLD as i32
    }

    /// Whether this signal is forwarded to the child (see the module doc).
    pub fn is_forwarded(&self) -> bool {
        self.signo != Signal::SIGCHLD as i32
            && self.signo != Signal::SIGURG as i32
            && self.sender != std::process::id() as i32
    }
}

/// Signals that end the wrapper when no child is running to receive them (dependency wait,
/// debug pause): TERM, INT, HUP, QUIT, and KILL (only possible through the signal file).
pub fn is_terminating(signo: i32) -> bool {
    [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGKILL,
    ]
    .iter()
    .any(|s| *s as i32 == signo)
}

/// The wrapper's signalfd; owning it means all signals are blocked.
#[derive(Debug)]
pub struct Signals {
    fd: SignalFd,
}

impl Signals {
    /// Block every signal in this thread and open a non-blocking signalfd for them.
    ///
    /// # Errors
    /// [`SupervisorError::Signals`] when the mask or the signalfd cannot be set up.
    pub fn block_all() -> Result<Self, SupervisorError> {
        let all = SigSet::all();
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&all), None).map_err(SupervisorError::Signals)?;
        let fd = SignalFd::with_flags(&all, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(SupervisorError::Signals)?;
        Ok(Self { fd })
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Read every pending signal into `out`.
    pub fn drain(&self, out: &mut Vec<Received>) {
        loop {
            match self.fd.read_signal() {
                Ok(Some(info)) => out.push(Received {
                    signo: info.ssi_signo as i32,
                    sender: info.ssi_pid as i32,
                }),
                Ok(None) => return,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the signalfd failed");
                    return;
                }
            }
        }
    }
}

/// Send `signo` to the process group led by `pid` (the child), or to `pid` alone when the
/// group no longer exists.
pub fn forward(pid: i32, signo: i32) {
    match crate::sys::kill(-pid, signo) {
        Ok(()) => tracing::debug!(signo, pgid = pid, "forwarded signal to the child's process group"),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => match crate::sys::kill(pid, signo) {
            Ok(()) => tracing::debug!(signo, pid, "forwarded signal to the child"),
            Err(e) => tracing::debug!(signo, pid, error = %e, "could not signal the child"),
        },
        Err(e) => tracing::debug!(signo, pgid = pid, error = %e, "could not signal the child's group"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarding_rules() {
        let me = std::process::id() as i32;
        let r = |signo: Signal, sender| Received {
            signo: signo as i32,
            sender,
        };
        assert!(r(Signal::SIGTERM, 1).is_forwarded());
        assert!(r(Signal::SIGUSR1, 0).is_forwarded());
        assert!(!r(Signal::SIGCHLD, 1).is_forwarded());
        assert!(r(Signal::SIGCHLD, 1).is_child_event());
        assert!(!r(Signal::SIGURG, 1).is_forwarded());
        assert!(!r(Signal::SIGPIPE, me).is_forwarded());
        assert!(
            Received {
                signo: libc::SIGRTMIN() + 1,
                sender: 1
            }
            .is_forwarded()
        );
        assert!(is_terminating(15) && is_terminating(9) && is_terminating(2));
        assert!(!is_terminating(10) && !is_terminating(28));
    }
}
