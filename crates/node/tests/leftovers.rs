//! A node killed with its pods running leaves containers, pod directories and mounts; the
//! next node on the same state directory removes them, and leaves a live node's alone.
//! The killed node is a real process: this test binary, run again as a child.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;

use argoexec_node::spec::LABEL_NODE;
use common::*;

/// The child's state directory; set only for the child.
const CHILD_STATE: &str = "ARGOEXEC_LEFTOVERS_TEST_STATE";

/// A pod whose memory-backed `emptyDir` is a tmpfs mount under the node's directory.
const POD: &str = r#"
metadata: {name: killed}
spec:
  containers:
    - {name: main, image: busybox, command: [sh, -c, 'touch /w/up; exec sleep 300'], volumeMounts: [{name: w, mountPath: /w}]}
  volumes: [{name: w, emptyDir: {medium: Memory}}]
"#;

/// Mount points under `dir`.
fn mounts_under(dir: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| Path::new(p).starts_with(dir))
        .map(str::to_string)
        .collect()
}

/// Run only as the child of the test below: start [`POD`], say so, and wait to be killed.
#[tokio::test]
#[ignore = "run as a child process by the test below"]
async fn child_node_with_a_running_pod() {
    let Some(state) = std::env::var_os(CHILD_STATE) else {
        return;
    };
    let node = node("killed", Path::new(&state)).await;
    let run = node.start_pod(pod(POD)).await.unwrap();
    let volume = run.volume_path("w").unwrap().to_path_buf();
    until_running(&run, "main").await;
    println!("READY {} {}", node.config().node_label, volume.display());
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn the_next_node_removes_what_a_killed_node_left() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    // A live node in the same directory, with a pod of its own: left alone.
    let live = node("live", state.path()).await;
    let live_run = live
        .start_pod(pod(
            "metadata: {name: alive}\nspec:\n  containers: [{name: main, image: busybox, command: [sleep, '300']}]\n",
        ))
        .await
        .unwrap();
    until_running(&live_run, "main").await;
    let live_containers = live.leftover_containers().await.unwrap();
    // The live pod's own (on containerd, its IPC namespace).
    let live_mounts = mounts_under(state.path());

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_node_with_a_running_pod",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_STATE, state.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("READY ").map(str::to_string))
        .expect("the child node started its pod");
    let (label, volume) = ready.split_once(' ').unwrap();
    child.kill().unwrap();
    child.wait().unwrap();

    let killed = live.runtime().list(LABEL_NODE, label).await.unwrap();
    assert!(!killed.is_empty(), "the killed node's containers outlive it");
    assert!(Path::new(volume).join("up").exists());
    assert!(
        !mounts_under(Path::new(volume)).is_empty(),
        "its tmpfs stays mounted"
    );

    let next = node("next", state.path()).await;
    assert!(next.runtime().list(LABEL_NODE, label).await.unwrap().is_empty());
    assert_eq!(mounts_under(state.path()), live_mounts);
    assert!(!Path::new(volume).exists());
    // The live node and its pod are untouched.
    assert_eq!(live.leftover_containers().await.unwrap(), live_containers);
    assert_eq!(live_run.current().phase.as_deref(), Some("Running"));
    drop(next);
    tokio::time::timeout(Duration::from_secs(60), live_run.cleanup())
        .await
        .unwrap()
        .unwrap();
    assert!(live.leftover_containers().await.unwrap().is_empty());
    assert_eq!(
        std::fs::read_dir(state.path()).unwrap().count(),
        0,
        "nothing left"
    );
}
