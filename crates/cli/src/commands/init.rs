//! `argoexec init`.

use anyhow::Context;
use argoexec_core::PodPaths;

/// Arguments of `argoexec init`.
pub type Args = super::StepArgs;

/// Run init; returns the exit code.
pub fn run(args: Args) -> i32 {
    let paths = PodPaths::from_env();
    nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    let r = (|| -> anyhow::Result<()> {
        let ctx = super::bootstrap(&paths, args.pod_annotations.as_deref())?;
        let exe = std::env::current_exe().context("cannot find the argoexec binary")?;
        super::runtime()?.block_on(argoexec_flows::init::run(&ctx, &exe))?;
        Ok(())
    })();
    match r {
        Ok(()) => 0,
        Err(e) => super::fail(&paths, &e),
    }
}
