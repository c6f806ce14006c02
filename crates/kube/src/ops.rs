//! The seam operations both exec-based backends (kubelet, k8sapi) share, written once over
//! [`PodAccess`]: graceful kill, and base-layer file reads while the container runs.
//!
//! **Kill** (Argo's `KillGracefully`, with its errors returned instead of swallowed):
//! SIGTERM to every named container that is running, wait up to the grace period, SIGKILL
//! to the ones left, wait again ([`KILL_WAIT`]); whatever still runs is an aggregated error.
//! The signal is an exec of `/var/run/argo/argoexec kill N 1` when the container mounts
//! `/var/run/argo` (the init container put the binary there, so images without a shell
//! work), else `/bin/sh -c "kill -N 1"` (Argo v3.3's command); when the first is not
//! runnable the other is tried. A `workflows.argoproj.io/kill-cmd-<container>` annotation
//! replaces both ([`argoexec_core::kill_cmd`]: `%d` becomes the signal number; a command
//! without `%d` runs as is for SIGTERM and SIGKILL, with a warning); a malformed one fails
//! that container's kill naming the annotation. A signal sent from inside a container reaches its PID 1 only
//! if PID 1 handles that signal (the kernel drops default-action signals, SIGKILL included,
//! sent to a namespace's init from inside it): a sidecar whose PID 1 ignores SIGTERM cannot
//! be stopped this way, and the error says so.
//!
//! **Files**: `cat` / `tar -cf -` through exec, only while the container runs; for an exited
//! container the answer is §5.4's: this executor does not support outputs from the base
//! image layer (use a volume).

use std::future::Future;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use argoexec_archive::{GzipOptions, ParallelGzWriter};
use argoexec_core::ExecutorKind;
use argoexec_runtime::{ErrorKind, RuntimeError};
use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::AttachedProcess;
use tokio_util::io::SyncIoBridge;

use crate::exec::{self, ExecFailure};
use crate::podstate::{ContainerState, state_of};

/// How long to wait for containers to go after SIGKILL.
pub const KILL_WAIT: Duration = Duration::from_secs(10);
/// How long one signalling exec may take.
pub const SIGNAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest file `get_file_contents` returns.
pub const MAX_FILE: usize = 256 * 1024 * 1024;
/// Where the init container puts the binary.
pub const ARGOEXEC_IN_POD: &str = "/var/run/argo/argoexec";

/// What a backend offers the shared operations.
pub trait PodAccess: Send + Sync {
    /// Which backend this is (for errors).
    fn backend(&self) -> ExecutorKind;

    /// The pod, as the backend currently sees it.
    fn pod(&self) -> impl Future<Output = Result<Pod, RuntimeError>> + Send;

    /// Start `argv` in `container` with stdout and stderr attached.
    fn exec(
        &self,
        container: &str,
        argv: Vec<String>,
    ) -> impl Future<Output = Result<AttachedProcess, RuntimeError>> + Send;

    /// Wait until every name has terminated or `timeout` passed; returns the names that
    /// have not terminated.
    fn wait_terminated(
        &self,
        names: &[String],
        timeout: Duration,
    ) -> impl Future<Output = Result<Vec<String>, RuntimeError>> + Send;
}

fn err(
    a: &impl PodAccess,
    kind: ErrorKind,
    action: &'static str,
    c: &str,
    m: impl Into<String>,
) -> RuntimeError {
    RuntimeError::new(kind, a.backend(), action, c, m)
}

/// Whether `container` mounts `/var/run/argo` in the pod spec.
fn mounts_var_run_argo(pod: &Pod, container: &str) -> bool {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
        .filter(|c| c.name == container)
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .any(|m| m.mount_path.trim_end_matches('/') == "/var/run/argo")
}

/// The signalling commands for `signal`, in the order to try them.
pub fn signal_commands(prefer_argoexec: bool, signal: i32) -> Vec<Vec<String>> {
    let ours = vec![
        ARGOEXEC_IN_POD.into(),
        "kill".into(),
        signal.to_string(),
        "1".into(),
    ];
    let shell = vec!["/bin/sh".into(), "-c".into(), format!("kill -{signal} 1")];
    if prefer_argoexec {
        vec![ours, shell]
    } else {
        vec![shell, ours]
    }
}

