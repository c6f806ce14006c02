//! `argoexec run|node|render …`: hand over to the local tools, `argoexec-local`, found beside
//! this program (a workstation's build or install) or on `PATH`, as git runs `git-<name>`.
//! The image ships without them, so there the answer is a clear error rather than a
//! subcommand that cannot work in a pod.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use argoexec_core::exit::EXECUTOR_FAILURE;

/// The local tools' program name.
pub const LOCAL_TOOLS: &str = "argoexec-local";

/// The subcommands that belong to the local tools.
pub const SUBCOMMANDS: [&str; 3] = ["run", "node", "render"];

/// Exec `argoexec-local WORDS…` with the global log flags; returns only on failure (exit 2
/// for a subcommand nobody has, 64 when the local tools are missing or cannot start).
pub fn hand_over(words: Vec<OsString>, loglevel: &str, format: argoexec_logging::Format) -> i32 {
    let name = words
        .first()
        .map(|w| w.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !SUBCOMMANDS.contains(&name.as_str()) {
        eprintln!(
            "argoexec: unknown subcommand {name:?}: expected init, wait, emissary, kill, artifact, \
             version (in-pod) or run, node, render (local tools); see argoexec --help"
        );
        return 2;
    }
    let Some(program) = find(std::env::current_exe().ok().as_deref(), std::env::var_os("PATH")) else {
        eprintln!(
            "argoexec {name}: the local tools ({LOCAL_TOOLS}) are not beside this program nor on \
             PATH; an executor image carries only the in-pod subcommands. Build them with \
             `cargo build --release -p argoexec-local` or run `bash scripts/demo.sh`."
        );
        return EXECUTOR_FAILURE;
    };
    let format = match format {
        argoexec_logging::Format::Text => "text",
        argoexec_logging::Format::Json => "json",
    };
    let err = std::process::Command::new(&program)
        .args(["--loglevel", loglevel, "--log-format", format])
        .args(words)
        .exec();
    eprintln!("argoexec {name}: cannot start {}: {err}", program.display());
    EXECUTOR_FAILURE
}

/// `argoexec-local` beside `exe` (symlinks resolved), else the first on `path`.
fn find(exe: Option<&Path>, path: Option<OsString>) -> Option<PathBuf> {
    let beside = exe
        .and_then(|e| e.canonicalize().ok())
        .and_then(|e| e.parent().map(|d| d.join(LOCAL_TOOLS)));
    let on_path = path
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(LOCAL_TOOLS));
    beside.into_iter().chain(on_path).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tool(dir: &Path, mode: u32) -> PathBuf {
        let p = dir.join(LOCAL_TOOLS);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn beside_the_program_first_then_path() {
        let bin = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let exe = bin.path().join("argoexec");
        std::fs::write(&exe, "").unwrap();
        let on_path = tool(elsewhere.path(), 0o755);
        let path = Some(elsewhere.path().as_os_str().to_owned());
        assert_eq!(find(Some(&exe), path.clone()), Some(on_path));
        let beside = tool(bin.path(), 0o755);
        assert_eq!(find(Some(&exe), path), Some(beside.canonicalize().unwrap()));
    }

    #[test]
    fn a_file_that_cannot_run_is_not_the_tools() {
        let dir = tempfile::tempdir().unwrap();
        tool(dir.path(), 0o644);
        assert_eq!(find(None, Some(dir.path().as_os_str().to_owned())), None);
        assert_eq!(find(None, None), None);
    }

    #[test]
    fn other_words_are_refused_without_looking() {
        assert_eq!(
            hand_over(vec!["resourc".into()], "info", argoexec_logging::Format::Text),
            2
        );
    }
}
