//! The pns backend: the runtime seam over a pod with `shareProcessNamespace: true`, where
//! the wait container sees every container's processes.
//!
//! | seam method | how |
//! |---|---|
//! | wait | the pidfds of the main containers' root processes ([`tracker`]), no polling; the API's pod watch only for a process never seen (logged), and for exit codes |
//! | file reads | `openat2(RESOLVE_IN_ROOT)` / a tar.gz walk under the `/proc/<pid>/root` handle taken when the process appeared ([`files`]) |
//! | kill | `pidfd_send_signal` TERM → grace → KILL per container ([`kill`]); no shell needed |
//! | output stream | the API server's `pods/log` (combined stdout+stderr), else the kubelet's `containerLogs` when `ARGO_KUBELET_HOST` is set |
//! | list names | the tracked processes (a rescan), unnamed ones named by container id through the pod status |
//!
//! Against Argo's pns executor (v2.3–v3.3): no `chroot` in and out of the main root (process
//! wide, needs `CAP_SYS_CHROOT`, unsafe on a multi-threaded runtime), so `SYS_CHROOT` is no
//! longer needed; roots are secured at first sight instead of by a 50 ms poll, so a main that
//! lives 1 ms keeps its outputs; exits come from pidfds instead of a 1 s `/proc/<pid>` poll or
//! the pod watch; kill errors are returned. `CAP_SYS_PTRACE` stays needed when main runs as
//! another user (or has capabilities the wait container lacks), and to read runc's
//! non-dumpable init before it execs (very short-lived mains) — docs/backends/pns.md.

