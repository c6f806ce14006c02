//! Waiting for `ctr/<name>/exitcode` files, driven by inotify.
//!
//! The watcher watches `ctr/` for new container directories and each container directory for
//! `exitcode` being renamed or closed into place, so it notices an exit within milliseconds.
//! A one-second re-scan runs beside the events as a safety net (missed events, exotic
//! filesystems), and when inotify is unavailable (instance limit reached, #1128-style) the
//! scan runs every 50 ms instead.

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
                if done[i].is_none()
                    && let Some(code) = self.read_exit(n)
                {
                    tracing::debug!(container = %n, exit_code = ?code, "container exited");
                    done[i] = Some(ContainerExit {
                        name: n.clone(),
                        exit_code: code,
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
                _ = tokio::time::sleep(tick) => {}
            }
        }
    }
}
