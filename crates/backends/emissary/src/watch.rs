//! Waiting for `ctr/<name>/exitcode` files, driven by inotify.
//!
//! The watcher watches `ctr/` for new container directories and each container directory for
//! `exitcode` being renamed or closed into place, so it notices an exit within milliseconds.
//! A one-second re-scan runs beside the events as a safety net (missed events, exotic
//! filesystems), and when inotify is unavailable (instance limit reached, #1128-style) the
//! scan runs every 50 ms instead.
//!
//! A wrapper that dies before writing `exitcode` (SIGKILL, the OOM killer: Argo #9083, where
//! wait polled forever) is noticed through its liveness lock `ctr/<name>/alive`
//! ([`protocol::hold_alive`]): a thread per container blocks on the lock, and its release
//! without an `exitcode` file ends the wait for that container with an unknown exit code.
//! Wrappers that do not hold the lock (Argo's own) are waited for by their file only.

use std::collections::HashSet;
use std::time::Duration;

use argoexec_core::{ExecutorKind, PodPaths, protocol};
use argoexec_runtime::{ContainerExit, ErrorKind, RuntimeError};
use futures::StreamExt;
use inotify::{Inotify, WatchMask};
use tokio_util::sync::CancellationToken;

const SAFETY_SCAN: Duration = Duration::from_secs(1);
const FALLBACK_SCAN: Duration = Duration::from_millis(50);

/// Waits until containers have written their exit codes.
#[derive(Debug, Clone)]
pub struct ExitWatcher {
    paths: PodPaths,
}

impl ExitWatcher {
    /// A watcher over `paths`.
    pub fn new(paths: PodPaths) -> Self {
        Self { paths }
    }

    /// Start a thread that reports `name` on `tx` once its wrapper's liveness lock is free,
    /// if the lock exists; returns whether one was started. The thread is detached (not a
    /// runtime blocking task): it ends with the wrapper, and must never hold up the exit of
    /// this process.
    fn watch_alive(&self, name: &str, tx: &tokio::sync::mpsc::UnboundedSender<String>) -> bool {
        let path = self.paths.ctr_dir(name).join(protocol::ALIVE);
        if !path.exists() {
            return false;
        }
        let (n, tx) = (name.to_string(), tx.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("alive-{name}"))
            .spawn(move || match protocol::wait_released(&path) {
                Ok(()) => {
                    let _ = tx.send(n);
                }
                Err(e) => {
                    tracing::debug!(container = %n, error = %e, "cannot watch the wrapper's liveness lock")
                }
            });
        spawned.is_ok()
    }

    fn read_exit(&self, name: &str) -> Option<Option<i32>> {
        match std::fs::read_to_string(self.paths.exitcode_file(name)) {
            Ok(t) => Some(protocol::parse_exitcode(&t)),
            Err(_) => None,
        }
    }

    /// Wait for every name's exit code.
    ///
    /// # Errors
    /// `Cancelled` when `cancel` fires first.
    pub async fn wait_all(
        &self,
        names: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        let root = self.paths.ctr_root();
        if let Err(e) = protocol::create_shared_dir(&root) {
            tracing::debug!(error = %e, dir = %root.display(), "cannot create ctr dir; waiting for the wrappers to");
        }
        let mut stream = match Inotify::init().and_then(|i| i.into_event_stream([0u8; 4096])) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "inotify unavailable; falling back to a 50 ms scan");
                None
            }
        };
        let mut watched: HashSet<String> = HashSet::new();
        let mut root_watched = false;
        let mut done: Vec<Option<ContainerExit>> = vec![None; names.len()];
        let (alive_tx, mut alive_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut lock_watched: HashSet<String> = HashSet::new();
        let mut released: HashSet<String> = HashSet::new();
        loop {
            if let Some(s) = stream.as_mut() {
                if !root_watched {
                    root_watched = s
                        .watches()
                        .add(
                            &root,
                            WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR,
                        )
                        .is_ok();
                }
                for n in names {
                    let dir = self.paths.ctr_dir(n);
                    if !watched.contains(n)
                        && dir.is_dir()
                        && s.watches()
                            .add(&dir, WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO)
                            .is_ok()
                    {
                        watched.insert(n.clone());
                    }
                }
            }
            // Scan after (re-)arming the watches so an exit between the two is not missed.
            for (i, n) in names.iter().enumerate() {
                if done[i].is_none() && !lock_watched.contains(n) && self.watch_alive(n, &alive_tx) {
                    lock_watched.insert(n.clone());
                }
            }
            for (i, n) in names.iter().enumerate() {
                if done[i].is_none()
                    && let Some(code) = self.read_exit(n)
                {
                    tracing::debug!(container = %n, exit_code = ?code, "container exited");
                    done[i] = Some(ContainerExit {
                        name: n.clone(),
                        exit_code: code,
                    });
                } else if done[i].is_none() && released.contains(n) {
                    // `exitcode` is renamed into place before the lock is let go, so its
                    // absence now is final.
                    tracing::warn!(
                        container = %n,
                        "the emissary wrapper ended without recording an exit code (killed by SIGKILL or the OOM killer?); the pod status has the container's true end"
                    );
                    done[i] = Some(ContainerExit {
                        name: n.clone(),
                        exit_code: None,
                    });
                }
            }
            if done.iter().all(Option::is_some) {
                return Ok(done.into_iter().flatten().collect());
            }
            let tick = if stream.is_some() {
                SAFETY_SCAN
            } else {
                FALLBACK_SCAN
            };
            tokio::select! {
                _ = cancel.cancelled() => {
                    return Err(RuntimeError::new(ErrorKind::Cancelled, ExecutorKind::Emissary, "wait for", names.join(","), "cancelled"));
                }
                ev = async {
                    match stream.as_mut() {
                        Some(s) => s.next().await,
                        None => std::future::pending().await,
                    }
                } => {
                    if let Some(Err(e)) = ev {
                        tracing::warn!(error = %e, "inotify read failed; falling back to scanning");
                        stream = None;
                    }
                }
                Some(n) = alive_rx.recv() => {
                    released.insert(n);
                }
                _ = tokio::time::sleep(tick) => {}
            }
        }
    }
}
