//! `argoexec kill SIGNUM PID` and `argoexec pause`, for pods that run this program itself
//! rather than the per-pod copy; both are the wrapper's ([`argoexec_supervisor::kill`],
//! [`argoexec_supervisor::pause`]).

use argoexec_core::exit::EXECUTOR_FAILURE;

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
    match argoexec_supervisor::kill::send(args.signum, args.pid) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("argoexec kill: {:#}", anyhow::Error::from(e));
            EXECUTOR_FAILURE
        }
    }
}

/// The pause container; 0 on TERM/INT, 64 if its signals cannot be set up.
pub fn pause() -> i32 {
    match argoexec_supervisor::pause::run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("argoexec pause: {e}");
            EXECUTOR_FAILURE
        }
    }
}
