//! Reading `/proc` of the shared pid namespace: which processes are container root processes,
//! and which container each belongs to.
//!
//! A container's root process is one whose parent is outside the namespace (`PPid` 0),
//! except PID 1 (the pause process) and ourselves. Its container is named by
//! `ARGO_CONTAINER_NAME` in `/proc/<pid>/environ` (set by the controller on every container
//! from Argo v3.0), or else identified by the container id in `/proc/<pid>/cgroup`, which the
//! pod status maps to a name. Reading another user's `environ` or `root` needs
//! `CAP_SYS_PTRACE`, as does reading a non-dumpable process (runc's init before it execs).

use std::path::{Path, PathBuf};

/// The environment variable naming a container (set by the controller on every container).
pub const NAME_VAR: &[u8] = b"ARGO_CONTAINER_NAME=";

/// Numeric entries of the `/proc` directory `proc`.
///
/// # Errors
/// When `proc` cannot be listed.
pub fn pids(proc: &Path) -> std::io::Result<Vec<i32>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(proc)? {
        let e = e?;
        if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) {
            out.push(pid);
        }
    }
    Ok(out)
}

/// `PF_KTHREAD` in the flags field of `/proc/<pid>/stat`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// The parent pid from the text of `/proc/<pid>/stat` (the field after the state, which
/// follows the command name in parentheses; the name itself may contain `)` and spaces),
/// and whether the process is a kernel thread (`kthreadd` also has parent 0, on a host).
pub fn ppid_from_stat(stat: &str) -> Option<(i32, bool)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    fields.next()?; // state
    let ppid = fields.next()?.parse().ok()?;
    // pgrp, session, tty_nr, tpgid, then flags.
    let flags: u64 = fields.nth(4).and_then(|f| f.parse().ok()).unwrap_or(0);
    Some((ppid, flags & PF_KTHREAD != 0))
}

/// `ARGO_CONTAINER_NAME` from the NUL-separated bytes of `/proc/<pid>/environ`.
pub fn name_from_environ(environ: &[u8]) -> Option<String> {
    environ
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(NAME_VAR))
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The container id in the text of `/proc/<pid>/cgroup`: the last path segment of the first
/// line that has one, without a `.scope` suffix, after the last `:` (cri-containerd) and the
/// last `-` (`docker-<id>`, `crio-<id>`). Ids shorter than 12 hex digits are not ids (a
/// private cgroup namespace shows `/`).
pub fn container_id_from_cgroup(cgroup: &str) -> Option<String> {
    cgroup.lines().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        let seg = path.rsplit('/').next()?;
        let seg = seg.strip_suffix(".scope").unwrap_or(seg);
        let seg = seg.rsplit(':').next()?;
        let id = seg.rsplit('-').next()?;
        (id.len() >= 12 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_string())
    })
}

/// What one look at a root process told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// `ARGO_CONTAINER_NAME`, when readable and set.
    pub name: Option<String>,
    /// The container id from the cgroup, when there is one.
    pub container_id: Option<String>,
}

/// Paths of one process's `/proc` entries.
#[derive(Debug, Clone)]
pub struct ProcDir(pub PathBuf);

impl ProcDir {
    /// `/proc/<pid>` under `proc`.
    pub fn new(proc: &Path, pid: i32) -> Self {
        Self(proc.join(pid.to_string()))
    }

    /// The parent pid and the kernel-thread flag, `None` when the process is gone.
    pub fn ppid(&self) -> Option<(i32, bool)> {
        ppid_from_stat(&std::fs::read_to_string(self.0.join("stat")).ok()?)
    }

    /// Name and container id, as far as they can be read now.
    pub fn identity(&self) -> Identity {
        Identity {
            name: std::fs::read(self.0.join("environ"))
                .ok()
                .and_then(|e| name_from_environ(&e)),
            container_id: std::fs::read_to_string(self.0.join("cgroup"))
                .ok()
                .and_then(|c| container_id_from_cgroup(&c)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parent_survives_odd_command_names() {
        assert_eq!(
            ppid_from_stat("42 (sleep) S 0 42 42 0 -1 4194560 1"),
            Some((0, false))
        );
        assert_eq!(ppid_from_stat("7 (a) b) c) R 3 7 7 0 -1 0"), Some((3, false)));
        assert_eq!(
            ppid_from_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0"),
            Some((0, true))
        );
        assert_eq!(ppid_from_stat("garbage"), None);
    }

    #[test]
    fn environ_name() {
        let env = b"PATH=/bin\0ARGO_CONTAINER_NAME=main\0HOME=/\0";
        assert_eq!(name_from_environ(env).as_deref(), Some("main"));
        assert_eq!(name_from_environ(b"ARGO_CONTAINER_NAME=\0"), None);
        assert_eq!(name_from_environ(b"X_ARGO_CONTAINER_NAME=main\0"), None);
    }

    #[test]
    fn cgroup_ids_of_each_runtime() {
        let id = "9cbccc0efb890920775a5b8e91df104b0594ab2aec5ca7df6f9fbceeb050aa13";
        for line in [
            format!("0::/docker/{id}"),
            format!("0::/system.slice/docker-{id}.scope"),
            format!("0::/kubepods.slice/kubepods-pod1.slice/crio-{id}.scope"),
            format!("0::/kubepods-burstable-pod1.slice:cri-containerd:{id}"),
            format!("12:pids:/kubepods/besteffort/pod1/{id}\n0::/x"),
        ] {
            assert_eq!(container_id_from_cgroup(&line).as_deref(), Some(id), "{line}");
        }
        assert_eq!(container_id_from_cgroup("0::/"), None);
        assert_eq!(container_id_from_cgroup("0::/init.scope"), None);
    }
}
