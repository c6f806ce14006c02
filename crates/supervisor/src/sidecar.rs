//! A wrapped sidecar ends itself once every main container has exited (Argo AW#14633, in
//! v3.6.11, v3.7.1 and v4.0; closes AW#10612).
//!
//! Who: a container named in the template's `sidecars`, exactly Argo's test
//! (`GetSidecarNames`). Main containers, container-set members and user init containers are
//! never affected; a name that is both a sidecar and a main is treated as a main.
//!
//! What, while the child runs:
//! 1. watch `ctr/` for new directories and each main's `ctr/<main>` for `exitcode` being
//!    closed or renamed into place (the reactor polls every 2 s instead when inotify is
//!    unavailable); a main whose directory does not exist yet has not started;
//! 2. once every main's `exitcode` exists, send the child's process group SIGTERM;
//! 3. if the child is still there after `ARGO_TERMINATION_GRACE_PERIOD_SECONDS` (Argo's
//!    parsing: a whole number of seconds above 0, otherwise 30), send SIGKILL.
//!
//! Argo's sidecar does this by writing its own `signal` file; the effect is the same signal
//! to the same process group, without the round trip through the file. The exit code is
//! the child's as always: 143 after SIGTERM, 137 after SIGKILL (both taken by Argo's
//! controller as a sidecar's normal end), or whatever a child that traps SIGTERM exits with.

use crate::watch::Watcher;
use argoexec_core::{PodPaths, Template, env::DEFAULT_GRACE};
use inotify::WatchMask;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

/// The variable holding the pod's `terminationGracePeriodSeconds`.
pub const GRACE_ENV: &str = "ARGO_TERMINATION_GRACE_PERIOD_SECONDS";

/// The grace period from the variable's value, as Argo parses it: a whole number of seconds
/// above zero; anything else (unset, `0`, negative, not a number) means 30 s.
pub fn grace_period(value: Option<&str>) -> Duration {
    match value.and_then(|v| v.trim().parse::<i64>().ok()) {
        Some(s) if s > 0 => Duration::from_secs(s.unsigned_abs()),
        _ => DEFAULT_GRACE,
    }
}

/// Where the self-termination stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Some main container is still running.
    Waiting,
    /// SIGTERM sent; SIGKILL follows at this instant.
    Terminated { kill_at: Instant },
    /// SIGKILL sent; nothing more to do.
    Killed,
}

/// The self-termination of one sidecar's child.
#[derive(Debug)]
pub struct SelfTermination {
    name: String,
    mains: Vec<String>,
    grace: Duration,
    stage: Stage,
}

impl SelfTermination {
    /// For container `name` of `template`: `Some` when it is a sidecar (see the module doc).
    pub fn for_container(template: &Template, name: &str, grace: Duration) -> Option<Self> {
        let mains = template.main_container_names();
        let sidecar = template.sidecars.iter().any(|s| s.container.name == name);
        (sidecar && !mains.iter().any(|m| m == name)).then(|| Self {
            name: name.to_string(),
            mains,
            grace,
            stage: Stage::Waiting,
        })
    }

    /// Watch `ctr/` and the main containers' directories that exist. Call before the first
    /// [`Self::step`], so an `exitcode` written in between is not missed.
    pub fn arm(&self, watcher: &mut Watcher, paths: &PodPaths) {
        watcher.watch(
            &paths.ctr_root(),
            WatchMask::CREATE | WatchMask::MOVED_TO | WatchMask::ONLYDIR,
        );
        for main in &self.mains {
            watcher.watch(&paths.ctr_dir(main), WatchMask::CLOSE_WRITE | WatchMask::MOVED_TO);
        }
    }

    /// How long the reactor may sleep before [`Self::step`] must run again (until SIGKILL is
    /// due); `None` while only file events matter.
    pub fn timeout(&self, now: Instant) -> Option<Duration> {
        match self.stage {
            Stage::Terminated { kill_at } => Some(kill_at.saturating_duration_since(now)),
            Stage::Waiting | Stage::Killed => None,
        }
    }

