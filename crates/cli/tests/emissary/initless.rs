//! The init-less layout's side of the wrapper (`ARGO_WAIT_FOR_READY=true`): it waits for the
//! supervisor's `READY`, reads the template the supervisor wrote, links main's input
//! artifacts, and fails with 65 — the command never started — on `FAILED`, a stale marker or
//! a SIGTERM during the wait.

use super::pod::*;
use argoexec_core::ready::Marker;
use std::fs;
use std::process::Command;
use std::time::{Duration, SystemTime};

const WITH_INPUT: &str = r#"{"name":"t","container":{"image":"busybox"},
  "inputs":{"artifacts":[{"name":"in","path":"/work/in"},{"name":"gone","path":"/work/gone","optional":true}]}}"#;

/// The marker, written as the supervisor writes it (a rename into place).
fn mark(pod: &Pod, m: &Marker) {
    let p = pod.paths();
    fs::create_dir_all(p.var_run_argo()).unwrap();
    fs::write(p.status_marker_tmp(), m.render()).unwrap();
    fs::rename(p.status_marker_tmp(), p.status_marker()).unwrap();
}

/// A wrapper of `main` in an init-less pod: no `ARGO_TEMPLATE` (the supervisor writes the
/// template file), `ARGO_WAIT_FOR_READY=true`.
fn initless(pod: &Pod, script: &str) -> Command {
    let mut c = pod.sh("main", PLAIN, script);
    c.env_remove("ARGO_TEMPLATE").env("ARGO_WAIT_FOR_READY", "true");
    c
}

fn ready_case(pod: Pod, polling: bool) {
    let p = pod.paths();
    let mut child = pod.spawn("main", initless(&pod, "cat in/f.txt > seen.txt"));
    pod.await_log("main", "waiting for the supervisor");
    // The supervisor prepares the pod meanwhile: RUNNING, the template, the input.
    mark(&pod, &Marker::Running);
    fs::create_dir_all(p.input_artifact("in")).unwrap();
    fs::write(p.input_artifact("in").join("f.txt"), "from the supervisor").unwrap();
    fs::write(p.template_file(), WITH_INPUT).unwrap();
    std::thread::sleep(WINDOW);
    assert!(
        !pod.work().join("seen.txt").exists(),
        "the command ran before READY"
    );
    mark(&pod, &Marker::Ready);
    let released = std::time::Instant::now();
    let status = finish(&mut child, Duration::from_secs(10));
    // With inotify the rename wakes the wrapper at once; polling may take its 2 s period.
    let limit = if polling {
        Duration::from_secs(5)
    } else {
        Duration::from_millis(1500)
    };
    assert!(
        released.elapsed() < limit,
        "READY took {:?} to release the command",
        released.elapsed()
    );
    assert_eq!(status.code(), Some(0), "{}", pod.log("main"));
    assert_eq!(
        fs::read_to_string(pod.work().join("seen.txt")).unwrap(),
        "from the supervisor"
    );
    assert_eq!(
        fs::read_link(pod.work().join("in")).unwrap(),
        p.input_artifact("in"),
        "linked to the shared volume"
    );
    assert!(
        fs::symlink_metadata(pod.work().join("gone")).is_err(),
        "nothing loaded, no link"
    );
}

#[test]
fn the_command_waits_for_ready_and_finds_its_inputs_linked() {
    ready_case(Pod::new(), false);
}

#[test]
fn the_command_waits_for_ready_when_polling() {
    ready_case(Pod::polling(), true);
}

/// Run a wrapper against a marker already in place; it must exit 65 without running.
fn refused(pod: &Pod) -> String {
    let out = run(initless(pod, "touch ran"));
    assert_eq!(out.status.code(), Some(65), "{}", text(&out.stderr));
    assert_eq!(pod.exitcode("main").as_deref(), Some("65"));
    assert!(!pod.work().join("ran").exists(), "the command ran");
    pod.termination_log()
}

#[test]
fn a_failed_supervisor_stops_main_with_65_and_its_message() {
    let pod = Pod::new();
    mark(
        &pod,
        &Marker::Failed("input artifact \"in\": connection refused".into()),
    );
    assert_eq!(
        refused(&pod),
        "supervisor reported pre-main failure: input artifact \"in\": connection refused"
    );
}

#[test]
fn a_stale_marker_means_the_supervisor_is_dead() {
    let pod = Pod::new();
    mark(&pod, &Marker::Running);
    let old = SystemTime::now() - Duration::from_secs(60);
    fs::File::options()
        .write(true)
        .open(pod.paths().status_marker())
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(
        refused(&pod),
        "supervisor presumed dead: no status update within 30s"
    );
}

#[test]
fn sigterm_while_waiting_is_a_pre_main_failure() {
    let pod = Pod::new();
    let mut child = pod.spawn("main", initless(&pod, "touch ran"));
    pod.await_log("main", "waiting for the supervisor");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = finish(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(65));
    assert!(!pod.work().join("ran").exists());
    assert_eq!(
        pod.termination_log(),
        "terminated by signal 15 while waiting for the supervisor"
    );
}
