//! `argoexec init`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use argoexec_core::PodPaths;

/// Arguments of `argoexec init`.
pub type Args = super::StepArgs;

/// The per-pod copy's program name, looked for beside `argoexec`.
pub const WRAPPER: &str = "argoexec-emissary";

/// Run init; returns the exit code.
pub fn run(args: Args) -> i32 {
    let paths = PodPaths::from_env();
    nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    let r = (|| -> anyhow::Result<()> {
        let ctx = super::bootstrap(&paths, args.pod_annotations.as_deref())?;
        argoexec_backends::ensure_built(ctx.env.runtime_executor)?;
        let exe = std::env::current_exe().context("cannot find the argoexec binary")?;
        let wrapper = wrapper_binary(&exe);
        tracing::debug!(wrapper = %wrapper.display(), "the per-pod copy");
        super::runtime()?.block_on(argoexec_flows::init::run(&ctx, &wrapper, &exe))?;
        Ok(())
    })();
    match r {
        Ok(()) => 0,
        Err(e) => super::fail(&paths, &e),
    }
}

/// What init copies to `/var/run/argo/argoexec`: the slim `argoexec-emissary` beside this
/// program (the image has both), else this program itself, which takes the same `emissary`
/// and `kill` command lines (a build without the slim program still runs its pods).
pub fn wrapper_binary(exe: &Path) -> PathBuf {
    let beside = exe
        .canonicalize()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(WRAPPER)));
    match beside {
        Some(p) if p.is_file() => p,
        _ => {
            tracing::warn!(
                "{WRAPPER} is not beside {}: copying argoexec itself into the pod",
                exe.display()
            );
            exe.to_path_buf()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slim_copy_beside_else_itself() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("argoexec");
        std::fs::write(&exe, "").unwrap();
        assert_eq!(wrapper_binary(&exe), exe);
        std::fs::write(dir.path().join(WRAPPER), "").unwrap();
        assert_eq!(
            wrapper_binary(&exe),
            dir.path().canonicalize().unwrap().join(WRAPPER)
        );
    }
}