    /// Advance after a wake: `files_changed` when the watcher saw something (or polls).
    /// Returns the signal to send the child now, if any.
    pub fn step(
        &mut self,
        watcher: &mut Watcher,
        paths: &PodPaths,
        files_changed: bool,
        now: Instant,
    ) -> Option<i32> {
        match self.stage {
            Stage::Waiting if files_changed => {
                self.arm(watcher, paths);
                if !self.mains.iter().all(|m| paths.exitcode_file(m).exists()) {
                    return None;
                }
                tracing::info!(
                    container = %self.name,
                    mains = ?self.mains,
                    grace_s = self.grace.as_secs(),
                    "main container(s) exited, terminating this sidecar"
                );
                self.stage = Stage::Terminated {
                    kill_at: now + self.grace,
                };
                Some(Signal::SIGTERM as i32)
            }
            Stage::Terminated { kill_at } if now >= kill_at => {
                tracing::warn!(
                    container = %self.name,
                    grace_s = self.grace.as_secs(),
                    "the sidecar's command outlived the grace period after SIGTERM, sending SIGKILL"
                );
                self.stage = Stage::Killed;
                Some(Signal::SIGKILL as i32)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argoexec_core::{fswatch::WatchMode, protocol};

    fn template(json: &str) -> Template {
        Template::from_json(json).unwrap()
    }

    #[test]
    fn only_sidecars_terminate_themselves() {
        let plain = template(r#"{"container":{"image":"x"},"sidecars":[{"name":"db","image":"x"}]}"#);
        let grace = Duration::from_secs(1);
        let s = SelfTermination::for_container(&plain, "db", grace).unwrap();
        assert_eq!(s.mains, vec!["main"]);
        assert!(SelfTermination::for_container(&plain, "main", grace).is_none());
        assert!(
            SelfTermination::for_container(&plain, "other", grace).is_none(),
            "an init container or an unknown name is not a sidecar"
        );
        let set = template(
            r#"{"containerSet":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"x"}]},
                "sidecars":[{"name":"db","image":"x"},{"name":"a","image":"x"}]}"#,
        );
        assert_eq!(
            SelfTermination::for_container(&set, "db", grace).unwrap().mains,
            vec!["a", "b"]
        );
        assert!(
            SelfTermination::for_container(&set, "a", grace).is_none(),
            "a container-set member keeps its behaviour"
        );
    }

    #[test]
    fn grace_period_follows_argo() {
        assert_eq!(grace_period(None), Duration::from_secs(30));
        assert_eq!(grace_period(Some("2")), Duration::from_secs(2));
        assert_eq!(grace_period(Some(" 5 ")), Duration::from_secs(5));
        for bad in ["0", "-3", "x", "1.5", ""] {
            assert_eq!(grace_period(Some(bad)), Duration::from_secs(30), "{bad:?}");
        }
    }

    #[test]
    fn term_when_every_main_exited_then_kill_after_the_grace() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        let set = template(
            r#"{"containerSet":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"x"}]},
                "sidecars":[{"name":"db","image":"x"}]}"#,
        );
        let grace = Duration::from_secs(3);
        let mut s = SelfTermination::for_container(&set, "db", grace).unwrap();
        protocol::create_shared_dir(&paths.ctr_dir("db")).unwrap();
        let mut w = Watcher::new(&paths.ctr_dir("db"), WatchMode::Inotify);
        s.arm(&mut w, &paths);
        let t0 = Instant::now();
        assert_eq!(s.step(&mut w, &paths, true, t0), None, "no main has started");
        protocol::create_shared_dir(&paths.ctr_dir("a")).unwrap();
        assert!(w.read().any, "the new main directory is an event");
        assert_eq!(s.step(&mut w, &paths, true, t0), None, "a runs");
        protocol::write_atomic(&paths.exitcode_file("a"), b"0", 0o666).unwrap();
        assert!(w.read().any, "a's exitcode is seen through a's directory watch");
        assert_eq!(s.step(&mut w, &paths, true, t0), None, "b still runs");
        protocol::create_shared_dir(&paths.ctr_dir("b")).unwrap();
        protocol::write_atomic(&paths.exitcode_file("b"), b"1", 0o666).unwrap();
        assert_eq!(
            s.step(&mut w, &paths, false, t0),
            None,
            "nothing happens without an event"
        );
        assert_eq!(s.step(&mut w, &paths, true, t0), Some(15));
        assert_eq!(s.timeout(t0), Some(grace));
        assert_eq!(s.step(&mut w, &paths, true, t0 + Duration::from_secs(1)), None);
        assert_eq!(s.step(&mut w, &paths, false, t0 + grace), Some(9));
        assert_eq!(s.timeout(t0 + grace), None);
        assert_eq!(
            s.step(&mut w, &paths, true, t0 + grace * 2),
            None,
            "SIGKILL is sent once"
        );
    }
}
