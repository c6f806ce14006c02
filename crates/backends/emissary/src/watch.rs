//! Waiting for `ctr/<name>/exitcode` files, driven by inotify.
//!
//! The watcher watches `ctr/` for new container directories and each container directory for
//! `exitcode` being renamed or closed into place, so it notices an exit within milliseconds.
//! A one-second re-scan runs beside the events as a safety net (missed events, exotic
//! filesystems).
//!
//! Polling fallback, as Argo v4.1 (AW#15941): when `inotify_init` fails (`EMFILE`, the
//! per-user instance limit), adding a watch fails for another reason than a missing
//! directory (`ENOSPC`, the per-user watch limit) or reading events fails, the wait scans
//! every 2 s instead ([`argoexec_core::fswatch`]), and one warning per process says so.
//! `ARGOEXEC_FS_WATCH=poll` forces the scan from the start.
//!
//! A wrapper that dies before writing `exitcode` (SIGKILL, the OOM killer: Argo #9083, where
//! wait polled forever) is noticed through its liveness lock `ctr/<name>/alive`
//! ([`protocol::hold_alive`]): a thread per container blocks on the lock, and its release
//! without an `exitcode` file ends the wait for that container with an unknown exit code.
//! Wrappers that do not hold the lock (Argo's own) are waited for by their file only.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use argoexec_core::fswatch::{self, WatchMode};
use argoexec_core::{ExecutorKind, PodPaths, protocol};
use argoexec_runtime::{ContainerExit, ErrorKind, RuntimeError};
use futures::StreamExt;
use inotify::{EventStream, Inotify, WatchMask};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

/// The re-scan beside working inotify watches.
const SAFETY_SCAN: Duration = Duration::from_secs(1);

/// Whether the fallback warning was logged (once per process).
static WARNED: AtomicBool = AtomicBool::new(false);

/// Waits until containers have written their exit codes.
#[derive(Debug, Clone)]
pub struct ExitWatcher {
    paths: PodPaths,
    mode: WatchMode,
}

type Events = EventStream<[u8; 4096]>;

/// Log the fallback to polling, the first time only.
fn warn_fallback(error: &std::io::Error, what: &str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            error = %error,
            what,
            exhausted = fswatch::is_exhausted(error),
            period_s = fswatch::POLL_PERIOD.as_secs(),
            "inotify unavailable, scanning for exit codes instead; if the inotify limits are exhausted, raise fs.inotify.max_user_instances / fs.inotify.max_user_watches"
        );
    }
}

