//! The process tracker: finds each container's root process in the shared pid namespace the
//! moment it appears, and secures it — a pidfd (exit notice, race-free signals) and an
//! `O_PATH` handle on `/proc/<pid>/root` (its filesystem, readable after it exits).
//!
//! Linux offers no unprivileged event for "a process appeared" (the proc connector needs
//! `CAP_NET_ADMIN`), so a background thread scans `/proc` every millisecond — a readdir of a
//! pod-sized pid namespace, only new pids are opened — **only until every expected main
//! container is mapped**; after that nothing runs in the background, and listings rescan on
//! demand. While a freshly seen process still lacks its name or root (runc's init, waiting
//! for its start signal) the pause shrinks to 100 µs for up to 2 s, so the window between its
//! exec and the first readable look is as short as the scheduler allows. Exits are never
//! polled: they come from the pidfds.
//!
//! A process seen during runc's init (before it execs the user's command) has no
//! `ARGO_CONTAINER_NAME` yet and may not have its final root: its root is re-taken on every
//! scan until the name appears (after the exec the root is final). If it exits before that,
//! the last root taken is kept: runc switches to the container's root (`pivot_root`) and
//! then waits for the start signal, so that root is the right one, and the container id from
//! its cgroup names the process through the pod status.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, PidfdFlags};
use tokio::sync::watch;

use crate::procs::{Identity, ProcDir, pids};

/// One container root process, secured.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Its pid in the shared namespace.
    pub pid: i32,
    /// A pidfd: readable once the process exited; signals cannot hit a recycled pid.
    pub pidfd: Arc<OwnedFd>,
    /// `O_PATH` handle on its root directory, when it could be opened.
    pub root: Option<Arc<OwnedFd>>,
    /// Why the root could not be opened (usually: a different user without `CAP_SYS_PTRACE`).
    pub root_error: Option<String>,
    /// Whether `root` was taken after the process carried its name, i.e. after its exec,
    /// so it is surely the container's. A process that exited while still unnamed keeps the
    /// last root taken during runc's init, which is right unless every look between
    /// `pivot_root` and the exit was missed.
    pub root_final: bool,
    /// The name from `environ`, or resolved from the container id.
    pub name: Option<String>,
    /// The container id from the cgroup.
    pub container_id: Option<String>,
    /// When the tracker first saw it.
    pub seen_at: Instant,
}

impl Seen {
    /// The name, or `pid/<n>` (Argo's name for processes without `ARGO_CONTAINER_NAME`).
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| format!("pid/{}", self.pid))
    }

    /// True once the process has exited.
    pub fn exited(&self) -> bool {
        exited(&self.pidfd)
    }
}

/// Whether the process behind `pidfd` has exited (a pidfd polls readable then).
pub fn exited(pidfd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(rustix::event::poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}

/// The scan pause while a fresh process is unsettled (see [`State::unsettled`]): between
/// runc's start signal and the user's command exiting there may be only a millisecond or two,
/// and a process of the same user becomes readable (dumpable) only at its exec.
pub const SETTLE_INTERVAL: Duration = Duration::from_micros(100);

/// How long after first sight a process is re-read at [`SETTLE_INTERVAL`]; past it (a
/// process of another user that stays unreadable, an injected sidecar without a name) the
/// scan goes back to its normal interval.
pub const SETTLE_WINDOW: Duration = Duration::from_secs(2);

#[derive(Default)]
struct State {
    seen: Vec<Seen>,
    ignored: HashSet<i32>,
    expected: Option<Vec<String>>,
    scans: u64,
    last_error: Option<String>,
}

impl State {
    /// A live process seen within [`SETTLE_WINDOW`] still lacks its name or its root: it is
    /// probably in runc's init, about to exec, and may live only milliseconds after that.
    fn unsettled(&self) -> bool {
        self.seen.iter().any(|p| {
            (p.name.is_none() || p.root.is_none()) && p.seen_at.elapsed() < SETTLE_WINDOW && !p.exited()
        })
    }

    fn all_expected_mapped(&self) -> bool {
        self.expected.as_ref().is_some_and(|names| {
            names
                .iter()
                .all(|n| self.seen.iter().any(|s| s.name.as_ref() == Some(n)))
        })
    }
}

/// Shared handle on the tracker; the scan thread stops when the last handle is dropped.
#[derive(Clone)]
pub struct Tracker {
    inner: Arc<Inner>,
}

struct Inner {
    proc: PathBuf,
    interval: Duration,
    me: i32,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    stop: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("proc", &self.inner.proc)
            .finish_non_exhaustive()
    }
}

