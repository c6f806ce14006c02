//! The docker backend while the Docker daemon restarts (Argo #9129).
//!
//! Each test runs a private `dockerd` (its own socket, data root and managed containerd
//! under a temporary directory, the shared daemon's busybox image loaded into it), so
//! stopping it disturbs no other test. Steps are ordered by what the backend logs (an event
//! probe), never by sleeps:
//! - with `--live-restore` the container outlives the daemon; `wait` rides out the outage
//!   and reports the exit code main chooses after the restart;
//! - without it the shutdown kills main (137); `wait` reports that after the restart;
//! - a socket bind-mounted as a file (as a pod mounts `/var/run/docker.sock`) still names
//!   the old daemon's socket after the restart: `wait` gives up after its outage tolerance
//!   with an error that says so, instead of hanging or inventing an exit code.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use argoexec_backend_docker::DockerExecutor;
use argoexec_runtime::RuntimeExecutor;
use common::{IMAGE, TestPod, blocked_on, event_probe};
use tokio_util::sync::CancellationToken;

/// The main container: prints `ready`, then exits 7 once `/tmp/go` exists (created by the
/// test with `docker exec` when it wants main to end).
const MAIN: &str = "echo ready; while [ ! -e /tmp/go ]; do sleep 0.05; done; exit 7";

/// A private Docker daemon under a temporary directory.
struct PrivateDaemon {
    dir: tempfile::TempDir,
    live_restore: bool,
    child: Option<Child>,
}

impl PrivateDaemon {
    /// Start a daemon with the shared daemon's busybox image, or `None` (skip) when the
    /// shared daemon is unreachable and `ARGOEXEC_SKIP_DOCKER_TESTS=1`.
    fn start(live_restore: bool) -> Option<Self> {
        let shared = Command::new("docker").args(["image", "inspect", IMAGE]).output();
        if !shared.as_ref().is_ok_and(|o| o.status.success()) {
            if std::env::var("ARGOEXEC_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
                eprintln!("SKIPPED: no Docker Engine with {IMAGE}; ARGOEXEC_SKIP_DOCKER_TESTS=1");
                return None;
            }
            panic!("these tests need the Docker Engine and {IMAGE} (bash scripts/setup.sh)");
        }
        let mut d = Self {
            dir: tempfile::Builder::new()
                .prefix("dk")
                .tempdir_in("/tmp")
                .expect("temp dir"),
            live_restore,
            child: None,
        };
        d.spawn();
        let mut save = Command::new("docker")
            .args(["save", IMAGE])
            .stdout(Stdio::piped())
            .spawn()
            .expect("docker save");
        let load = d
            .cli()
            .arg("load")
            .stdin(save.stdout.take().expect("save's stdout"))
            .output()
            .expect("docker load");
        assert!(
            save.wait().is_ok_and(|s| s.success()),
            "docker save {IMAGE} failed"
        );
        assert!(
            load.status.success(),
            "load {IMAGE}: {}",
            String::from_utf8_lossy(&load.stderr)
        );
        Some(d)
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("docker.sock")
    }

    /// The docker CLI pointed at this daemon.
    fn cli(&self) -> Command {
        let mut c = Command::new("docker");
        c.args(["-H", &format!("unix://{}", self.socket().display())]);
        c
    }

    /// Start `dockerd` and wait until it answers.
    fn spawn(&mut self) {
        let p = self.dir.path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p.join("dockerd.log"))
            .expect("log file");
        let mut c = Command::new("dockerd");
        c.arg("--host")
            .arg(format!("unix://{}", self.socket().display()))
            .arg("--data-root")
            .arg(p.join("root"))
            .arg("--exec-root")
            .arg(p.join("exec"))
            .arg("--pidfile")
            .arg(p.join("dockerd.pid"))
            .args(["--iptables=false", "--bridge=none", "--shutdown-timeout", "1"]);
        if self.live_restore {
            c.arg("--live-restore");
        }
        let child = c
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start dockerd");
        self.child = Some(child);
        // Readiness of an outside daemon: ask until it answers (no event to wait for).
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = self
                .cli()
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                return;
            }
            if let Some(Ok(Some(st))) = self.child.as_mut().map(Child::try_wait) {
                panic!("dockerd exited ({st}): {}", self.log());
            }
            assert!(
                Instant::now() < until,
                "dockerd did not answer in 60 s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        let s = std::fs::read_to_string(self.dir.path().join("dockerd.log")).unwrap_or_default();
        s.lines().rev().take(15).collect::<Vec<_>>().join("\n")
    }

    /// SIGTERM the daemon and wait for it to exit.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = rustix::process::Pid::from_child(&c);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            c.wait().expect("wait for dockerd");
        }
    }

    /// Stop and start again.
    fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for PrivateDaemon {
    fn drop(&mut self) {
        if self.child.is_none() {
            self.spawn();
        }
        // Live-restored containers outlive their daemon: remove every one first.
        if let Ok(o) = self.cli().args(["ps", "-aq"]).output() {
            let ids: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .map(String::from)
                .collect();
            if !ids.is_empty() {
                let _ = self.cli().arg("rm").arg("-f").args(&ids).output();
            }
        }
        self.stop();
        // dockerd leaves its data root bind-mounted on itself; a test may have bind-mounted
        // the socket.
        for m in ["root", "mounted.sock"] {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path().join(m))
                .output();
        }
    }
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