impl ExitWatcher {
    /// A watcher over `paths`, in the mode `ARGOEXEC_FS_WATCH` asks for (an unknown value
    /// is logged and ignored).
    pub fn new(paths: PodPaths) -> Self {
        let mode = WatchMode::from_env().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "using inotify");
            WatchMode::Inotify
        });
        Self::with_mode(paths, mode)
    }

    /// A watcher over `paths` in `mode`.
    pub fn with_mode(paths: PodPaths, mode: WatchMode) -> Self {
        Self { paths, mode }
    }

    /// Start a thread that reports `name` on `tx` once its wrapper's liveness lock is free,
    /// if the lock exists; returns whether one was started. The thread is detached (not a
    /// runtime blocking task): it ends with the wrapper, and must never hold up the exit of
    /// this process.
    fn watch_alive(&self, name: &str, tx: &UnboundedSender<String>) -> bool {
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

    /// The inotify event stream, or `None` to scan.
    fn open_events(&self) -> Option<Events> {
        if self.mode == WatchMode::Poll {
            tracing::debug!(
                var = fswatch::MODE_ENV,
                "scanning for exit codes every 2 s, as asked"
            );
            return None;
        }
        match Inotify::init().and_then(|i| i.into_event_stream([0u8; 4096])) {
            Ok(s) => Some(s),
            Err(e) => {
                warn_fallback(&e, "inotify_init");
                None
            }
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
        let (alive_tx, alive_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut w = Waiting {
            watcher: self,
            names,
            events: self.open_events(),
            root_watched: false,
            watched: HashSet::new(),
            done: vec![None; names.len()],
            alive_tx,
            alive_rx,
            lock_watched: HashSet::new(),
            released: HashSet::new(),
        };
        loop {
            // Scan after (re-)arming the watches so an exit between the two is not missed.
            w.arm();
            if let Some(exits) = w.scan() {
                return Ok(exits);
            }
            w.next_change(&cancel).await?;
        }
    }
}

/// The state of one [`ExitWatcher::wait_all`].
struct Waiting<'a> {
    watcher: &'a ExitWatcher,
    names: &'a [String],
    /// `None`: scanning every [`fswatch::POLL_PERIOD`].
    events: Option<Events>,
    root_watched: bool,
    watched: HashSet<String>,
    done: Vec<Option<ContainerExit>>,
    alive_tx: UnboundedSender<String>,
    alive_rx: UnboundedReceiver<String>,
    lock_watched: HashSet<String>,
    released: HashSet<String>,
}

impl Waiting<'_> {
    /// Add the watches still missing (a container directory appears when its wrapper
    /// starts) and the liveness-lock threads.
    fn arm(&mut self) {
        let paths = &self.watcher.paths;
        if let Some(s) = self.events.as_mut() {
            let mut failed = None;
            if !self.root_watched {
                match s.watches().add(
                    paths.ctr_root(),
                    WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR,
                ) {
                    Ok(_) => self.root_watched = true,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => failed = Some(e),
                }
            }
            for n in self.names {
                let dir = paths.ctr_dir(n);
                if failed.is_some() || self.watched.contains(n) || !dir.is_dir() {
                    continue;
                }
                match s
                    .watches()
                    .add(&dir, WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO)
                {
                    Ok(_) => {
                        self.watched.insert(n.clone());
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => failed = Some(e),
                }
            }
            if let Some(e) = failed {
                warn_fallback(&e, "inotify_add_watch");
                self.events = None;
            }
        }
        for (i, n) in self.names.iter().enumerate() {
            if self.done[i].is_none()
                && !self.lock_watched.contains(n)
                && self.watcher.watch_alive(n, &self.alive_tx)
            {
                self.lock_watched.insert(n.clone());
            }
        }
    }

    /// Record every exit now visible; all of them once every container has ended.
    fn scan(&mut self) -> Option<Vec<ContainerExit>> {
        for (i, n) in self.names.iter().enumerate() {
            if self.done[i].is_some() {
                continue;
            }
            if let Some(code) = self.watcher.read_exit(n) {
                tracing::debug!(container = %n, exit_code = ?code, "container exited");
                self.done[i] = Some(ContainerExit {
                    name: n.clone(),
                    exit_code: code,
                });
            } else if self.released.contains(n) {
                // `exitcode` is renamed into place before the lock is let go, so its
                // absence now is final.
                tracing::warn!(
                    container = %n,
                    "the emissary wrapper ended without recording an exit code (killed by SIGKILL or the OOM killer?); the pod status has the container's true end"
                );
                self.done[i] = Some(ContainerExit {
                    name: n.clone(),
                    exit_code: None,
                });
            }
        }
        self.done
            .iter()
            .all(Option::is_some)
            .then(|| self.done.iter().flatten().cloned().collect())
    }

    /// Block until something may have changed: an inotify event, a released liveness
    /// lock, or the scan period.
    ///
    /// # Errors
    /// `Cancelled` when `cancel` fires.
    async fn next_change(&mut self, cancel: &CancellationToken) -> Result<(), RuntimeError> {
        let tick = if self.events.is_some() {
            SAFETY_SCAN
        } else {
            fswatch::POLL_PERIOD
        };
        let events = &mut self.events;
        tokio::select! {
            _ = cancel.cancelled() => {
                return Err(RuntimeError::new(ErrorKind::Cancelled, ExecutorKind::Emissary, "wait for", self.names.join(","), "cancelled"));
            }
            ev = async {
                match events.as_mut() {
                    Some(s) => s.next().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some(Err(e)) = ev {
                    warn_fallback(&e, "reading inotify events");
                    self.events = None;
                }
            }
            Some(n) = self.alive_rx.recv() => {
                self.released.insert(n);
            }
            _ = tokio::time::sleep(tick) => {}
        }
        Ok(())
    }
}
