//! The OCI runtime spec (`config.json`) of a container on containerd, written by the node
//! as Docker writes it for the same create request: the image's entrypoint, command, env
//! and working directory under Kubernetes' override rules; host networking (no network or
//! UTS namespace, the host's `/etc/hosts` and `/etc/resolv.conf`); a new mount namespace;
//! the sandbox's IPC namespace, and its PID namespace with `shareProcessNamespace`; Docker's
//! default capabilities with `add`/`drop` applied; the usual `/proc`, `/dev`, `/sys` mounts
//! with masked and read-only paths (none when privileged); memory and CPU limits in the
//! cgroup `/argoexec/<id>`.

use serde_json::{Value, json};

use super::image::ImageConfig;
use crate::runtime::ContainerSpec;

/// Docker's default capability set.
const DEFAULT_CAPS: [&str; 14] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

/// Every capability of Linux 5.x, in the kernel's numbering (what `privileged` and
/// `add: [ALL]` give, as far as the node's own bounding set goes).
const ALL_CAPS: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

const MASKED: [&str; 9] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
];

const READ_ONLY: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// Where a pod's container joins the pod's namespaces ([`super::sandbox`]).
#[derive(Debug, Clone)]
pub(crate) enum SandboxNs {
    /// The pause process: its IPC namespace, and its PID namespace when the pod shares one.
    Pause {
        /// The pause process.
        pid: u32,
    },
    /// An IPC namespace kept by a bind mount at `path` (a pod that shares no PIDs).
    Ipc {
        /// The namespace's file.
        path: std::path::PathBuf,
    },
}

/// The argv under Kubernetes' rules: `command` replaces the entrypoint and drops the image's
/// `CMD`; `args` replaces `CMD`.
pub(crate) fn argv(spec: &ContainerSpec, image: &ImageConfig) -> Vec<String> {
    let entrypoint = spec
        .entrypoint
        .clone()
        .unwrap_or_else(|| image.entrypoint.clone());
    let cmd = match (&spec.cmd, &spec.entrypoint) {
        (Some(c), _) => c.clone(),
        (None, Some(_)) => Vec::new(),
        (None, None) => image.cmd.clone(),
    };
    entrypoint.into_iter().chain(cmd).collect()
}

/// The image's env with the container's on top (same key: the container's wins).
pub(crate) fn env(spec: &ContainerSpec, image: &ImageConfig) -> Vec<String> {
    let mut out: Vec<String> = image
        .env
        .iter()
        .filter(|kv| {
            let k = kv.split_once('=').map_or(kv.as_str(), |(k, _)| k);
            !spec.env.iter().any(|(ck, _)| ck == k)
        })
        .cloned()
        .collect();
    out.extend(spec.env.iter().map(|(k, v)| format!("{k}={v}")));
    out
}

/// `uid[:gid]` of the spec, else of the image (numeric only: the node reads no
/// `/etc/passwd`); root when neither says.
///
/// # Errors
/// A user name: the message says to use a numeric `runAsUser`.
pub(crate) fn user(spec: &ContainerSpec, image: &ImageConfig) -> Result<(u32, u32), String> {
    let s = spec.user.clone().unwrap_or_else(|| image.user.clone());
    if s.is_empty() {
        return Ok((0, 0));
    }
    let (u, g) = s.split_once(':').unwrap_or((&s, "0"));
    match (u.parse(), g.parse()) {
        (Ok(u), Ok(g)) => Ok((u, g)),
        _ => Err(format!(
            "user {s:?} is not numeric; the containerd runtime of the local node resolves no user names (set runAsUser and runAsGroup)"
        )),
    }
}

