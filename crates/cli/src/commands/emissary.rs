//! `argoexec emissary -- CMD ARGS…` and `argoexec artifact-plugin-sidecar -- PLUGIN… SOCKET`: hand over to the wrapper (no async runtime here, so
//! the wrapper's memory stays tiny).

use std::ffi::OsString;

/// Arguments of `argoexec emissary`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The command and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub command: Vec<OsString>,
}

/// Run the wrapper; returns the child's exit code (or 64).
pub fn run(args: Args) -> i32 {
    run_as(args, argoexec_supervisor::Role::Wrapper)
}

/// Run the wrapper in `role` (`artifact-plugin-sidecar` is the same wrapper, stopped only by
/// its signal file; the per-pod copy answers both, and so does this program when it is the
/// per-pod copy).
pub fn run_as(args: Args, role: argoexec_supervisor::Role) -> i32 {
    argoexec_supervisor::run(argoexec_supervisor::SupervisorOptions {
        paths: argoexec_core::PodPaths::from_env(),
        command: args.command,
        role,
    })
}
