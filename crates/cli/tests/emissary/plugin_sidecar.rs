//! `artifact-plugin-sidecar` (Argo v4.0+ artifact plugins): the plugin runs like a wrapped
//! command, but a SIGTERM sent to the wrapper is dropped — the kubelet's or the controller's
//! TERM must not stop a plugin that wait still needs — and only the signal file stops it;
//! the plugin's exit code goes to `exitcode` and the wrapper exits 0.

use super::pod::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::fs;
use std::process::Command;
use std::time::Duration;

const NAME: &str = "artifact-plugin-dir";

fn plugin(pod: &Pod, on_term: &str) -> Command {
    let script = format!("trap '{on_term}' TERM; touch up; while :; do sleep 0.05; done");
    let mut c = Command::new(bin());
    c.args(["artifact-plugin-sidecar", "--", "/bin/sh", "-c", &script])
        .current_dir(pod.work())
        .env("ARGOEXEC_PATH_ROOT", pod.root())
        .env("ARGO_CONTAINER_NAME", NAME)
        .env_remove("ARGO_TEMPLATE")
        .env_remove("ARGO_WAIT_FOR_READY");
    c
}

fn case(on_term: &str, want: &str) {
    let pod = Pod::new();
    let mut child = pod.spawn(NAME, plugin(&pod, on_term));
    assert!(
        eventually(Duration::from_secs(10), || pod.work().join("up").exists()),
        "the plugin never started: {}",
        pod.log(NAME)
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    pod.await_log(NAME, "ignoring SIGTERM");
    std::thread::sleep(WINDOW);
    assert!(
        child.try_wait().unwrap().is_none(),
        "a SIGTERM stopped the sidecar"
    );
    assert!(pod.exitcode(NAME).is_none());
    fs::write(pod.paths().signal_file(NAME), "15").unwrap();
    let status = finish(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "the wrapper exits 0: {}", pod.log(NAME));
    assert_eq!(pod.exitcode(NAME).as_deref(), Some(want));
}

#[test]
fn only_the_signal_file_stops_the_plugin() {
    case("exit 0", "0");
}

#[test]
fn the_plugins_own_code_goes_to_exitcode() {
    case("exit 3", "3");
}
