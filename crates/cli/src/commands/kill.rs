//! `argoexec kill SIGNUM PID`: send a signal, for images without a `kill` binary (the v3.4+
//! controller execs `/var/run/argo/argoexec kill 15 1`).

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Arguments of `argoexec kill`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Signal number (e.g. 15).
    pub signum: i32,
    /// Process id (negative for a process group).
    #[arg(allow_hyphen_values = true)]
    pub pid: i32,
}

/// Send the signal; returns 0, or 64 with a message.
pub fn run(args: Args) -> i32 {
    let sig = match Signal::try_from(args.signum) {
        Ok(s) => s,
        Err(_) => {
            eprintln!("argoexec kill: invalid signal number {}", args.signum);
            return argoexec_core::exit::EXECUTOR_FAILURE;
        }
    };
    match kill(Pid::from_raw(args.pid), sig) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("argoexec kill: cannot send {sig} to {}: {e}", args.pid);
            argoexec_core::exit::EXECUTOR_FAILURE
        }
    }
}
