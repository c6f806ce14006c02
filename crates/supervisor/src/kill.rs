//! `kill SIGNUM PID`: send a signal, for images without a `kill` binary. Argo's v3.4+
//! controller execs `/var/run/argo/argoexec kill 15 1` into wrapped containers.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Why a signal could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum KillError {
    /// The number names no signal.
    #[error("invalid signal number {0}")]
    BadSignal(i32),
    /// `kill(2)` failed.
    #[error("cannot send {signal} to {pid}")]
    Send {
        /// The signal.
        signal: Signal,
        /// The process (negative: a process group).
        pid: i32,
        /// The errno.
        #[source]
        source: nix::Error,
    },
}

/// Send signal `signum` to `pid` (negative for a process group).
pub fn send(signum: i32, pid: i32) -> Result<(), KillError> {
    let signal = Signal::try_from(signum).map_err(|_| KillError::BadSignal(signum))?;
    kill(Pid::from_raw(pid), signal).map_err(|source| KillError::Send { signal, pid, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_number_that_is_no_signal() {
        let e = send(999, std::process::id() as i32).unwrap_err();
        assert!(matches!(e, KillError::BadSignal(999)), "{e}");
    }

    #[test]
    fn signal_zero_probes_and_a_missing_process_is_an_error() {
        // Signal 0 is not in nix's enum: probing is not a kill.
        assert!(matches!(send(0, 1), Err(KillError::BadSignal(0))));
        // A pid far above pid_max names no process.
        let e = send(15, 0x3fff_ffff).unwrap_err();
        assert!(
            matches!(
                e,
                KillError::Send {
                    source: nix::Error::ESRCH,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("SIGTERM"), "{e}");
    }
}
