//! Starting the child: `PATH` resolution, spawning in its own process group, the OOM-killer
//! preference, and reaping.
//!
//! * Resolution follows Go's `exec.LookPath`, which Argo uses: a name containing `/` is used
//!   as is (it must be an executable file); otherwise each `PATH` entry is tried in order
//!   (an empty entry means the current directory) and the first regular file with an execute
//!   bit wins. An unset `PATH` falls back to the usual
//!   `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`. Failure reads
//!   `failed to find name in PATH: exec: "foo": executable file not found in $PATH`.
//! * The child keeps the name it was given as `argv[0]` (a shell would do the same; Argo
//!   passes the resolved path), inherits the environment, the umask (0) and stdin, gets
//!   piped stdout/stderr and leads a new process group (`setpgid(0, 0)`), which is where
//!   forwarded signals go. When the wrapper's stdin is a terminal the child runs on a pty
//!   instead (`pty.rs`), as the leader of a new session with the pty as its controlling
//!   terminal. Its signal mask is cleared before `exec` (the wrapper blocks
//!   everything; see `sys::clear_signal_mask_on_exec`).
//! * Right after the spawn the child's `oom_score_adj` is raised above the wrapper's, so under
//!   memory pressure the kernel kills the command and the wrapper survives to write the exit
//!   code. The kernel's badness is RSS pages + adj × limit / 1000, and the wrapper's RSS
//!   counts its resident binary pages (≈ 9 MiB measured), so a fixed +100 (2.4 MiB at a
//!   24 MiB limit) lost to a tiny `tr` and the wrapper was killed (seen in the OOM test);
//!   the raise is therefore at least enough to outweigh twice the wrapper's RSS at the
//!   container's memory limit, and never under +100 ([`oom_raise`]). Errors are only logged.
//! * The wrapper is a child subreaper, so orphaned grandchildren are re-parented to it;
//!   [`reap`] collects every exited child and reports the one it is waiting for.

use crate::error::SupervisorError;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A resolved command line.
#[derive(Debug, Clone)]
pub struct Program {
    /// The file to execute.
    pub path: PathBuf,
    /// `argv[0]`, as given.
    pub arg0: OsString,
    /// The remaining arguments.
    pub args: Vec<OsString>,
}

/// Resolve `command[0]` against `path_var` (the `PATH` value, `None` when unset).
///
/// # Errors
/// [`SupervisorError::NoCommand`] for an empty command, [`SupervisorError::NotFound`] when
/// no executable matches.
pub fn resolve(command: &[OsString], path_var: Option<&OsStr>) -> Result<Program, SupervisorError> {
    let (arg0, args) = command.split_first().ok_or(SupervisorError::NoCommand)?;
    let name = arg0.to_string_lossy().into_owned();
    if arg0.is_empty() {
        return Err(SupervisorError::NotFound {
            name,
            reason: "executable file not found in $PATH".into(),
        });
    }
    let path = if arg0.as_bytes().contains(&b'/') {
        let p = PathBuf::from(arg0);
        check_executable(&p).map_err(|reason| SupervisorError::NotFound { name, reason })?;
        p
    } else {
        let search = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
        std::env::split_paths(search)
            .map(|dir| {
                if dir.as_os_str().is_empty() {
                    PathBuf::from(".").join(arg0)
                } else {
                    dir.join(arg0)
                }
            })
            .find(|p| check_executable(p).is_ok())
            .ok_or_else(|| SupervisorError::NotFound {
                name,
                reason: "executable file not found in $PATH".into(),
            })?
    };
    Ok(Program {
        path,
        arg0: arg0.clone(),
        args: args.to_vec(),
    })
}

/// Go's `findExecutable`: a regular file (after following links) with an execute bit.
fn check_executable(p: &Path) -> Result<(), String> {
    match std::fs::metadata(p) {
        Ok(m) if !m.is_dir() && m.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(m) if m.is_dir() => Err("is a directory".into()),
        Ok(_) => Err("permission denied".into()),
        Err(e) => Err(format!("stat {}: {}", p.display(), strip_os_error(&e))),
    }
}

/// `No such file or directory (os error 2)` → `no such file or directory`, as Go prints it.
fn strip_os_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s).to_string();
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => s,
    }
}

/// A running child and the read ends of its output pipes.
#[derive(Debug)]
pub struct Spawned {
    /// The child's pid, which is also its process-group id.
    pub pid: i32,
    /// Its stdout pipe (`None` on a terminal: read the terminal instead).
    pub stdout: Option<OwnedFd>,
    /// Its stderr pipe (`None` on a terminal).
    pub stderr: Option<OwnedFd>,
}