impl Tracker {
    /// Start tracking the namespace whose `/proc` is `proc`, scanning every `interval` until
    /// the expected names are mapped.
    ///
    /// # Errors
    /// When `proc` cannot be listed (the first scan runs before this returns).
    pub fn start(proc: PathBuf, interval: Duration) -> std::io::Result<Self> {
        pids(&proc)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot list {}: {e}", proc.display())))?;
        let (changed, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            proc,
            interval,
            me: std::process::id().try_into().unwrap_or(i32::MAX),
            state: Mutex::new(State::default()),
            changed,
            stop: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&inner);
        let spawned = std::thread::Builder::new()
            .name("pns-scan".into())
            .spawn(move || {
                loop {
                    let Some(inner) = weak.upgrade() else { return };
                    if inner.stop.load(Ordering::Relaxed) {
                        return;
                    }
                    inner.scan();
                    let s = inner.lock();
                    if s.all_expected_mapped() {
                        tracing::debug!("every main container is mapped; the /proc scan stops");
                        return;
                    }
                    let pause = if s.unsettled() {
                        SETTLE_INTERVAL.min(interval)
                    } else {
                        interval
                    };
                    drop(s);
                    drop(inner);
                    std::thread::sleep(pause);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the /proc scan thread; scanning on demand only");
        }
        Ok(Self { inner })
    }

    /// The scan interval.
    pub fn interval(&self) -> Duration {
        self.inner.interval
    }

    /// Declare the main containers; the background scan ends once all are mapped.
    pub fn expect(&self, names: &[String]) {
        self.inner.lock().expected = Some(names.to_vec());
    }

    /// Scan now (on demand, e.g. before listing or killing).
    pub fn rescan(&self) {
        self.inner.scan();
    }

    /// Subscribe to changes (a counter bumped whenever a process is added or named).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// The first-seen process named `name` (exec'd processes carry the container's env too,
    /// so later ones with the same name are not the container's root process).
    pub fn find(&self, name: &str) -> Option<Seen> {
        let s = self.inner.lock();
        s.seen.iter().find(|p| p.display_name() == name).cloned()
    }

    /// Every process seen so far.
    pub fn all(&self) -> Vec<Seen> {
        self.inner.lock().seen.clone()
    }

    /// Name unnamed processes by container id (`id` → name, from the pod status).
    pub fn assign_names(&self, by_id: &HashMap<String, String>) -> usize {
        let mut s = self.inner.lock();
        let mut n = 0;
        for p in s.seen.iter_mut().filter(|p| p.name.is_none()) {
            if let Some(name) = p.container_id.as_ref().and_then(|id| by_id.get(id)) {
                tracing::info!(pid = p.pid, container = %name, "named a process by its cgroup's container id");
                p.name = Some(name.clone());
                n += 1;
            }
        }
        drop(s);
        if n > 0 {
            self.inner.changed.send_modify(|g| *g += 1);
        }
        n
    }

    /// Scans done and the last scan error, for diagnostics.
    pub fn stats(&self) -> (u64, Option<String>) {
        let s = self.inner.lock();
        (s.scans, s.last_error.clone())
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn scan(&self) {
        let listed = match pids(&self.proc) {
            Ok(p) => p,
            Err(e) => {
                self.lock().last_error = Some(format!("cannot list {}: {e}", self.proc.display()));
                return;
            }
        };
        let mut changed = false;
        let mut s = self.lock();
        s.scans += 1;
        let live: HashSet<i32> = listed.iter().copied().collect();
        s.ignored.retain(|p| live.contains(p));
        for pid in listed {
            if pid == 1 || pid == self.me || s.ignored.contains(&pid) {
                continue;
            }
            let dir = ProcDir::new(&self.proc, pid);
            // A known pid whose process exited was recycled: track the new process below.
            if let Some(i) = s.seen.iter().rposition(|p| p.pid == pid)
                && !s.seen[i].exited()
            {
                if s.seen[i].name.is_none() || s.seen[i].root.is_none() {
                    changed |= refresh(&dir, &mut s.seen[i]);
                }
                continue;
            }
            match dir.ppid() {
                Some((0, false)) => {}
                Some(other) => {
                    tracing::trace!(pid, ?other, "not a container root process");
                    s.ignored.insert(pid);
                    continue;
                }
                None => continue,
            }
            let Some(p) = Pid::from_raw(pid) else { continue };
            // The pidfd first: everything read afterwards, while it is alive, is this process's.
            let Ok(pidfd) = rustix::process::pidfd_open(p, PidfdFlags::empty()) else {
                continue;
            };
            let Identity { name, container_id } = dir.identity();
            let (root, root_error) = match open_root(&dir) {
                Ok(r) => (Some(Arc::new(r)), None),
                Err(e) => (None, Some(e)),
            };
            let seen = Seen {
                pid,
                pidfd: Arc::new(pidfd),
                root_final: name.is_some() && root.is_some(),
                root,
                root_error,
                name,
                container_id,
                seen_at: Instant::now(),
            };
            tracing::debug!(pid, name = ?seen.name, id = ?seen.container_id, root = seen.root.is_some(), "container process appeared");
            s.seen.push(seen);
            changed = true;
        }
        drop(s);
        if changed {
            self.changed.send_modify(|g| *g += 1);
        }
    }
}

/// Re-read an unnamed or root-less live process. Until it carries its name it may still be
/// in runc's init, whose root changes at `pivot_root`: the root is re-taken on every scan, so
/// the one kept is at most one scan older than the exec (runc waits for its start signal
/// after `pivot_root`, many scans long). After the exec the name appears and the root taken
/// then is final.
fn refresh(dir: &ProcDir, p: &mut Seen) -> bool {
    let id = dir.identity();
    if let Ok(r) = open_root(dir)
        && !exited(&p.pidfd)
    {
        p.root = Some(Arc::new(r));
        p.root_error = None;
        // The name was read before this root was opened: the exec had happened.
        p.root_final = id.name.is_some();
    }
    if p.name.is_none() && id.name.is_some() && !exited(&p.pidfd) {
        p.name = id.name;
        p.container_id = p.container_id.take().or(id.container_id);
        return true;
    }
    false
}

fn open_root(dir: &ProcDir) -> Result<OwnedFd, String> {
    let path = dir.0.join("root");
    rustix::fs::open(
        &path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("open {}: {e}", path.display()))
}
