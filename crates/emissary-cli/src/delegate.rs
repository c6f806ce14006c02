//! Hand a command line this copy does not run to the full executor.
//!
//! Argo v4.0's controller runs `/var/run/argo/argoexec artifact-plugin-init …` in each
//! `init-artifact-<plugin>` init container (the plugin's image, where `/var/run/argo` is the
//! pod's shared volume). Argo's `/var/run/argo/argoexec` is its whole executor; here it is
//! this small copy, which has no async runtime, TLS or artifact drivers. So `init` installs
//! the full executor beside it as `argoexec-full` when a template loads inputs through a
//! plugin, and this module `exec`s it with the same arguments.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// The full executor's name beside the per-pod copy (installed by `init`).
pub const FULL: &str = "argoexec-full";

/// Where the full executor may be, for a copy at `exe`: `argoexec-full` beside it (the
/// legacy layout's `/var/run/argo`), then `../argoexec` (the image's root, for the copy at
/// `/argo-bin/bin/argoexec` of the init-less layout). Never `exe` itself.
pub fn candidates(exe: &Path) -> Vec<PathBuf> {
    let Some(dir) = exe.parent() else {
        return Vec::new();
    };
    let mut out = vec![dir.join(FULL)];
    if let Some(up) = dir.parent() {
        out.push(up.join("argoexec"));
    }
    let me = exe.canonicalize().ok();
    out.retain(|p| p.is_file() && p.canonicalize().ok() != me);
    out
}

/// Replace this process with the full executor running `args`; returns only on failure,
/// with the exit code (64) after printing why.
pub fn exec(args: Vec<OsString>) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("argoexec: cannot find this program's path: {e}");
            return argoexec_core::exit::EXECUTOR_FAILURE;
        }
    };
    let subcommand = args
        .iter()
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(full) = candidates(&exe).into_iter().next() else {
        eprintln!(
            "argoexec {subcommand}: this is the per-pod copy ({}) and the full executor is not \
             beside it ({FULL}); `argoexec init` installs it for templates with artifact-plugin \
             inputs: is the init container from argoexec-rs?",
            exe.display()
        );
        return argoexec_core::exit::EXECUTOR_FAILURE;
    };
    let err = std::process::Command::new(&full)
        .arg0("argoexec")
        .args(args)
        .exec();
    eprintln!("argoexec {subcommand}: cannot run {}: {err}", full.display());
    argoexec_core::exit::EXECUTOR_FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_first_then_the_image_root_never_itself() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let me = bin.join("argoexec");
        std::fs::write(&me, "").unwrap();
        assert!(candidates(&me).is_empty());
        std::fs::write(root.path().join("argoexec"), "").unwrap();
        assert_eq!(candidates(&me), vec![root.path().join("argoexec")]);
        std::fs::write(bin.join(FULL), "").unwrap();
        assert_eq!(candidates(&me)[0], bin.join(FULL));
        // A copy at the image's root would find itself as ../argoexec only via a link.
        std::fs::remove_file(root.path().join("argoexec")).unwrap();
        std::os::unix::fs::symlink(&me, root.path().join("argoexec")).unwrap();
        assert_eq!(candidates(&me), vec![bin.join(FULL)]);
    }
}
