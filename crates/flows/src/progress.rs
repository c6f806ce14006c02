//! Self-reported progress: main writes lines such as `3/10` to `ARGO_PROGRESS_FILE`; wait
//! reads the last valid one and reports it every `ARGO_PROGRESS_PATCH_TICK_DURATION` while
//! main runs, and once more in the final report.
//!
//! The file is watched with inotify (its directory, for the file's close-after-write or
//! rename into place), as Argo v4.1 does; when inotify is unavailable or exhausted, or
//! `ARGOEXEC_FS_WATCH=poll` forces it, the file is read every
//! `ARGO_PROGRESS_FILE_TICK_DURATION` instead. A tick writes only when the value changed
//! since the last write, so a step whose progress never moves adds no writes.
//!
//! A line counts as progress when it is `N/M` with `0 ≤ N ≤ M` and `M > 0` (Argo's
//! `Progress.IsValid`), surrounding white space ignored; other lines are skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use argoexec_core::fswatch::{POLL_PERIOD, WatchMode, is_exhausted};
use argoexec_runtime::report::OutputReporter;
use futures::StreamExt;
use inotify::{Inotify, WatchMask};
use tokio::sync::watch;

use crate::StepContext;

/// The last valid `N/M` line of `text`.
pub fn parse_last(text: &str) -> Option<String> {
    text.lines().rev().map(str::trim).find_map(|line| {
        let (n, m) = line.split_once('/')?;
        let (n, m) = (n.trim().parse::<u64>().ok()?, m.trim().parse::<u64>().ok()?);
        (m > 0 && n <= m).then(|| format!("{n}/{m}"))
    })
}

/// The latest progress read from the file, kept current by a background task.
#[derive(Debug)]
pub struct Monitor {
    file: PathBuf,
    latest: watch::Receiver<Option<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Monitor {
    /// Start watching the step's progress file; `None` when the pod has none
    /// (`ARGO_PROGRESS_FILE` unset: progress disabled, v3.6+).
    pub fn start(ctx: &StepContext) -> Option<Self> {
        let file = ctx.paths.rooted(ctx.env.progress_file.as_ref()?);
        let (tx, latest) = watch::channel(read(&file));
        let mode = WatchMode::from_env().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring the watch mode");
            WatchMode::default()
        });
        let poll = ctx.env.progress_file_tick.max(Duration::from_millis(100));
        let task = tokio::spawn(follow(file.clone(), mode, poll, tx));
        Some(Self { file, latest, task })
    }

    /// The progress now: a fresh read of the file, else the last one seen.
    pub fn latest(&self) -> Option<String> {
        read(&self.file).or_else(|| self.latest.borrow().clone())
    }

    /// Report the progress every `tick` while it changes; never returns (drop it to stop).
    pub async fn report_ticks<P: OutputReporter>(&self, reporter: &P, tick: Duration) {
        let mut reported: Option<String> = None;
        let mut interval = tokio::time::interval(tick.max(Duration::from_millis(100)));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        loop {
            interval.tick().await;
            let now = self.latest.borrow().clone();
            if now.is_none() || now == reported {
                continue;
            }
            let p = now.unwrap_or_default();
            match reporter.progress(&p).await {
                Ok(()) => {
                    tracing::debug!(progress = %p, "reported progress");
                    reported = Some(p);
                }
                Err(e) => {
                    tracing::warn!(error = %e, progress = %p, "cannot report progress; the next tick retries")
                }
            }
        }
    }
}

/// Read the file's last valid line (a missing or unreadable file has none).
fn read(file: &Path) -> Option<String> {
    parse_last(&std::fs::read_to_string(file).ok()?)
}

/// Keep `tx` current: inotify events on the file's directory, else a poll every `poll`.
async fn follow(file: PathBuf, mode: WatchMode, poll: Duration, tx: watch::Sender<Option<String>>) {
    let publish = |tx: &watch::Sender<Option<String>>| {
        if let Some(p) = read(&file) {
            tx.send_if_modified(|cur| {
                let changed = cur.as_deref() != Some(p.as_str());
                *cur = Some(p);
                changed
            });
        }
    };
    if mode == WatchMode::Inotify {
        match watch_dir(&file) {
            Ok(mut events) => {
                let name = file.file_name().map(ToOwned::to_owned);
                publish(&tx);
                while let Some(ev) = events.next().await {
                    match ev {
                        Ok(ev) if ev.name.is_none() || ev.name == name => publish(&tx),
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "progress file watch failed; polling instead");
                            break;
                        }
                    }
                }
            }
            Err(e) if is_exhausted(&e) => {
                tracing::warn!(error = %e, period = ?POLL_PERIOD, "inotify limits exhausted; polling the progress file")
            }
            Err(e) => tracing::warn!(error = %e, "cannot watch the progress file; polling it"),
        }
    }
    loop {
        publish(&tx);
        tokio::time::sleep(poll).await;
    }
}

/// An inotify event stream on the directory of `file` (created if missing, as main may
/// not have written the file yet).
fn watch_dir(file: &Path) -> std::io::Result<inotify::EventStream<[u8; 1024]>> {
    let dir = file.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    let inotify = Inotify::init()?;
    inotify.watches().add(
        dir,
        WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO | WatchMask::MODIFY,
    )?;
    inotify.into_event_stream([0u8; 1024])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_valid_line_wins() {
        assert_eq!(parse_last("1/10\n2/10\n"), Some("2/10".into()));
        assert_eq!(parse_last("1/10\n  3 / 10 \nnoise\n"), Some("3/10".into()));
        assert_eq!(parse_last("5/4\n0/0\n-1/3\n"), None);
        assert_eq!(parse_last("0/3"), Some("0/3".into()));
        assert_eq!(parse_last(""), None);
    }
}
