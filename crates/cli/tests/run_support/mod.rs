//! Harness for `argoexec run` end-to-end tests on the real local Docker Engine: runs the
//! binary with `-o json` under a unique node label and state directory, parses the result,
//! and checks that no container or volume directory was left behind.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The executors every end-to-end scenario runs with (those that read base layers).
pub const EXECUTORS: [&str; 3] = ["emissary", "docker", "pns"];
/// The backends that reach containers through Kubernetes (outputs on volumes only).
pub const KUBE_EXECUTORS: [&str; 2] = ["kubelet", "k8sapi"];
/// Every executor, for scenarios that keep their outputs on volumes.
pub const ALL_EXECUTORS: [&str; 5] = ["emissary", "docker", "kubelet", "k8sapi", "pns"];

/// The executors whose script result is stdout only (the others read the combined log).
pub const STDOUT_ONLY: [&str; 2] = ["emissary", "docker"];

/// `list`, narrowed to the comma-separated `ARGOEXEC_TEST_EXECUTORS` when it is set (for
/// iterating on one backend locally; CI leaves it unset and runs every executor), without
/// `docker` on a containerd node (`ARGOEXEC_RUNTIME=containerd`: it has no Docker Engine).
pub fn only(list: &[&'static str]) -> Vec<&'static str> {
    let list = list
        .iter()
        .copied()
        .filter(|e| !(on_containerd() && *e == "docker"));
    match std::env::var("ARGOEXEC_TEST_EXECUTORS") {
        Ok(v) if !v.is_empty() => list.filter(|e| v.split(',').any(|x| x == *e)).collect(),
        _ => list.collect(),
    }
}

/// Whether the runs go to a containerd node: `ARGOEXEC_RUNTIME=containerd`, which
/// `argoexec run` reads as `--runtime` (scripts/test.sh runs a subset so).
pub fn on_containerd() -> bool {
    std::env::var("ARGOEXEC_RUNTIME").as_deref() == Ok("containerd")
}

/// `ctr` on the project's containerd, in the node's namespace.
fn ctr() -> Command {
    let mut c = Command::new("ctr");
    c.args([
        "--address",
        "/run/argoexec-containerd/containerd.sock",
        "-n",
        "argoexec",
    ]);
    c
}

const DOCKER: &str = "/usr/bin/docker";

/// Fail loudly when Docker is not there (unless explicitly skipped); returns false to skip.
pub fn docker_available() -> bool {
    if std::env::var("ARGOEXEC_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipped: ARGOEXEC_SKIP_DOCKER_TESTS=1");
        return false;
    }
    if on_containerd() {
        let out = ctr()
            .args(["images", "check", "name~=library/(argoexec:dev|busybox:latest)$"])
            .output();
        let listed = out.map_or(0, |o| {
            String::from_utf8_lossy(&o.stdout).matches("complete").count()
        });
        assert_eq!(
            listed, 2,
            "containerd with images argoexec:dev and busybox:latest is required; run `bash scripts/setup.sh`"
        );
        return true;
    }
    let ok = Command::new(docker())
        .args(["image", "inspect", "argoexec:dev", "busybox:latest"])
        .output();
    match ok {
        Ok(o) if o.status.success() => true,
        _ => panic!(
            "Docker Engine with images argoexec:dev and busybox:latest is required; run `bash scripts/setup.sh` \
             (or set ARGOEXEC_SKIP_DOCKER_TESTS=1 to skip)"
        ),
    }
}

/// The docker CLI to use.
pub fn docker() -> &'static str {
    if Path::new(DOCKER).exists() {
        DOCKER
    } else {
        "docker"
    }
}

/// One finished `argoexec run`.
pub struct RunResult {
    /// The `-o json` document.
    pub json: Value,
    /// Exit status.
    pub code: i32,
    /// stderr.
    pub stderr: String,
    /// The artifact repository used.
    pub repo: tempfile::TempDir,
}

impl RunResult {
    /// `outputs.parameters[name].value`.
    pub fn param(&self, name: &str) -> Option<String> {
        self.json["outputs"]["parameters"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["value"].as_str().map(str::to_string))
    }

    /// The host path of output artifact `name`.
    pub fn artifact(&self, name: &str) -> Option<PathBuf> {
        self.json["outputs"]["artifacts"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["path"].as_str().map(PathBuf::from))
    }

    /// The exit code of `container` from the pod status.
    pub fn exit_of(&self, container: &str) -> Option<i64> {
        self.json["containers"]
            .as_array()?
            .iter()
            .find(|c| c["name"] == container)
            .and_then(|c| c["exitCode"].as_i64())
    }

    /// `phase`.
    pub fn phase(&self) -> &str {
        self.json["phase"].as_str().unwrap_or("")
    }

    /// `message` or "".
    pub fn message(&self) -> &str {
        self.json["message"].as_str().unwrap_or("")
    }

    /// `outputs.result`.
    pub fn result(&self) -> Option<&str> {
        self.json["outputs"]["result"].as_str()
    }

    /// Context for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "exit {}\njson: {}\nstderr:\n{}",
            self.code, self.json, self.stderr
        )
    }
}

/// Write `yaml` to a temp file and run it.
/// A one-template Workflow named `name-…` whose entrypoint template `main` is `template`
/// (YAML, indented by this function).
pub fn wf(name: &str, template: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  generateName: {name}-\nspec:\n  entrypoint: main\n  templates:\n    - name: main\n{}",
        template
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect::<String>()
    )
}