/// Send `signal` to PID 1 of `container`; returns the index of the command that worked.
async fn signal_one(
    a: &impl PodAccess,
    pod: &Pod,
    container: &str,
    signal: i32,
    first: Option<usize>,
) -> Result<usize, RuntimeError> {
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .map(|a| argoexec_core::kill_cmd::kill_command(a, container, signal))
        .transpose()
        .map_err(|e| err(a, ErrorKind::Fatal, "signal", container, e.to_string()))?
        .flatten();
    let cmds = match annotated {
        Some(k) => {
            if !k.substituted {
                tracing::warn!(
                    container,
                    signal,
                    command = ?k.argv,
                    "the kill-cmd annotation has no %d: running it as is for this signal too"
                );
            }
            vec![k.argv]
        }
        None => signal_commands(mounts_var_run_argo(pod, container), signal),
    };
    let order: Vec<usize> = match first {
        Some(i) => vec![i],
        None => (0..cmds.len()).collect(),
    };
    let mut tried = Vec::new();
    for i in order {
        let argv = cmds[i].clone();
        let shown = argv.join(" ");
        let outcome = match a.exec(container, argv).await {
            Ok(p) => exec::collect(p, 4096, SIGNAL_TIMEOUT).await,
            Err(e) => return Err(e),
        };
        match outcome {
            Ok(_) => {
                tracing::debug!(container, signal, command = %shown, "signalled");
                return Ok(i);
            }
            // The target's PID 1 died of the signal and took the exec'd process (in its pid
            // namespace) with it before a status was sent: delivered. Termination is
            // checked next either way.
            Err(ExecFailure::NonZero { code: 137, .. } | ExecFailure::NoStatus | ExecFailure::Io(_)) => {
                tracing::debug!(container, signal, command = %shown, "signalled; the exec ended with the container");
                return Ok(i);
            }
            Err(f) => {
                let next = f.is_not_runnable();
                tried.push(format!("`{shown}`: {f}"));
                if !next {
                    break;
                }
            }
        }
    }
    Err(err(
        a,
        ErrorKind::Fatal,
        "signal",
        container,
        format!("cannot send signal {signal}: {}", tried.join("; ")),
    ))
}