/// Start `program`: with `terminal` (the slave side of a pty) as its stdin, stdout and
/// stderr in a new session, or else with the wrapper's stdin and piped stdout/stderr in a new
/// process group.
///
/// # Errors
/// [`SupervisorError::Spawn`] with the OS error.
pub fn spawn(program: &Program, terminal: Option<OwnedFd>) -> Result<Spawned, SupervisorError> {
    let failed = |source| SupervisorError::Spawn {
        program: program.path.display().to_string(),
        source,
    };
    let mut cmd = Command::new(&program.path);
    crate::sys::clear_signal_mask_on_exec(&mut cmd);
    cmd.arg0(&program.arg0).args(&program.args);
    match terminal {
        // A session leader is its group's leader too: no `process_group`, which would make
        // the later `setsid` fail.
        Some(slave) => {
            cmd.stdin(slave.try_clone().map_err(failed)?)
                .stdout(slave.try_clone().map_err(failed)?)
                .stderr(slave);
            crate::sys::new_session_on_exec(&mut cmd);
        }
        None => {
            cmd.process_group(0)
                .stdin(Stdio::inherit())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
    }
    let mut child = cmd.spawn().map_err(failed)?;
    // The parent's copies of a terminal's slave side go with the command.
    drop(cmd);
    let pid = child.id() as i32;
    let stdout = child.stdout.take().map(OwnedFd::from);
    let stderr = child.stderr.take().map(OwnedFd::from);
    // The `Child` handle is dropped without waiting: the child is reaped by `reap`.
    drop(child);
    tracing::debug!(pid, program = %program.path.display(), "started the child");
    prefer_for_oom_kill(pid);
    Ok(Spawned { pid, stdout, stderr })
}

/// Raise the child's `oom_score_adj` to `min(1000, own + oom_raise(…))`; failures are
/// logged only.
fn prefer_for_oom_kill(pid: i32) {
    let own = std::fs::read_to_string("/proc/self/oom_score_adj")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .unwrap_or(0);
    let target = (own + oom_raise(own_rss_bytes(), memory_limit())).min(1000);
    match std::fs::write(format!("/proc/{pid}/oom_score_adj"), target.to_string()) {
        Ok(()) => tracing::debug!(pid, target, "raised the child's oom_score_adj"),
        Err(e) => tracing::debug!(pid, target, error = %e, "could not set the child's oom_score_adj"),
    }
}

/// How far above the wrapper's `oom_score_adj` the child's goes: enough that
/// `raise × limit / 1000` outweighs twice the wrapper's RSS, at least 100, at most 1000.
/// Without a limit the OOM is node-wide, where 100 is already a tenth of the machine.
pub fn oom_raise(wrapper_rss: u64, limit: Option<u64>) -> i32 {
    let needed = limit
        .filter(|l| *l > 0)
        .map_or(0, |l| wrapper_rss.saturating_mul(2000).div_ceil(l));
    needed.clamp(100, 1000) as i32
}

/// This process's resident set in bytes (0 when unknown).
fn own_rss_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4096, |p| p as u64);
    pages * page
}

/// The container's memory limit: cgroup v2 `memory.max`, else v1 `memory.limit_in_bytes`
/// (whose "unlimited" is a huge page-rounded number).
fn memory_limit() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    if let Some(v) = read("/sys/fs/cgroup/memory.max") {
        return v.trim().parse().ok();
    }
    read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|l| *l < 1 << 60)
}

/// Make this process a child subreaper so orphaned descendants are re-parented to it.
pub fn become_subreaper() {
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        tracing::debug!(error = %e, "could not become a child subreaper");
    }
}

/// Reap every child that has exited. Returns the status of `main` if it was among them.
pub fn reap(main: Option<i32>) -> Option<ExitStatus> {
    let mut found = None;
    while let Some((pid, status)) = crate::sys::reap_one() {
        if Some(pid) == main {
            tracing::debug!(pid, ?status, "the child exited");
            found = Some(status);
        } else {
            tracing::debug!(pid, ?status, "reaped an orphan");
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn resolves_through_path() {
        let p = resolve(
            &cmd(&["sh", "-c", "true"]),
            Some(OsStr::new("/nonexistent:/bin:/usr/bin")),
        )
        .unwrap();
        assert!(p.path.ends_with("sh") && p.path.is_absolute(), "{p:?}");
        assert_eq!(p.arg0, "sh");
        assert_eq!(p.args, cmd(&["-c", "true"]));
    }

    #[test]
    fn not_found_uses_go_wording() {
        let e = resolve(&cmd(&["no-such-cmd-xyz"]), Some(OsStr::new("/bin"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"failed to find name in PATH: exec: "no-such-cmd-xyz": executable file not found in $PATH"#
        );
        let e = resolve(&cmd(&["/no/such/file"]), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"failed to find name in PATH: exec: "/no/such/file": stat /no/such/file: no such file or directory"#
        );
        assert!(matches!(resolve(&[], None), Err(SupervisorError::NoCommand)));
    }

    #[test]
    fn non_executable_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("tool"), "x").unwrap();
        let e = resolve(&cmd(&["tool"]), Some(d.as_os_str())).unwrap_err();
        assert!(e.to_string().contains("executable file not found"), "{e}");
        std::fs::set_permissions(d.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            resolve(&cmd(&["tool"]), Some(d.as_os_str())).unwrap().path,
            d.join("tool")
        );
    }

    #[test]
    fn the_oom_raise_outweighs_the_wrapper_at_the_limit() {
        const MIB: u64 = 1 << 20;
        // The measured case: a 9.1 MiB wrapper, a 24 MiB limit, a 0.5 MiB child at adj 0.
        let raise = oom_raise(9 * MIB + MIB / 10, Some(24 * MIB));
        let page = 4096;
        let child = 128 * 1024 / page + u64::from(raise as u32) * (24 * MIB / page) / 1000;
        assert!(
            child > (9 * MIB + MIB / 10) / page,
            "raise {raise} loses to the wrapper"
        );
        assert_eq!(
            oom_raise(3 * MIB, Some(1 << 30)),
            100,
            "large limits keep the floor"
        );
        assert_eq!(oom_raise(3 * MIB, None), 100, "no limit: node-wide OOM");
        assert_eq!(oom_raise(64 * MIB, Some(16 * MIB)), 1000, "capped");
        assert_eq!(oom_raise(3 * MIB, Some(0)), 100);
    }
}
