//! The emissary backend: the wait side of the emissary file protocol.
//!
//! Every wrapped container runs `argoexec emissary -- CMD`, which writes its outputs and exit
//! code under `/var/run/argo` ([`argoexec_core::protocol`]). This backend only reads and
//! writes files there — no API server, no runtime socket, no privileges:
//!
//! | seam method | file operation |
//! |---|---|
//! | get file contents | read `outputs/parameters/<path>` (staged by the wrapper of `main`), or report `outputs/parameter-errors/<path>` (why the wrapper could not stage it) |
//! | copy file | copy `outputs/artifacts/<path>.tgz` (the level is ignored: already compressed) |
//! | output stream | open `ctr/<name>/stdout` or `ctr/<name>/combined` |
//! | wait | `ctr/<name>/exitcode` for every name, noticed through inotify, or a 2 s scan when inotify is unavailable ([`ExitWatcher`]) |
//! | kill | write `15` to `ctr/<name>/signal`, wait `grace`, write `9`, wait [`KILL_WAIT`] |
//! | list names | the sub-directories of `ctr/` (wrapped containers only) |
//!
//! The kill escalates as Argo's has since AW#15352 (v3.6.x/v3.7.x/v4.0.x back-ports, v4.1):
//! SIGTERM, up to the grace period for the exit codes, then SIGKILL and up to a fixed 10 s
//! more, however long the grace period was. Argo v3.1–v3.5 (and v3.6–v4.0 before the fix)
//! compared the deadline error against the wrong value and returned before writing `9`, so
//! a container that ignored SIGTERM outlived the deadline.

mod watch;

use std::path::Path;
use std::time::Duration;

use argoexec_core::fswatch::WatchMode;
use argoexec_core::{ExecutorKind, PodPaths, protocol};
use argoexec_runtime::{
    Capabilities, ContainerExit, ErrorKind, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use tokio_util::sync::CancellationToken;

pub use watch::ExitWatcher;

const KIND: ExecutorKind = ExecutorKind::Emissary;

/// How long a kill waits for the exit codes after SIGKILL (Argo's fixed 10 s, AW#15352).
pub const KILL_WAIT: Duration = Duration::from_secs(10);

/// The emissary backend over a pod path layout.
#[derive(Debug, Clone)]
pub struct EmissaryExecutor {
    paths: PodPaths,
    /// How exit codes are waited for ([`ExitWatcher`]).
    watcher: ExitWatcher,
}

impl EmissaryExecutor {
    /// A backend reading the emissary files under `paths`, watching them as
    /// `ARGOEXEC_FS_WATCH` asks (inotify by default).
    pub fn new(paths: PodPaths) -> Self {
        let watcher = ExitWatcher::new(paths.clone());
        Self { paths, watcher }
    }

    /// A backend reading the emissary files under `paths`, watching them in `mode`.
    pub fn with_watch_mode(paths: PodPaths, mode: WatchMode) -> Self {
        let watcher = ExitWatcher::with_mode(paths.clone(), mode);
        Self { paths, watcher }
    }

    fn io_error(action: &'static str, container: &str, path: &Path, e: std::io::Error) -> RuntimeError {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => ErrorKind::Denied,
            _ => ErrorKind::Fatal,
        };
        RuntimeError::new(kind, KIND, action, container, format!("{}: {e}", path.display())).with_source(e)
    }

    /// Write a signal number into a container's `signal` file (atomically). A container that
    /// has not started (no `ctr/<name>` dir) is skipped: its wrapper is not there to act.
    fn signal(&self, name: &str, signum: i32) -> Result<bool, RuntimeError> {
        let dir = self.paths.ctr_dir(name);
        if !dir.is_dir() {
            tracing::warn!(
                container = name,
                signum,
                "container has not started; cannot signal it"
            );
            return Ok(false);
        }
        let path = self.paths.signal_file(name);
        protocol::write_atomic(&path, signum.to_string().as_bytes(), 0o666)
            .map_err(|e| Self::io_error("signal", name, &path, e))?;
        Ok(true)
    }

    async fn wait_timeout(&self, names: &[String], limit: Duration) -> Result<bool, RuntimeError> {
        let cancel = CancellationToken::new();
        match tokio::time::timeout(limit, self.watcher.wait_all(names, cancel.clone())).await {
            Ok(r) => r.map(|_| true),
            Err(_) => {
                cancel.cancel();
                Ok(false)
            }
        }
    }
}

