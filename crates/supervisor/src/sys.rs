//! The few raw calls the wrapper needs that nix 0.32 cannot express safely, each wrapped.
//!
//! nix models signals as an enum of the 31 classic signals, so it can neither send a
//! real-time signal nor report a child killed by one (its `waitpid` reaps the child and then
//! fails to decode the status, losing the exit code). The wrapper must forward every signal
//! and must know how its child died, so `kill(2)` and `waitpid(2)` are called through libc
//! here, with integers only. The other calls here are `pre_exec` hooks, unsafe to register
//! by nature.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// `kill(pid, signo)`; a negative `pid` addresses a process group.
///
/// # Errors
/// The `errno` of the call (`ESRCH` when no such process or group exists).
#[allow(unsafe_code)]
pub(crate) fn kill(pid: i32, signo: i32) -> io::Result<()> {
    // SAFETY: kill(2) takes two plain integers and reads or writes no memory of ours.
    let rc = unsafe { libc::kill(pid, signo) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reap one exited child, any child, without blocking: `waitpid(-1, WNOHANG)`.
///
/// Returns `None` when no child has exited yet or there are no children at all.
#[allow(unsafe_code)]
pub(crate) fn reap_one() -> Option<(i32, ExitStatus)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid(2) writes one c_int through the pointer, which points at a live,
        // properly aligned local for the duration of the call.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match pid {
            0 => return None,
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            -1 => return None,
            p => return Some((p, ExitStatus::from_raw(status))),
        }
    }
}

/// Make the child start with an empty signal mask.
///
/// The wrapper blocks every signal (they are read through a signalfd) and a child inherits
/// the mask across `exec`. Rust's `std::process` does not reset it on its `posix_spawn`
/// path (observed with strace: the child `exec`s with everything blocked, so `kill $$` does
/// nothing), so the mask is cleared in a `pre_exec` hook, which also makes std use
/// fork + exec.
#[allow(unsafe_code)]
pub(crate) fn clear_signal_mask_on_exec(cmd: &mut std::process::Command) {
    use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the forked child before exec, where only async-signal-safe
    // operations are allowed. It allocates nothing, takes no lock, and calls only
    // sigemptyset(3) and sigprocmask(2), both async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None).map_err(std::io::Error::from)
        });
    }
}

/// Make the child the leader of a new session whose controlling terminal is its stdin (a
/// pty's slave side, already in place as fd 0 when the hook runs: std sets up the standard
/// streams before running `pre_exec` hooks).
#[allow(unsafe_code)]
pub(crate) fn new_session_on_exec(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the forked child before exec. It allocates nothing and takes
    // no lock: setsid(2) and ioctl(TIOCSCTTY) are plain system calls, and fd 0 is open for
    // the whole hook (std has just made it the pty), so borrowing it is sound.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            let stdin = std::os::fd::BorrowedFd::borrow_raw(0);
            rustix::process::ioctl_tiocsctty(stdin)?;
            Ok(())
        });
    }
}