/// The capabilities of [`ALL_CAPS`] in the node's own bounding set (a container cannot get
/// more than its runtime has; Docker reads the kernel's list the same way).
fn all_caps() -> Vec<String> {
    let bounding = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("CapBnd:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .unwrap_or(u64::MAX);
    ALL_CAPS
        .iter()
        .enumerate()
        .filter(|(bit, _)| bounding & (1u64 << bit) != 0)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// The capability set after `add` and `drop` (`ALL` in either).
///
/// # Errors
/// A capability Linux does not have, in Docker's words.
pub(crate) fn capabilities(spec: &ContainerSpec) -> Result<Vec<String>, String> {
    let norm = |c: &String| {
        let c = c.to_ascii_uppercase();
        if c.starts_with("CAP_") || c == "ALL" {
            c
        } else {
            format!("CAP_{c}")
        }
    };
    let add: Vec<String> = spec.cap_add.iter().map(norm).collect();
    let drop: Vec<String> = spec.cap_drop.iter().map(norm).collect();
    if let Some(bad) = add
        .iter()
        .chain(&drop)
        .find(|c| *c != "ALL" && !ALL_CAPS.contains(&c.as_str()))
    {
        return Err(format!("unknown capability: {bad:?}"));
    }
    if spec.privileged {
        return Ok(all_caps());
    }
    let mut caps: Vec<String> = if add.iter().any(|c| c == "ALL") {
        all_caps()
    } else {
        DEFAULT_CAPS
            .iter()
            .map(|s| s.to_string())
            .chain(add.iter().cloned())
            .collect()
    };
    if drop.iter().any(|c| c == "ALL") {
        caps.retain(|c| add.contains(c));
    } else {
        caps.retain(|c| !drop.contains(c));
    }
    caps.sort();
    caps.dedup();
    Ok(caps)
}

/// The whole runtime spec.
///
/// # Errors
/// A user the node cannot resolve.
pub(crate) fn runtime_spec(
    id: &str,
    spec: &ContainerSpec,
    image: &ImageConfig,
    sandbox: Option<SandboxNs>,
) -> Result<Value, String> {
    let (uid, gid) = user(spec, image)?;
    let caps = capabilities(spec)?;
    let cwd = spec
        .working_dir
        .clone()
        .filter(|w| !w.is_empty())
        .or_else(|| (!image.working_dir.is_empty()).then(|| image.working_dir.clone()))
        .unwrap_or_else(|| "/".into());
    let mut namespaces = vec![json!({"type": "mount"})];
    match sandbox {
        // A container of a pod: the sandbox's IPC (and PID) namespace.
        Some(SandboxNs::Pause { pid }) => {
            namespaces.push(json!({"type": "ipc", "path": format!("/proc/{pid}/ns/ipc")}));
            if spec.share_pid {
                namespaces.push(json!({"type": "pid", "path": format!("/proc/{pid}/ns/pid")}));
            } else {
                namespaces.push(json!({"type": "pid"}));
            }
        }
        Some(SandboxNs::Ipc { path }) => {
            if spec.share_pid {
                return Err("a shared process namespace needs the pod's pause process".into());
            }
            namespaces.push(json!({"type": "ipc", "path": path}));
            namespaces.push(json!({"type": "pid"}));
        }
        // The sandbox itself: new ones to share.
        None => {
            namespaces.push(json!({"type": "ipc"}));
            namespaces.push(json!({"type": "pid"}));
        }
    }
    let mut mounts = vec![
        json!({"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]}),
        json!({"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}),
        json!({"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]}),
        json!({"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]}),
        json!({"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]}),
        json!({"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]}),
        json!({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]}),
    ];
    for host in ["/etc/hosts", "/etc/resolv.conf"] {
        if std::path::Path::new(host).exists() {
            mounts.push(
                json!({"destination": host, "type": "bind", "source": host, "options": ["rbind", "ro"]}),
            );
        }
    }
    for m in &spec.mounts {
        let mode = if m.read_only { "ro" } else { "rw" };
        mounts.push(json!({"destination": m.target, "type": "bind", "source": m.source, "options": ["rbind", "rprivate", mode]}));
    }
    let mut resources = json!({"devices": [{"allow": spec.privileged, "access": "rwm"}]});
    if let Some(m) = spec.memory {
        resources["memory"] = json!({"limit": m});
    }
    if let Some(n) = spec.nano_cpus {
        let period: i64 = 100_000;
        resources["cpu"] = json!({"quota": n * period / 1_000_000_000, "period": period});
    }
    let (masked, read_only): (Vec<&str>, Vec<&str>) = if spec.privileged {
        (Vec::new(), Vec::new())
    } else {
        (MASKED.to_vec(), READ_ONLY.to_vec())
    };
    Ok(json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": spec.tty,
            "user": {"uid": uid, "gid": gid},
            "args": argv(spec, image),
            "env": env(spec, image),
            "cwd": cwd,
            "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
            "noNewPrivileges": false,
        },
        "root": {"path": "rootfs", "readonly": spec.read_only_rootfs},
        "mounts": mounts,
        "linux": {
            "namespaces": namespaces,
            "resources": resources,
            "cgroupsPath": format!("/argoexec/{id}"),
            "maskedPaths": masked,
            "readonlyPaths": read_only,
        },
    }))
}

/// The OCI process of an exec in a container created from `container_spec`.
pub(crate) fn exec_process(container_spec: &Value, command: &[String], tty: bool) -> Value {
    let p = &container_spec["process"];
    json!({
        "terminal": tty,
        "user": p["user"],
        "args": command,
        "env": p["env"],
        "cwd": p["cwd"],
        "capabilities": p["capabilities"],
        "noNewPrivileges": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> ImageConfig {
        ImageConfig {
            entrypoint: vec!["/ep".into()],
            cmd: vec!["c1".into()],
            env: vec!["PATH=/bin".into(), "A=image".into()],
            ..Default::default()
        }
    }

    #[test]
    fn command_and_args_override_as_in_kubernetes() {
        let mut s = ContainerSpec::default();
        assert_eq!(argv(&s, &image()), ["/ep", "c1"]);
        s.cmd = Some(vec!["a".into()]);
        assert_eq!(argv(&s, &image()), ["/ep", "a"]);
        s.cmd = None;
        s.entrypoint = Some(vec!["/x".into()]);
        assert_eq!(argv(&s, &image()), ["/x"], "command drops the image's CMD");
    }

    #[test]
    fn container_env_overrides_the_images() {
        let s = ContainerSpec {
            env: vec![("A".into(), "pod".into())],
            ..Default::default()
        };
        assert_eq!(env(&s, &image()), ["PATH=/bin", "A=pod"]);
    }

    #[test]
    fn users_are_numeric() {
        let mut s = ContainerSpec::default();
        assert_eq!(user(&s, &image()), Ok((0, 0)));
        s.user = Some("8737".into());
        assert_eq!(user(&s, &image()), Ok((8737, 0)));
        s.user = Some("1:2".into());
        assert_eq!(user(&s, &image()), Ok((1, 2)));
        s.user = Some("nobody".into());
        assert!(user(&s, &image()).unwrap_err().contains("runAsUser"));
    }

    #[test]
    fn capabilities_add_and_drop() {
        let s = ContainerSpec {
            cap_add: vec!["SYS_PTRACE".into()],
            cap_drop: vec!["KILL".into()],
            ..Default::default()
        };
        let caps = capabilities(&s).unwrap();
        assert!(caps.contains(&"CAP_SYS_PTRACE".to_string()) && !caps.contains(&"CAP_KILL".to_string()));
        let none = ContainerSpec {
            cap_drop: vec!["ALL".into()],
            cap_add: vec!["CHOWN".into()],
            ..Default::default()
        };
        assert_eq!(capabilities(&none).unwrap(), ["CAP_CHOWN"]);
        let unknown = ContainerSpec {
            cap_add: vec!["NOT_A_CAP".into()],
            ..Default::default()
        };
        assert_eq!(
            capabilities(&unknown).unwrap_err(),
            "unknown capability: \"CAP_NOT_A_CAP\""
        );
    }

    #[test]
    fn a_pod_container_joins_the_sandbox() {
        let s = ContainerSpec {
            share_pid: true,
            memory: Some(1 << 20),
            ..Default::default()
        };
        let v = runtime_spec("c1", &s, &image(), Some(SandboxNs::Pause { pid: 42 })).unwrap();
        let ns = v["linux"]["namespaces"].as_array().unwrap();
        assert!(ns.contains(&json!({"type": "ipc", "path": "/proc/42/ns/ipc"})));
        assert!(ns.contains(&json!({"type": "pid", "path": "/proc/42/ns/pid"})));
        assert!(!ns.iter().any(|n| n["type"] == "network"), "host networking");
        assert_eq!(v["linux"]["resources"]["memory"]["limit"], 1 << 20);
        assert_eq!(v["linux"]["cgroupsPath"], "/argoexec/c1");
    }

    #[test]
    fn a_pod_without_shared_pids_joins_the_kept_ipc_namespace() {
        let held = Some(SandboxNs::Ipc {
            path: "/run/x/ipc".into(),
        });
        let v = runtime_spec("c1", &ContainerSpec::default(), &image(), held.clone()).unwrap();
        let ns = v["linux"]["namespaces"].as_array().unwrap();
        assert!(ns.contains(&json!({"type": "ipc", "path": "/run/x/ipc"})));
        assert!(ns.contains(&json!({"type": "pid"})), "a PID namespace of its own");
        let sharing = ContainerSpec {
            share_pid: true,
            ..Default::default()
        };
        let e = runtime_spec("c1", &sharing, &image(), held).unwrap_err();
        assert!(e.contains("pause"), "{e}");
    }
}