impl RuntimeExecutor for EmissaryExecutor {
    fn kind(&self) -> ExecutorKind {
        KIND
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            base_layer_read: true,
            stdout_only_stream: true,
            kill_without_shell: true,
        }
    }

    async fn get_file_contents(&self, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        const ACTION: &str = "read staged parameter of";
        let staged = self.paths.staged_parameter(path);
        let refused = self.paths.staged_parameter_error(path);
        let (c, p) = (container.to_string(), path.to_path_buf());
        tokio::task::spawn_blocking(move || {
            // The wrapper left the reason instead of a copy (a directory, a FIFO, too large).
            if let Ok(why) = std::fs::read_to_string(&refused) {
                return Err(RuntimeError::new(ErrorKind::Invalid, KIND, ACTION, c, why));
            }
            // Bounded and non-blocking here too: the staging area is writable by main.
            argoexec_core::param_file::read_path(&staged).map_err(|e| match e {
                argoexec_core::param_file::ParamFileError::Io { source, .. } => {
                    Self::io_error(ACTION, &c, &staged, source)
                }
                // The message names main's path, not the staging area's; the cause keeps both.
                e => {
                    let why = e
                        .to_string()
                        .replace(&staged.display().to_string(), &p.display().to_string());
                    RuntimeError::new(
                        ErrorKind::Invalid,
                        KIND,
                        ACTION,
                        c,
                        format!("{why} (its staged copy)"),
                    )
                    .with_source(e)
                }
            })
        })
        .await
        .map_err(|e| {
            RuntimeError::new(
                ErrorKind::Fatal,
                KIND,
                ACTION,
                container,
                "the reading task failed",
            )
            .with_source(e)
        })?
    }

    async fn copy_file(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        _level: Option<u32>,
    ) -> Result<(), RuntimeError> {
        let staged = self.paths.staged_artifact(src);
        tokio::fs::copy(&staged, dest)
            .await
            .map(|_| ())
            .map_err(|e| Self::io_error("copy staged artifact of", container, &staged, e))
    }

    async fn output_stream(&self, container: &str, kind: StreamKind) -> Result<OutputStream, RuntimeError> {
        let path = match kind {
            StreamKind::Stdout => self.paths.stdout_file(container),
            StreamKind::Combined => self.paths.combined_file(container),
        };
        let f = tokio::fs::File::open(&path)
            .await
            .map_err(|e| Self::io_error("open output of", container, &path, e))?;
        Ok(Box::pin(f))
    }

    async fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        self.watcher.wait_all(containers, cancel).await
    }

    async fn kill(&self, containers: &[String], grace: Duration) -> Result<(), RuntimeError> {
        let running: Vec<String> = containers
            .iter()
            .filter(|n| !self.paths.exitcode_file(n).exists())
            .cloned()
            .collect();
        if running.is_empty() {
            return Ok(());
        }
        let mut signalled = Vec::new();
        let mut unstarted = Vec::new();
        for name in &running {
            if self.signal(name, 15)? {
                signalled.push(name.clone());
            } else {
                unstarted.push(name.clone());
            }
        }
        // A kill can come before a wrapper has started (a deadline already past when the
        // step begins): signal each such container as soon as its `ctr/<name>` dir appears,
        // within the grace period. The wrapper reads a waiting signal file when it spawns
        // its child, so the TERM is not lost. (No inotify here: this is the rare path, and
        // the directory's parent may not exist yet either.)
        let until = tokio::time::Instant::now() + grace;
        while !unstarted.is_empty() && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let mut still = Vec::new();
            for name in unstarted {
                if self.paths.ctr_dir(&name).is_dir() && self.signal(&name, 15)? {
                    signalled.push(name);
                } else {
                    still.push(name);
                }
            }
            unstarted = still;
        }
        if signalled.is_empty() || self.wait_timeout(&signalled, grace).await? {
            return Ok(());
        }
        let stubborn: Vec<String> = signalled
            .iter()
            .filter(|n| !self.paths.exitcode_file(n).exists())
            .cloned()
            .collect();
        tracing::warn!(containers = ?stubborn, grace_s = grace.as_secs_f64(), "still running after SIGTERM; sending SIGKILL");
        for name in &stubborn {
            self.signal(name, 9)?;
        }
        if self.wait_timeout(&stubborn, KILL_WAIT).await? {
            return Ok(());
        }
        Err(RuntimeError::new(
            ErrorKind::Fatal,
            KIND,
            "kill",
            stubborn.join(","),
            format!("did not exit within {KILL_WAIT:?} after SIGKILL"),
        ))
    }

    async fn list_container_names(&self) -> Result<Vec<String>, RuntimeError> {
        let root = self.paths.ctr_root();
        let mut names = Vec::new();
        let mut rd = match tokio::fs::read_dir(&root).await {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(e) => return Err(Self::io_error("list containers under", "", &root, e)),
        };
        while let Some(entry) = rd
            .next_entry()
            .await
            .map_err(|e| Self::io_error("list containers under", "", &root, e))?
        {
            if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }
}

#[cfg(test)]
mod tests;
