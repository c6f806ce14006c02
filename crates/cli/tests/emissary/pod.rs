//! A re-rooted pod for the wrapper tests: `root/var/run/argo/…`, `root/work` as the child's
//! working directory, and `root/logs/<name>.log` for the wrapper's stderr where a test reads
//! what the wrapper logged.

use argoexec_core::PodPaths;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

/// The program under test: the per-pod copy (`argoexec-emissary`, beside `argoexec`).
pub fn bin() -> std::path::PathBuf {
    crate::common::wrapper()
}
pub const PLAIN: &str = r#"{"name":"t","container":{"image":"busybox"}}"#;
/// How long a "this must not happen" observation lasts. Such an observation can only pass
/// falsely (on a machine slow enough to hide the event), never fail falsely; every use first
/// waits for the wrapper's own log line saying it is blocked.
pub const WINDOW: Duration = Duration::from_millis(300);

/// The pod, and whether its wrappers are told to poll instead of using inotify.
pub struct Pod {
    dir: tempfile::TempDir,
    polling: bool,
}

impl Pod {
    /// Wrappers watch files with inotify.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("work")).unwrap();
        fs::create_dir_all(dir.path().join("logs")).unwrap();
        Self { dir, polling: false }
    }
    /// Wrappers poll every 2 s (`ARGOEXEC_FS_WATCH=poll`), as on a node whose inotify
    /// limits are exhausted.
    pub fn polling() -> Self {
        Self {
            polling: true,
            ..Self::new()
        }
    }
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
    pub fn work(&self) -> PathBuf {
        self.root().join("work")
    }
    pub fn paths(&self) -> PodPaths {
        PodPaths::new(self.root())
    }
    pub fn ctr(&self, name: &str) -> PathBuf {
        self.paths().ctr_dir(name)
    }
    pub fn exitcode(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.paths().exitcode_file(name)).ok()
    }
    pub fn termination_log(&self) -> String {
        fs::read_to_string(self.paths().termination_log()).unwrap_or_default()
    }
    /// What the wrapper of `name` logged (only for wrappers started by [`Pod::spawn`]).
    pub fn log(&self, name: &str) -> String {
        fs::read_to_string(self.root().join("logs").join(format!("{name}.log"))).unwrap_or_default()
    }
    /// `argoexec emissary -- /bin/sh -c SCRIPT` as container `name`.
    pub fn sh(&self, name: &str, template: &str, script: &str) -> Command {
        self.wrap(name, template, &["/bin/sh", "-c", script])
    }
    pub fn wrap(&self, name: &str, template: &str, command: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.arg("emissary")
            .arg("--")
            .args(command)
            .current_dir(self.work())
            .env("ARGOEXEC_PATH_ROOT", self.root())
            .env("ARGO_CONTAINER_NAME", name)
            .env("ARGO_TEMPLATE", template)
            .env_remove("RUST_LOG")
            .env_remove("ARGOEXEC_FS_WATCH")
            .env_remove("ARGO_INCLUDE_SCRIPT_OUTPUT")
            .env_remove("ARGO_DEBUG_PAUSE_BEFORE")
            .env_remove("ARGO_DEBUG_PAUSE_AFTER")
            .env_remove("ARGO_CONTAINER_ARGS_FILE")
            .env_remove("ARGO_TERMINATION_GRACE_PERIOD_SECONDS")
            .stdin(Stdio::null());
        if self.polling {
            c.env("ARGOEXEC_FS_WATCH", "poll");
        }
        c
    }
    /// Start a wrapper in the background: stdout discarded, stderr to [`Pod::log`].
    pub fn spawn(&self, name: &str, mut cmd: Command) -> Child {
        let log = fs::File::create(self.root().join("logs").join(format!("{name}.log"))).unwrap();
        cmd.stdout(Stdio::null()).stderr(log).spawn().unwrap()
    }
    /// Wait until the wrapper of `name` has logged `line` (it is then blocked where the
    /// line says), failing after 10 s. In a polling pod, also check that it said it polls.
    pub fn await_log(&self, name: &str, line: &str) {
        assert!(
            eventually(Duration::from_secs(10), || self.log(name).contains(line)),
            "{name} never logged {line:?}: {}",
            self.log(name)
        );
        self.check_watch_mode(name);
    }
    /// In a polling pod, check that the wrapper of `name` said it polls.
    pub fn check_watch_mode(&self, name: &str) {
        if self.polling {
            assert!(
                self.log(name).contains("by polling"),
                "{name} did not poll: {}",
                self.log(name)
            );
        }
    }
}

pub use crate::common::eventually;

/// Wait for a spawned wrapper to exit, killing it after `timeout`.
pub fn finish(child: &mut Child, timeout: Duration) -> ExitStatus {
    let mut status = None;
    eventually(timeout, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    match status {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wrapper still running after {timeout:?}");
        }
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn run(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

/// Whether a pid is gone or a zombie.
pub fn dead(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}
