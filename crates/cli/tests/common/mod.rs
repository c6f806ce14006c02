//! A pod simulated with real processes: `argoexec init`, `argoexec emissary` (as main and
//! sidecars) and `argoexec wait` run as separate processes sharing a re-rooted
//! `/var/run/argo` (`ARGOEXEC_PATH_ROOT`), the way the containers of a pod share emptyDirs.
//! Volume mounts are simulated the other way round from a pod's bind mounts: the volume is the
//! real directory `/mainctrfs/<mountPath>` that wait reads (in-root, so it must not be a
//! symlink out of `/mainctrfs`), and the main container's `<mountPath>` is a symlink to it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn argoexec() -> &'static str {
    env!("CARGO_BIN_EXE_argoexec")
}

/// The per-pod copy, `argoexec-emissary`, which init installs at `/var/run/argo/argoexec`
/// and which runs every wrapped container. Built beside `argoexec` by the workspace's build
/// (`cargo test --workspace`, as `scripts/test.sh` runs it).
pub fn wrapper() -> PathBuf {
    let p = Path::new(argoexec()).with_file_name("argoexec-emissary");
    assert!(
        p.is_file(),
        "{} is missing: build the workspace (cargo test --workspace) so the per-pod copy is beside argoexec",
        p.display()
    );
    p
}

/// A simulated pod.
pub struct Pod {
    pub dir: tempfile::TempDir,
    pub template: serde_json::Value,
    pub env: Vec<(String, String)>,
}

impl Pod {
    /// A pod whose template is `template` with `{{work}}` replaced by a private work dir
    /// and `{{repo}}` by a local artifact repository dir.
    pub fn new(template: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let text = template
            .replace("{{work}}", &work.display().to_string())
            .replace("{{repo}}", &dir.path().join("repo").display().to_string());
        let template: serde_json::Value = serde_json::from_str(&text).expect("test template is JSON");
        Pod {
            dir,
            template,
            env: vec![("ARGO_POD_NAME".into(), "pod-1".into())],
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    pub fn var_run_argo(&self) -> PathBuf {
        self.root().join("var/run/argo")
    }

    pub fn with_env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }

    /// Create a main volume mount: the volume directory in `/mainctrfs`, and main's mount
    /// path linked to it (a volume nested in another one already is, through the outer link).
    pub fn mount(&self, mount_path: &Path) {
        let mirror = self
            .root()
            .join("mainctrfs")
            .join(mount_path.strip_prefix("/").unwrap());
        std::fs::create_dir_all(&mirror).unwrap();
        if mount_path.canonicalize().ok() == mirror.canonicalize().ok() {
            return;
        }
        std::fs::create_dir_all(mount_path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&mirror, mount_path).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        // What a pod runs: argoexec for init and wait, the copy init installed for emissary.
        let mut c = if args.first() == Some(&"emissary") {
            Command::new(self.root().join("var/run/argo/argoexec"))
        } else {
            Command::new(argoexec())
        };
        c.args(args)
            .env_clear()
            .env(
                "PATH",
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            )
            .env("ARGOEXEC_PATH_ROOT", self.root())
            .env("ARGO_TEMPLATE", self.template.to_string())
            .env("ARGOEXEC_REPORT_FILE", self.root().join("report.json"))
            .env("RUST_LOG", "debug");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    pub fn init(&self) -> Output {
        self.command(&["init"]).output().unwrap()
    }

    /// Start a wrapped container running `sh -c script`.
    pub fn spawn_container(&self, name: &str, script: &str) -> Child {
        self.command(&["emissary", "--", "sh", "-c", script])
            .env("ARGO_CONTAINER_NAME", name)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub fn spawn_wait(&self) -> Child {
        self.command(&["wait"])
            .env("ARGO_CONTAINER_NAME", "wait")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Run main with `script` and wait side by side; returns (main output, wait output).
    pub fn run(&self, script: &str) -> (Output, Output) {
        let init = self.init();
        assert!(
            init.status.success(),
            "init failed: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        let wait = self.spawn_wait();
        let main = self.spawn_container("main", script);
        let main = main.wait_with_output().unwrap();
        let wait = wait_with_timeout(wait, Duration::from_secs(60));
        (main, wait)
    }

    pub fn report(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.root().join("report.json")).expect("wait wrote a report");
        serde_json::from_str(&text).unwrap()
    }

    pub fn termination_log(&self) -> String {
        std::fs::read_to_string(self.root().join("dev/termination-log")).unwrap_or_default()
    }
}

/// Assert a process exited 0, showing its stderr otherwise.
#[track_caller]
pub fn assert_success(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Wait for a child with a deadline (kills it and panics when exceeded).
pub fn wait_with_timeout(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "process did not finish within {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Poll until `f` is true or the deadline passes (for observing other processes' files).
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    f()
}

/// Parameter value by name from a report.
pub fn param(report: &serde_json::Value, name: &str) -> Option<String> {
    report["outputs"]["parameters"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["value"].as_str().map(String::from))
}

/// Artifact by name from a report.
pub fn artifact<'a>(report: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    report["outputs"]["artifacts"]
        .as_array()?
        .iter()
        .find(|a| a["name"] == name)
}

/// List a tar.gz's entry names with GNU tar.
pub fn tar_list(tgz: &Path) -> Vec<String> {
    let out = Command::new("tar").arg("-tzf").arg(tgz).output().unwrap();
    assert!(
        out.status.success(),
        "tar -tzf failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}