mod files;
mod kill;
pub mod procs;
pub mod tracker;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use argoexec_backend_k8sapi::K8sApiExecutor;
use argoexec_backend_kubelet::{KubeletConfig, KubeletExecutor};
use argoexec_core::{ExecutorKind, PodPaths};
use argoexec_kube::ops::PodAccess;
use argoexec_runtime::{
    Capabilities, ContainerExit, ErrorKind, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use tokio_util::sync::CancellationToken;

pub use tracker::{Seen, Tracker};

const KIND: ExecutorKind = ExecutorKind::Pns;

/// How long a main container may stay unseen before wait also asks the pod watch.
pub const MAP_GRACE: Duration = Duration::from_secs(5);

/// How long wait waits for the pod status to carry exit codes after the pidfds fired.
const EXIT_CODE_WAIT: Duration = Duration::from_secs(5);

/// The default interval of the `/proc` scan that runs until the main containers are mapped.
pub const SCAN_INTERVAL: Duration = Duration::from_millis(1);

fn error(kind: ErrorKind, action: &'static str, container: &str, m: impl Into<String>) -> RuntimeError {
    RuntimeError::new(kind, KIND, action, container, m)
}

/// The tracker started by [`start_early`], picked up by [`PnsExecutor::new`].
static EARLY: std::sync::OnceLock<Tracker> = std::sync::OnceLock::new();

fn tracker_from_env() -> std::io::Result<Tracker> {
    let proc: PathBuf = std::env::var_os("ARGOEXEC_PNS_PROC").map_or_else(|| "/proc".into(), Into::into);
    let interval = std::env::var("ARGOEXEC_PNS_SCAN_INTERVAL")
        .ok()
        .and_then(|v| argoexec_core::template::container::parse_go_duration(&v))
        .unwrap_or(SCAN_INTERVAL);
    Tracker::start(proc, interval)
}

/// Start tracking processes now, before the rest of wait's start-up (template, API client):
/// a main that lives a few milliseconds may start meanwhile. Call it first thing in `wait`
/// when the executor is pns; [`PnsExecutor::new`] then uses this tracker. A failure is left
/// for [`PnsExecutor::new`] to report.
pub fn start_early() {
    if std::process::id() != 1
        && let Ok(t) = tracker_from_env()
    {
        let _ = EARLY.set(t);
    }
}

/// The pns backend for one pod.
#[derive(Clone, Debug)]
pub struct PnsExecutor {
    tracker: Tracker,
    api: Option<K8sApiExecutor>,
    kubelet: Option<Arc<KubeletExecutor>>,
}

impl PnsExecutor {
    /// Start tracking processes in `/proc` (override: `ARGOEXEC_PNS_PROC`) at once, then set
    /// up the API server client (from the in-cluster configuration of `paths`, when present)
    /// for logs, exit codes and the fallback watch, or the kubelet for logs only.
    ///
    /// # Errors
    /// `Fatal` when this process is PID 1 (no shared process namespace) or a configured API
    /// server or kubelet is unusable.
    pub fn new(paths: &PodPaths, namespace: &str, pod_name: &str) -> Result<Self, RuntimeError> {
        if std::process::id() == 1 {
            return Err(error(
                ErrorKind::Fatal,
                "start",
                "wait",
                "process namespace sharing is not enabled on the pod (argoexec is PID 1): the pns executor needs `shareProcessNamespace: true`",
            ));
        }
        let tracker = match EARLY.get() {
            Some(t) => t.clone(),
            None => tracker_from_env().map_err(|e| {
                error(ErrorKind::Fatal, "start", "process tracker", "cannot scan /proc").with_source(e)
            })?,
        };
        let ic = argoexec_kube::InClusterConfig::from_env(paths).ok().flatten();
        let api = match ic {
            Some(ic) => Some(
                K8sApiExecutor::from_config(&ic, namespace, pod_name).map_err(|e| {
                    error(
                        ErrorKind::Fatal,
                        "connect to",
                        "API server",
                        "cannot set up the API client",
                    )
                    .with_source(e)
                })?,
            ),
            None => None,
        };
        let kubelet = if api.is_none() && std::env::var_os("ARGO_KUBELET_HOST").is_some() {
            let config = KubeletConfig::from_env(|k| std::env::var(k).ok()).map_err(|e| {
                error(
                    ErrorKind::Fatal,
                    "configure",
                    "kubelet",
                    "bad kubelet configuration",
                )
                .with_source(e)
            })?;
            Some(KubeletExecutor::new(config, paths, namespace, pod_name)?)
        } else {
            None
        };
        Ok(Self::from_parts(tracker, api, kubelet))
    }

    /// A pns backend over a running `tracker`, with the API server backend `api` (logs,
    /// exit codes, the fallback watch, the pod lookup) or else `kubelet` (logs only).
    pub fn from_parts(
        tracker: Tracker,
        api: Option<K8sApiExecutor>,
        kubelet: Option<KubeletExecutor>,
    ) -> Self {
        tracing::info!(
            logs = if api.is_some() {
                "API server pods/log"
            } else if kubelet.is_some() {
                "kubelet containerLogs"
            } else {
                "none"
            },
            interval = ?tracker.interval(),
            "pns executor: tracking the shared process namespace"
        );
        Self {
            tracker,
            api,
            kubelet: kubelet.map(Arc::new),
        }
    }

    /// Set how long `wait` waits for the API server's pod watch to deliver this pod before
    /// failing with `NotFound` (default 60 s; [`argoexec_kube::lookup`] has the rule).
    #[must_use]
    pub fn with_pod_lookup_timeout(mut self, bound: Duration) -> Self {
        self.api = self.api.map(|a| a.with_pod_lookup_timeout(bound));
        self.kubelet = self
            .kubelet
            .map(|k| Arc::new((*k).clone().with_pod_lookup_timeout(bound)));
        self
    }

    /// Resolves only when the API server's pod watch has not delivered this pod within the
    /// pod-lookup bound, with that `NotFound` error (tagged as a pns wait of `who`); pends
    /// forever otherwise — also without an API server, and when the watch fails for another
    /// reason (denied: the pidfds still tell the exits; the failure is logged).
    async fn pod_missing(&self, who: &str) -> RuntimeError {
        if let Some(api) = &self.api {
            match api.pod().await {
                Ok(_) => {}
                Err(mut e) if e.is_not_found() => {
                    e.backend = KIND;
                    e.action = "wait for";
                    e.container = who.to_string();
                    return e;
                }
                Err(e) => tracing::warn!(error = %e, "cannot look the pod up through the API server"),
            }
        }
        std::future::pending().await
    }

    /// Name unnamed processes from the pod status's container ids; true when any was named.
    async fn resolve_ids(&self) -> bool {
        let Some(api) = &self.api else { return false };
        if !self
            .tracker
            .all()
            .iter()
            .any(|p| p.name.is_none() && p.container_id.is_some())
        {
            return false;
        }
        let Ok(pod) = api.pod().await else { return false };
        let by_id: HashMap<String, String> = pod
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .filter_map(|c| {
                let id = c.container_id.as_deref()?;
                Some((id.rsplit("://").next()?.to_string(), c.name.clone()))
            })
            .collect();
        self.tracker.assign_names(&by_id) > 0
    }

    /// The secured process of `container`, rescanning and resolving ids if needed.
    async fn process(&self, container: &str, action: &'static str) -> Result<Seen, RuntimeError> {
        if let Some(p) = self.tracker.find(container) {
            return Ok(p);
        }
        self.tracker.rescan();
        if self.tracker.find(container).is_none() {
            self.resolve_ids().await;
        }
        self.tracker.find(container).ok_or_else(|| {
            error(
                ErrorKind::Fatal,
                action,
                container,
                "its process was never seen in the shared process namespace (it exited before it could be secured, or runs as another user and the wait container lacks CAP_SYS_PTRACE)",
            )
        })
    }

    /// The held root of `container`'s process, and whether it was taken after its exec
    /// ([`Seen::root_final`]).
    async fn root_of(
        &self,
        container: &str,
        action: &'static str,
    ) -> Result<(Arc<std::os::fd::OwnedFd>, bool), RuntimeError> {
        let p = self.process(container, action).await?;
        let fin = p.root_final;
        p.root.clone().map(|r| (r, fin)).ok_or_else(|| {
            error(
                ErrorKind::Fatal,
                action,
                container,
                format!(
                    "its root filesystem could not be opened ({}); without CAP_SYS_PTRACE on the wait container a main must run as wait's user and live until wait sees it after its exec (runc keeps it unreadable until then), so put outputs of mains that exit within milliseconds on a volume",
                    p.root_error.as_deref().unwrap_or("unknown reason")
                ),
            )
        })
    }

    /// A pidfd tells the exit, not the status, of a process that is not our child: the
    /// codes come from the pod status, which follows within milliseconds.
    async fn fill_exit_codes(&self, containers: &[String], exits: &mut [ContainerExit]) {
        let Some(api) = &self.api else { return };
        if exits.iter().all(|e| e.exit_code.is_some()) {
            return;
        }
        let done = CancellationToken::new();
        match tokio::time::timeout(EXIT_CODE_WAIT, api.wait(containers, done.clone())).await {
            Ok(Ok(from_api)) => {
                for e in exits.iter_mut().filter(|e| e.exit_code.is_none()) {
                    e.exit_code = from_api
                        .iter()
                        .find(|a| a.name == e.name)
                        .and_then(|a| a.exit_code);
                }
            }
            Ok(Err(err)) => tracing::warn!(error = %err, "no exit codes from the pod status"),
            Err(_) => {
                done.cancel();
                tracing::warn!(after = ?EXIT_CODE_WAIT, "the pod status shows no exit codes yet");
            }
        }
    }

    /// Wait for one container's root process to exit.
    async fn wait_one(&self, name: &str, cancel: &CancellationToken) -> Result<Option<i32>, RuntimeError> {
        let mut rx = self.tracker.subscribe();
        let seen = async {
            loop {
                if let Some(p) = self.tracker.find(name) {
                    return p;
                }
                if self.tracker.all().iter().any(|p| p.name.is_none() && p.exited())
                    && self.resolve_ids().await
                {
                    continue;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        let fallback = async {
            tokio::time::sleep(MAP_GRACE).await;
            if self.resolve_ids().await
                && let Some(p) = self.tracker.find(name)
            {
                return Ok(Err(p));
            }
            match &self.api {
                Some(api) => {
                    let (scans, last_error) = self.tracker.stats();
                    tracing::warn!(container = name, grace = ?MAP_GRACE, scans, ?last_error, "its process has not been seen; also waiting on the pod watch");
                    let exits = api.wait(&[name.to_string()], cancel.clone()).await?;
                    tracing::warn!(
                        container = name,
                        "terminated according to the pod watch; its process was never seen, so base-layer outputs are lost"
                    );
                    Ok(Ok(exits.into_iter().next().and_then(|e| e.exit_code)))
                }
                None => {
                    tracing::warn!(
                        container = name,
                        "its process has not been seen and no API server is configured; still waiting for it"
                    );
                    std::future::pending().await
                }
            }
        };
        let p = tokio::select! {
            () = cancel.cancelled() => return Err(error(ErrorKind::Cancelled, "wait for", name, "cancelled")),
            p = seen => p,
            r = fallback => match r? {
                Ok(code) => return Ok(code),
                Err(p) => p,
            },
        };
        tokio::select! {
            () = cancel.cancelled() => Err(error(ErrorKind::Cancelled, "wait for", name, "cancelled")),
            r = kill::exit_within(&p.pidfd, None) => {
                r.map_err(|e| error(ErrorKind::Fatal, "wait for", name, format!("poll pidfd of pid {}: {e}", p.pid)))?;
                tracing::info!(container = name, pid = p.pid, "main process exited (pidfd)");
                Ok(None)
            }
        }
    }
}

impl RuntimeExecutor for PnsExecutor {
    fn kind(&self) -> ExecutorKind {
        KIND
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            base_layer_read: true,
            stdout_only_stream: false,
            kill_without_shell: true,
        }
    }

    async fn get_file_contents(&self, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        let (root, fin) = self.root_of(container, "read file from").await?;
        let p = path.to_path_buf();
        tokio::task::spawn_blocking(move || files::read(root, &p))
            .await
            .map_err(|e| {
                error(
                    ErrorKind::Fatal,
                    "read file from",
                    container,
                    "the reading task failed",
                )
                .with_source(e)
            })?
            .map_err(|(k, m)| error(k, "read file from", container, unsettled(k, m, fin)))
    }

    async fn copy_file(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        level: Option<u32>,
    ) -> Result<(), RuntimeError> {
        let (root, fin) = self.root_of(container, "copy file from").await?;
        let (s, d) = (src.to_path_buf(), dest.to_path_buf());
        let n = tokio::task::spawn_blocking(move || files::archive_to(root, &s, &d, level))
            .await
            .map_err(|e| {
                error(
                    ErrorKind::Fatal,
                    "copy file from",
                    container,
                    "the archiving task failed",
                )
                .with_source(e)
            })?
            .map_err(|(k, m)| error(k, "copy file from", container, unsettled(k, m, fin)))?;
        tracing::debug!(container, src = %src.display(), tar_bytes = n, "archived through the held root");
        Ok(())
    }

    async fn output_stream(&self, container: &str, kind: StreamKind) -> Result<OutputStream, RuntimeError> {
        if let Some(api) = &self.api {
            return api.output_stream(container, kind).await;
        }
        if let Some(k) = &self.kubelet {
            return k.output_stream(container, kind).await;
        }
        Err(error(
            ErrorKind::Unsupported,
            "read logs of",
            container,
            "the pns executor reads logs through the API server's pods/log, or the kubelet when ARGO_KUBELET_HOST is set; neither is configured",
        ))
    }

    async fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        self.tracker.expect(containers);
        let who = containers.join(",");
        let mains = futures::future::try_join_all(containers.iter().map(|c| self.wait_one(c, &cancel)));
        let codes = tokio::select! {
            codes = mains => codes?,
            e = self.pod_missing(&who) => return Err(e),
        };
        let mut exits: Vec<ContainerExit> = containers
            .iter()
            .zip(codes)
            .map(|(name, exit_code)| ContainerExit {
                name: name.clone(),
                exit_code,
            })
            .collect();
        self.fill_exit_codes(containers, &mut exits).await;
        Ok(exits)
    }

    async fn kill(&self, containers: &[String], grace: Duration) -> Result<(), RuntimeError> {
        self.tracker.rescan();
        let results = futures::future::join_all(containers.iter().map(|c| async move {
            let p = match self.process(c, "kill").await {
                Ok(p) => p,
                Err(e) => return Err(format!("{c}: {}", e.message)),
            };
            match kill::stop(&p.pidfd, grace).await {
                Ok(how) => {
                    tracing::info!(container = %c, pid = p.pid, how, "stopped");
                    Ok(())
                }
                Err(m) => Err(format!("{c} (pid {}): {m}", p.pid)),
            }
        }))
        .await;
        let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
        if errors.is_empty() {
            return Ok(());
        }
        Err(error(
            ErrorKind::Fatal,
            "kill",
            &containers.join(","),
            errors.join("; "),
        ))
    }

    async fn list_container_names(&self) -> Result<Vec<String>, RuntimeError> {
        self.tracker.rescan();
        self.resolve_ids().await;
        let mut names: Vec<String> = Vec::new();
        for p in self.tracker.all() {
            let n = p.display_name();
            if p.name.is_none() && p.exited() {
                continue;
            }
            if !names.contains(&n) {
                names.push(n);
            }
        }
        Ok(names)
    }
}

/// A missing file in a root taken before the process's exec (see [`Seen::root_final`]) may
/// be a root taken too early rather than a file main never wrote: say so.
fn unsettled(kind: ErrorKind, message: String, root_final: bool) -> String {
    if kind != ErrorKind::NotFound || root_final {
        return message;
    }
    format!(
        "{message} (the process exited before wait saw it after its exec, so the root held is \
         the one taken while runc set the container up: if main did write the file, wait's /proc \
         scan was starved of CPU; put outputs of mains that exit within milliseconds on a volume \
         or use the emissary executor)"
    )
}