/// TERM → `grace` → KILL → [`KILL_WAIT`]; see the module docs.
///
/// # Errors
/// Every container that could not be signalled or is still running, aggregated.
pub async fn kill_gracefully(
    a: &impl PodAccess,
    containers: &[String],
    grace: Duration,
) -> Result<(), RuntimeError> {
    let pod = a.pod().await?;
    let running: Vec<String> = containers
        .iter()
        .filter(|c| match state_of(&pod, c) {
            ContainerState::Running => true,
            ContainerState::Terminated { .. } => false,
            s => {
                tracing::info!(container = %c, state = ?s, "not running; nothing to kill");
                false
            }
        })
        .cloned()
        .collect();
    if running.is_empty() {
        return Ok(());
    }
    tracing::info!(containers = ?running, ?grace, "stopping containers: SIGTERM");
    let mut problems = Vec::new();
    let term = join_all(running.iter().map(|c| signal_one(a, &pod, c, 15, None))).await;
    let mut how = Vec::new();
    let mut signalled = Vec::new();
    for (c, r) in running.iter().zip(term) {
        match r {
            Ok(i) => {
                how.push((c.clone(), i));
                signalled.push(c.clone());
            }
            Err(e) => problems.push(format!("{c}: {}", e.message)),
        }
    }
    let left = a.wait_terminated(&signalled, grace).await?;
    if !left.is_empty() {
        tracing::warn!(containers = ?left, ?grace, "still running after SIGTERM and the grace period: SIGKILL");
        let kills = join_all(left.iter().map(|c| {
            let first = how.iter().find(|(n, _)| n == c).map(|(_, i)| *i);
            signal_one(a, &pod, c, 9, first)
        }))
        .await;
        let mut killed = Vec::new();
        for (c, r) in left.iter().zip(kills) {
            match r {
                Ok(_) => killed.push(c.clone()),
                Err(e) => problems.push(format!("{c}: {}", e.message)),
            }
        }
        for c in a.wait_terminated(&killed, KILL_WAIT).await? {
            problems.push(format!(
                "{c}: still running {KILL_WAIT:?} after SIGKILL; a signal sent from inside a container reaches its PID 1 \
                 only if PID 1 handles it, so give this container a SIGTERM handler (or use the emissary executor)"
            ));
        }
    }
    if !problems.is_empty() {
        // A container that ended meanwhile (by itself, or stopped by a pod deletion) makes
        // its signal failure moot: the kill's aim is reached.
        if let Ok(now) = a.pod().await {
            problems.retain(|p| {
                let c = p.split(':').next().unwrap_or("");
                let gone = matches!(state_of(&now, c), ContainerState::Terminated { .. });
                if gone {
                    tracing::info!(container = c, problem = %p, "the container has terminated; its signal failure does not matter");
                }
                !gone
            });
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(err(
            a,
            ErrorKind::Fatal,
            "kill",
            &running.join(","),
            problems.join("; "),
        ))
    }
}

/// Fail unless `container` runs: base-layer reads need a live process to exec into.
async fn require_running(
    a: &impl PodAccess,
    action: &'static str,
    container: &str,
    path: &Path,
) -> Result<(), RuntimeError> {
    let pod = a.pod().await?;
    match state_of(&pod, container) {
        ContainerState::Running => Ok(()),
        s => Err(err(
            a,
            ErrorKind::Unsupported,
            action,
            container,
            format!(
                "{} executor does not support outputs from base image layer ({} is on the image's filesystem and the \
                 container is {}, so nothing can exec into it). Use an emptyDir",
                a.backend(),
                path.display(),
                match s {
                    ContainerState::Terminated { .. } => "terminated",
                    _ => "not running",
                }
            ),
        )),
    }
}

fn failure_kind(f: &ExecFailure) -> ErrorKind {
    match f {
        ExecFailure::NonZero { stderr, .. }
            if stderr.contains("No such file") || stderr.contains("not found") =>
        {
            ErrorKind::NotFound
        }
        ExecFailure::NoStatus | ExecFailure::TimedOut(_) | ExecFailure::Io(_) => ErrorKind::Transient,
        _ => ErrorKind::Fatal,
    }
}

/// A file of a running container, by `cat`.
///
/// # Errors
/// `Unsupported` when the container is not running; `NotFound` when the file is missing.
pub async fn read_file(a: &impl PodAccess, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
    const ACTION: &str = "read file from";
    require_running(a, ACTION, container, path).await?;
    let p = a
        .exec(container, vec!["cat".into(), path.display().to_string()])
        .await?;
    exec::collect(p, MAX_FILE, Duration::from_secs(600))
        .await
        .map(|o| o.stdout)
        .map_err(|f| {
            err(
                a,
                failure_kind(&f),
                ACTION,
                container,
                format!("cat {}: {f}", path.display()),
            )
        })
}

/// `src` of a running container as a `.tar.gz` at `dest` (single top-level entry
/// `basename(src)`), streamed from `tar -cf -` into the multi-core gzip writer.
///
/// # Errors
/// `Unsupported` when the container is not running; `NotFound` when `src` is missing.
pub async fn copy_file(
    a: &impl PodAccess,
    container: &str,
    src: &Path,
    dest: &Path,
    level: Option<u32>,
) -> Result<(), RuntimeError> {
    const ACTION: &str = "copy file from";
    require_running(a, ACTION, container, src).await?;
    let s = src.display().to_string();
    let trimmed = s.trim_end_matches('/');
    let (parent, base) = match trimmed.rsplit_once('/') {
        Some(("", b)) => ("/".to_string(), b.to_string()),
        Some((p, b)) => (p.to_string(), b.to_string()),
        None => (".".to_string(), trimmed.to_string()),
    };
    let p = a
        .exec(
            container,
            vec!["tar".into(), "-C".into(), parent, "-cf".into(), "-".into(), base],
        )
        .await?;
    let (stdout, verdict) = exec::stream(p);
    let dest_owned: PathBuf = dest.to_path_buf();
    let opts = GzipOptions {
        level: level.unwrap_or(6).min(9),
        ..GzipOptions::default()
    };
    let written = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let mut input = SyncIoBridge::new(stdout);
        let file = std::fs::File::create(&dest_owned)?;
        let mut gz = ParallelGzWriter::new(BufWriter::with_capacity(1 << 20, file), opts);
        std::io::copy(&mut input, &mut gz)?;
        gz.finish()?.flush()
    })
    .await
    .map_err(|e| std::io::Error::other(e.to_string()))
    .and_then(|r| r);
    let judged = verdict.await;
    let fail = |kind, m: String| {
        let _ = std::fs::remove_file(dest);
        Err(err(a, kind, ACTION, container, m))
    };
    match (judged, written) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(f), _) => fail(failure_kind(&f), format!("tar {}: {f}", src.display())),
        (Ok(()), Err(e)) => fail(ErrorKind::Fatal, format!("write {}: {e}", dest.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_command_order() {
        let c = signal_commands(true, 15);
        assert_eq!(c[0], ["/var/run/argo/argoexec", "kill", "15", "1"]);
        assert_eq!(c[1], ["/bin/sh", "-c", "kill -15 1"]);
        assert_eq!(signal_commands(false, 9)[0], ["/bin/sh", "-c", "kill -9 1"]);
    }
}
