//! How the emissary's file watchers notice changes: inotify, or polling every 2 s.
//!
//! Both sides of the emissary file protocol wait for files: the wrapper for its `signal`
//! file, the debug-pause markers, container-set dependencies' and (in a sidecar) the main
//! containers' `exitcode` files; the wait side for every `exitcode`. They use inotify, and
//! fall back to polling every [`POLL_PERIOD`] when the kernel's inotify limits are exhausted:
//! `inotify_init` failing with `EMFILE` (`fs.inotify.max_user_instances`) or adding a watch
//! failing with `ENOSPC` (`fs.inotify.max_user_watches`) — Argo v4.1 does the same (AW#15941),
//! with the same period. The fallback logs one warning per process.
//!
//! [`MODE_ENV`] (`ARGOEXEC_FS_WATCH`) forces a mode: `poll` polls from the start (tests of
//! the fallback, filesystems where inotify sees nothing such as some network mounts),
//! `inotify` (or unset, or empty) is the default.

use std::io;
use std::time::Duration;

/// The variable that forces a watch mode: `poll` or `inotify`.
pub const MODE_ENV: &str = "ARGOEXEC_FS_WATCH";

/// How often a poller looks at the files it waits for (Argo v4.1's fallback period).
pub const POLL_PERIOD: Duration = Duration::from_secs(2);

/// How a watcher notices file changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WatchMode {
    /// inotify, falling back to polling when the kernel's limits are exhausted.
    #[default]
    Inotify,
    /// Polling every [`POLL_PERIOD`], without trying inotify.
    Poll,
}

/// A [`MODE_ENV`] value that names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{MODE_ENV}={value:?} is not a watch mode (expected \"poll\" or \"inotify\")")]
pub struct UnknownWatchMode {
    /// The value given.
    pub value: String,
}

impl WatchMode {
    /// Parse a [`MODE_ENV`] value; `None` and the empty string mean the default.
    ///
    /// # Errors
    /// [`UnknownWatchMode`] for anything but `poll`, `inotify` or empty (case-insensitive).
    pub fn parse(value: Option<&str>) -> Result<Self, UnknownWatchMode> {
        match value.map(str::trim) {
            None | Some("") => Ok(Self::Inotify),
            Some(v) if v.eq_ignore_ascii_case("poll") => Ok(Self::Poll),
            Some(v) if v.eq_ignore_ascii_case("inotify") => Ok(Self::Inotify),
            Some(v) => Err(UnknownWatchMode { value: v.to_string() }),
        }
    }

    /// The mode from the process environment.
    ///
    /// # Errors
    /// See [`WatchMode::parse`]; callers log it and keep the default.
    pub fn from_env() -> Result<Self, UnknownWatchMode> {
        Self::parse(std::env::var(MODE_ENV).ok().as_deref())
    }
}

/// Whether an inotify error means the kernel's per-user limits are exhausted (`EMFILE` from
/// `inotify_init`, `ENOSPC` from adding a watch): the cases that switch a watcher to polling.
pub fn is_exhausted(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENOSPC))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(WatchMode::parse(None), Ok(WatchMode::Inotify));
        assert_eq!(WatchMode::parse(Some("")), Ok(WatchMode::Inotify));
        assert_eq!(WatchMode::parse(Some("poll")), Ok(WatchMode::Poll));
        assert_eq!(WatchMode::parse(Some(" POLL ")), Ok(WatchMode::Poll));
        assert_eq!(WatchMode::parse(Some("inotify")), Ok(WatchMode::Inotify));
        let e = WatchMode::parse(Some("fanotify")).unwrap_err();
        assert!(e.to_string().contains("ARGOEXEC_FS_WATCH=\"fanotify\""), "{e}");
    }

    #[test]
    fn exhaustion_is_emfile_or_enospc() {
        assert!(is_exhausted(&io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(is_exhausted(&io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(!is_exhausted(&io::Error::from_raw_os_error(libc::ENOENT)));
        assert!(!is_exhausted(&io::Error::other("x")));
    }
}
