//! `pause`: the local node's pause container (`POD`). It holds the pod's shared namespaces,
//! sleeps until SIGTERM/SIGINT, and, as PID 1 of a shared PID namespace
//! (`shareProcessNamespace`), reaps every orphan so no zombie outlives its process.
//!
//! Must run before any other thread starts: it blocks the signals it waits for.

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// Block TERM/INT/CHLD, then wait: reap on CHLD, return on TERM/INT.
pub fn run() -> Result<(), nix::Error> {
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGCHLD] {
        set.add(s);
    }
    set.thread_block()?;
    loop {
        match set.wait()? {
            Signal::SIGCHLD => reap(),
            Signal::SIGTERM | Signal::SIGINT => return Ok(()),
            _ => {}
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