/// `touch /tmp/go` in the container, so main exits 7.
fn release(d: &PrivateDaemon, id: &str) {
    let o = d
        .cli()
        .args(["exec", id, "touch", "/tmp/go"])
        .output()
        .expect("docker exec");
    assert!(
        o.status.success(),
        "docker exec: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Start main in `t`, and `exec.wait` for it on a task once it printed `ready`; returns
/// when the wait is blocked on main running. The probe (kept alive by the guard) reports
/// the backend's events.
async fn main_waited_on(
    t: &TestPod,
    exec: DockerExecutor,
) -> (
    String,
    tokio::task::JoinHandle<Result<Vec<argoexec_runtime::ContainerExit>, argoexec_runtime::RuntimeError>>,
    tracing::subscriber::DefaultGuard,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let id = t.run("main", MAIN).await;
    t.await_line(&id, "ready").await;
    let (guard, mut probe) = event_probe();
    let waiter = tokio::spawn(async move { exec.wait(&names(&["main"]), CancellationToken::new()).await });
    blocked_on(&mut probe, "\"main\", \"running\"").await;
    (id, waiter, guard, probe)
}

#[tokio::test]
async fn wait_rides_out_a_daemon_restart_with_live_restore() {
    let Some(mut d) = PrivateDaemon::start(true) else {
        return;
    };
    let t = TestPod::on(d.socket().to_str().unwrap()).await.expect("pod");
    let exec = t.exec.clone();
    let (id, waiter, _guard, mut probe) = main_waited_on(&t, exec).await;

    let d = tokio::task::spawn_blocking(move || {
        d.stop();
        d
    })
    .await
    .unwrap();
    blocked_on(&mut probe, "the Docker daemon does not answer").await;
    assert!(
        !waiter.is_finished(),
        "wait must not end while the daemon is down"
    );
    let mut d = d;
    let d = tokio::task::spawn_blocking(move || {
        d.spawn();
        d
    })
    .await
    .unwrap();
    blocked_on(&mut probe, "the Docker daemon answers again").await;
    assert!(!waiter.is_finished(), "main is still running after the restart");
    release(&d, &id);
    let exits = waiter.await.unwrap().expect("wait across the restart");
    assert_eq!((exits[0].name.as_str(), exits[0].exit_code), ("main", Some(7)));
    drop(t);
}

#[tokio::test]
async fn a_main_stopped_by_the_daemon_shutdown_is_reported_after_the_restart() {
    let Some(d) = PrivateDaemon::start(false) else {
        return;
    };
    let t = TestPod::on(d.socket().to_str().unwrap()).await.expect("pod");
    let exec = t.exec.clone();
    let (_id, waiter, _guard, _probe) = main_waited_on(&t, exec).await;
    let d = tokio::task::spawn_blocking(move || {
        let mut d = d;
        d.restart();
        d
    })
    .await
    .unwrap();
    // Without live-restore the shutdown stopped main: sh as PID 1 ignores TERM, so after
    // the 1 s shutdown time-out it was killed.
    let exits = waiter.await.unwrap().expect("wait across the restart");
    assert_eq!((exits[0].name.as_str(), exits[0].exit_code), ("main", Some(137)));
    drop(t);
    drop(d);
}

#[tokio::test]
async fn a_socket_mounted_as_a_file_goes_stale_and_says_so() {
    let Some(d) = PrivateDaemon::start(true) else {
        return;
    };
    let t = TestPod::on(d.socket().to_str().unwrap()).await.expect("pod");
    // The pod's view: the socket file bind-mounted elsewhere (a hostPath file mount).
    let mounted = d.dir.path().join("mounted.sock");
    std::fs::write(&mounted, b"").unwrap();
    let m = Command::new("mount")
        .arg("--bind")
        .arg(d.socket())
        .arg(&mounted)
        .output()
        .unwrap();
    assert!(
        m.status.success(),
        "mount --bind: {}",
        String::from_utf8_lossy(&m.stderr)
    );
    let exec = DockerExecutor::connect(&mounted, t.exec.pod().clone())
        .await
        .expect("the mounted socket answers before the restart")
        .with_outage_tolerance(Duration::from_secs(2));
    let (id, waiter, _guard, _probe) = main_waited_on(&t, exec).await;
    let d = tokio::task::spawn_blocking(move || {
        let mut d = d;
        d.restart();
        d
    })
    .await
    .unwrap();
    let e = waiter
        .await
        .unwrap()
        .expect_err("a stale socket cannot report an exit code");
    let msg = e.to_string();
    assert!(msg.contains("has not answered for"), "{msg}");
    assert!(msg.contains("stale") && msg.contains("#9129"), "{msg}");
    // The daemon itself is fine and main still runs: only the mounted file is stale.
    release(&d, &id);
    t.wait_exit(&id).await;
    assert_eq!(t.exit_code(&id).await, 7);
    drop(t);
    drop(d);
}
