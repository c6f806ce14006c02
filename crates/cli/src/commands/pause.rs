//! `argoexec pause`: the local node's pause container (`POD`). It holds the pod's shared
//! namespaces, sleeps until SIGTERM/SIGINT, and, as PID 1 of a shared PID namespace
//! (`shareProcessNamespace`), reaps every orphan so no zombie outlives its process.
//!
//! Must run before any other thread starts: it blocks the signals it waits for.

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// Block TERM/INT/CHLD, then wait: reap on CHLD, exit 0 on TERM/INT.
pub fn run() -> i32 {
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGCHLD] {
        set.add(s);
    }
    if let Err(e) = set.thread_block() {
        eprintln!("argoexec pause: cannot block signals: {e}");
        return argoexec_core::exit::EXECUTOR_FAILURE;
    }
    loop {
        match set.wait() {
            Ok(Signal::SIGCHLD) => reap(),
            Ok(Signal::SIGTERM | Signal::SIGINT) => return 0,
            Ok(_) => {}
            Err(e) => {
                eprintln!("argoexec pause: sigwait: {e}");
                return argoexec_core::exit::EXECUTOR_FAILURE;
            }
        }
    }
}

fn reap() {
    while let Ok(status) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if status == WaitStatus::StillAlive {
            break;
        }
    }
}