/// Write a `workflow-controller-configmap` with `data` (already indented two spaces) into
/// `dir`; returns its path for `--config`.
pub fn config_map(dir: &tempfile::TempDir, data: &str) -> String {
    let p = dir.path().join("cm.yaml");
    std::fs::write(
        &p,
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: workflow-controller-configmap}}\ndata:\n{data}"),
    )
    .unwrap();
    p.display().to_string()
}

pub fn run_yaml(yaml: &str, executor: &str, extra: &[&str]) -> RunResult {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wf.yaml");
    std::fs::write(&path, yaml).unwrap();
    run_file(&path, executor, extra, None)
}

/// Run a workflow file with `executor`, optionally with a prepared artifact repository.
pub fn run_file(path: &Path, executor: &str, extra: &[&str], repo: Option<tempfile::TempDir>) -> RunResult {
    run_file_env(path, executor, extra, repo, &[])
}

/// [`run_file`] with extra environment variables for the `run` process.
pub fn run_file_env(
    path: &Path,
    executor: &str,
    extra: &[&str],
    repo: Option<tempfile::TempDir>,
    env: &[(&str, &str)],
) -> RunResult {
    start_run(path, executor, extra, repo, env).finish(Duration::from_secs(120))
}

/// An `argoexec run` still running (for tests that act on the node while the step runs).
pub struct StartedRun {
    child: std::process::Child,
    label: String,
    state: tempfile::TempDir,
    repo: tempfile::TempDir,
}

/// Start `argoexec run` as [`run_file_env`] does, without waiting for it.
pub fn start_run(
    path: &Path,
    executor: &str,
    extra: &[&str],
    repo: Option<tempfile::TempDir>,
    env: &[(&str, &str)],
) -> StartedRun {
    static N: AtomicUsize = AtomicUsize::new(0);
    let label = format!("test-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst));
    let state = tempfile::tempdir().unwrap();
    let repo = repo.unwrap_or_else(|| tempfile::tempdir().unwrap());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_argoexec"));
    cmd.arg("run")
        .arg(path)
        .args(["-o", "json", "--executor", executor]);
    // `--artifacts -` in `extra`: no repository flag at all (the config map's applies).
    let no_repo = extra.windows(2).any(|w| w == ["--artifacts", "-"]);
    let extra: Vec<&str> = if no_repo {
        extra
            .iter()
            .copied()
            .filter(|a| *a != "-" && *a != "--artifacts")
            .collect()
    } else {
        extra.to_vec()
    };
    if !no_repo && !extra.contains(&"--artifacts") {
        cmd.arg("--artifacts").arg(repo.path());
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd
        .args(&extra)
        .env("ARGOEXEC_NODE_LABEL", &label)
        .env("ARGOEXEC_NODE_STATE_DIR", state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    StartedRun {
        child,
        label,
        state,
        repo,
    }
}

impl StartedRun {
    /// Wait for the run (at most `limit`), parse its JSON and check nothing was left.
    pub fn finish(self, limit: Duration) -> RunResult {
        let out = wait_output(self.child, limit);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let json: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}):\n{stdout}\nstderr:\n{stderr}"));
        assert_nothing_left(&self.label, self.state.path());
        RunResult {
            json,
            code: out.status.code().unwrap_or(-1),
            stderr,
            repo: self.repo,
        }
    }
}

/// Wait for the child with an upper bound (a hung run fails the test instead of CI).
fn wait_output(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // TERM first: `run` then stops and removes its pod (nothing left behind for the
        // next test); KILL if even that does not end it.
        if rx.recv_timeout(limit).is_err() {
            let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
            if rx.recv_timeout(Duration::from_secs(20)).is_err() {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
        }
    });
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let read = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let so = read(stdout.map(|s| Box::new(s) as Box<dyn std::io::Read + Send>));
    let se = read(stderr.map(|s| Box::new(s) as Box<dyn std::io::Read + Send>));
    let started = Instant::now();
    let status = child.wait().unwrap();
    let _ = tx.send(());
    let out = std::process::Output {
        status,
        stdout: so.join().unwrap(),
        stderr: se.join().unwrap(),
    };
    assert!(
        started.elapsed() < limit,
        "argoexec run did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// No container with the run's node label, and no pod directory left in the state
/// directory (the node's `images/` cache of image volumes is meant to stay).
pub fn assert_nothing_left(label: &str, state: &Path) {
    let out = if on_containerd() {
        ctr()
            .args([
                "containers",
                "ls",
                "-q",
                &format!("labels.\"io.argoexec-rs.node\"=={label}"),
            ])
            .output()
            .unwrap()
    } else {
        Command::new(docker())
            .args([
                "ps",
                "-aq",
                "--filter",
                &format!("label=io.argoexec-rs.node={label}"),
            ])
            .output()
            .unwrap()
    };
    let ids = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && ids.is_empty(),
        "containers left behind: {ids}"
    );
    let left: Vec<_> = std::fs::read_dir(state)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| !p.ends_with("images"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "pod directories left behind: {left:?}");
    // The image cache keeps finished extractions only: no temporary directory or archive.
    let partial: Vec<_> = std::fs::read_dir(state.join("images"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        partial.is_empty(),
        "unfinished image extractions left behind: {partial:?}"
    );
}

/// The entries of a .tgz as `(path, contents)` (directories with empty contents).
pub fn tgz_entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut ar = tar::Archive::new(flate2::read::MultiGzDecoder::new(f));
    let mut out = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut v).unwrap();
        out.push((name, v));
    }
    out
}

/// The repository's examples directory.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}
