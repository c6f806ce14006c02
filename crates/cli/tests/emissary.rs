//! Integration tests of `argoexec emissary -- CMD…` (the wrapper), run as the real binary
//! under a re-rooted `/var/run/argo` (`ARGOEXEC_PATH_ROOT`).
//!
//! Synchronisation is by events the tests can observe — marker files the child writes, the
//! wrapper's `ctr/<name>` directory and its own log lines, process exit — polled with
//! deadlines. Fixed waits only appear as observation windows for "this has NOT happened
//! (yet)" assertions, after the wrapper logged that it is blocked.
//!
//! The control-file tests (signal file, dependencies, pauses) run twice: with inotify, and
//! with polling forced (`ARGOEXEC_FS_WATCH=poll`), the fallback for exhausted inotify limits.
//! Modules: `pod` (the harness), `sidecar` (self-termination, the wait side's kill),
//! `features` (offloaded arguments, trace context, the pty), `initless` (waiting for the
//! supervisor's marker, linked inputs).

mod common;
#[path = "emissary/features.rs"]
mod features;
#[path = "emissary/initless.rs"]
mod initless;
#[path = "emissary/plugin_sidecar.rs"]
mod plugin_sidecar;
#[path = "emissary/pod.rs"]
mod pod;
#[path = "emissary/sidecar.rs"]
mod sidecar;

use pod::*;
use serde_json::json;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

fn mtime(p: &Path) -> SystemTime {
    fs::metadata(p).unwrap().modified().unwrap()
}

#[test]
fn exit_codes_pass_through_and_are_written() {
    for (script, want) in [
        ("exit 0", 0),
        ("exit 1", 1),
        ("exit 3", 3),
        ("kill $$", 143),
        ("kill -9 $$", 137),
    ] {
        let pod = Pod::new();
        let out = run(pod.sh("main", PLAIN, script));
        assert_eq!(out.status.code(), Some(want), "{script}: {}", text(&out.stderr));
        assert_eq!(
            pod.exitcode("main").as_deref(),
            Some(want.to_string().as_str()),
            "{script}"
        );
    }
}

#[test]
fn missing_command_is_a_wrapper_failure() {
    let pod = Pod::new();
    let out = run(pod.wrap("main", PLAIN, &["no-such-command-argoexec-test"]));
    assert_eq!(out.status.code(), Some(64));
    assert!(
        text(&out.stderr).contains("executable file not found"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        pod.termination_log().contains("executable file not found"),
        "{}",
        pod.termination_log()
    );
    assert_eq!(pod.exitcode("main").as_deref(), Some("64"));
}

#[test]
fn bad_environment_is_a_wrapper_failure() {
    let pod = Pod::new();
    let mut c = pod.sh("main", PLAIN, "exit 0");
    c.env_remove("ARGO_CONTAINER_NAME");
    let out = run(c);
    assert_eq!(out.status.code(), Some(64));
    assert!(
        text(&out.stderr).contains("ARGO_CONTAINER_NAME"),
        "{}",
        text(&out.stderr)
    );
    assert!(pod.termination_log().contains("ARGO_CONTAINER_NAME"));

    let out = run(pod.sh("main", "{not json", "touch ran"));
    assert_eq!(out.status.code(), Some(64));
    assert!(text(&out.stderr).contains("template"), "{}", text(&out.stderr));
    assert_eq!(pod.exitcode("main").as_deref(), Some("64"));
    assert!(
        !pod.work().join("ran").exists(),
        "the command must not run without a template"
    );
}

#[test]
fn background_process_holding_stdout_does_not_hang_the_wrapper() {
    let pod = Pod::new();
    let start = Instant::now();
    let out = run(pod.sh("main", PLAIN, "sleep 60 & echo $! > bg.pid; echo hi"));
    let took = start.elapsed();
    if let Some(pid) = fs::read_to_string(pod.work().join("bg.pid"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "hi\n");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn orphans_are_reaped() {
    let pod = Pod::new();
    // The subshell exits at once, so `sleep` is orphaned and re-parented to the wrapper (a
    // child subreaper). `kill -0` succeeds on a zombie, so the loop ends only once the
    // wrapper has reaped it.
    let script = r#"(sleep 0.05 & echo $! > gc.pid)
        i=0
        while kill -0 "$(cat gc.pid)" 2>/dev/null; do
            i=$((i+1)); [ $i -gt 500 ] && exit 7
            sleep 0.01
        done
        exit 0"#;
    let out = run(pod.sh("main", PLAIN, script));
    assert_eq!(
        out.status.code(),
        Some(0),
        "orphan not reaped: {}",
        text(&out.stderr)
    );
}

fn signal_file_case(pod: Pod, limit: Duration) {
    let mut child = pod.spawn(
        "main",
        pod.sh("main", PLAIN, "touch ready; while :; do sleep 0.01; done"),
    );
    assert!(
        eventually(Duration::from_secs(10), || pod.work().join("ready").exists()),
        "child never started"
    );
    let signal = pod.paths().signal_file("main");
    let sent = Instant::now();
    fs::write(&signal, "15").unwrap(); // a plain (non-atomic) write, as Argo's wait container does
    let status = finish(&mut child, Duration::from_secs(10));
    let took = sent.elapsed();
    assert_eq!(status.code(), Some(143));
    assert!(took < limit, "took {took:?}");
    assert_eq!(pod.exitcode("main").as_deref(), Some("143"));
    assert!(!signal.exists(), "the signal file is deleted after reading");
    pod.check_watch_mode("main");
}

#[test]
fn signal_file_is_honoured_quickly() {
    signal_file_case(Pod::new(), Duration::from_secs(3));
}

#[test]
fn signal_file_is_honoured_when_polling() {
    let pod = Pod::polling();
    signal_file_case(pod, Duration::from_secs(6));
}

#[test]
fn signals_to_the_wrapper_reach_the_child_group() {
    let pod = Pod::new();
    let mut child = pod.spawn(
        "main",
        pod.sh("main", PLAIN, "sleep 30 & echo $! > bg.pid; touch ready; wait"),
    );
    assert!(
        eventually(Duration::from_secs(10), || pod.work().join("ready").exists()),
        "child never started"
    );
    let bg: i32 = fs::read_to_string(pod.work().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = finish(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(143));
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "took {:?}",
        sent.elapsed()
    );
    assert_eq!(pod.exitcode("main").as_deref(), Some("143"));
    let gone = eventually(Duration::from_secs(5), || dead(bg));
    if !gone {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(bg), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(gone, "the background process of the group did not get the signal");
}

#[test]
fn output_is_captured_only_when_asked() {
    let pod = Pod::new();
    let mut c = pod.sh("main", PLAIN, "echo out; echo err >&2");
    c.env("ARGO_INCLUDE_SCRIPT_OUTPUT", "true");
    let out = run(c);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "out\n", "stdout passes through");
    assert!(text(&out.stderr).contains("err\n"), "stderr passes through");
    assert_eq!(
        fs::read_to_string(pod.paths().stdout_file("main")).unwrap(),
        "out\n"
    );
    let combined = fs::read_to_string(pod.paths().combined_file("main")).unwrap();
    assert!(
        combined.contains("out\n") && combined.contains("err\n"),
        "{combined:?}"
    );
    assert_eq!(combined.len(), 8, "{combined:?}");

    let pod = Pod::new();
    let out = run(pod.sh("main", PLAIN, "echo out; echo err >&2"));
    assert_eq!(text(&out.stdout), "out\n");
    assert!(!pod.paths().stdout_file("main").exists());
    assert!(!pod.paths().combined_file("main").exists());

    let pod = Pod::new();
    let archive_logs = r#"{"name":"t","container":{"image":"x"},"archiveLocation":{"archiveLogs":true}}"#;
    run(pod.sh("main", archive_logs, "echo out"));
    assert_eq!(
        fs::read_to_string(pod.paths().stdout_file("main")).unwrap(),
        "out\n"
    );
}

#[test]
fn base_layer_outputs_of_main_are_staged_before_the_exit_code() {
    let pod = Pod::new();
    let w = pod.work();
    let w = w.display();
    let template = json!({
        "name": "t",
        "container": {"image": "x", "volumeMounts": [{"name": "v", "mountPath": format!("{w}/vol")}]},
        "outputs": {
            "parameters": [
                {"name": "p", "valueFrom": {"path": format!("{w}/p.txt")}},
                {"name": "v", "valueFrom": {"path": format!("{w}/vol/v.txt")}},
            ],
            "artifacts": [
                {"name": "d", "path": format!("{w}/dir/")},
                {"name": "va", "path": format!("{w}/vol/art")},
                {"name": "m", "path": format!("{w}/missing"), "optional": true},
            ],
        },
    })
    .to_string();
    let script = "printf val > p.txt; mkdir -p dir/sub vol/art; echo x > dir/a.txt; echo y > dir/sub/b.txt; \
                  echo v > vol/v.txt; echo z > vol/art/z";
    let out = run(pod.sh("main", &template, script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let paths = pod.paths();
    let exitcode = paths.exitcode_file("main");
    let param = paths.staged_parameter(&pod.work().join("p.txt"));
    assert_eq!(fs::read_to_string(&param).unwrap(), "val");
    let art = paths.staged_artifact(&pod.work().join("dir/"));
    assert!(art.to_string_lossy().ends_with("/dir.tgz"), "{}", art.display());
    let x = pod.root().join("extract");
    fs::create_dir_all(&x).unwrap();
    let tar = Command::new("tar")
        .arg("-xzf")
        .arg(&art)
        .arg("-C")
        .arg(&x)
        .status()
        .unwrap();
    assert!(tar.success(), "tar -xzf {}", art.display());
    assert_eq!(fs::read_to_string(x.join("dir/a.txt")).unwrap(), "x\n");
    assert_eq!(fs::read_to_string(x.join("dir/sub/b.txt")).unwrap(), "y\n");
    assert!(
        mtime(&param) <= mtime(&exitcode),
        "parameter staged after the exit code"
    );
    assert!(
        mtime(&art) <= mtime(&exitcode),
        "artifact staged after the exit code"
    );

    assert!(
        !paths.staged_parameter(&pod.work().join("vol/v.txt")).exists(),
        "volume path staged"
    );
    assert!(
        !paths.staged_artifact(&pod.work().join("vol/art")).exists(),
        "volume path staged"
    );
    assert!(!paths.staged_artifact(&pod.work().join("missing")).exists());
    let leftovers: Vec<_> = fs::read_dir(art.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers,
        vec![std::ffi::OsString::from("dir.tgz")],
        "temporary files left behind"
    );

    // Only the container literally named `main` stages outputs.
    let pod2 = Pod::new();
    let out = run(pod2.sh(
        "sidecar",
        &template.replace(&w.to_string(), &pod2.work().display().to_string()),
        script,
    ));
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !pod2.paths().var_run_argo().join("outputs").exists(),
        "a non-main container staged outputs"
    );
}

fn container_set(dependencies_of_b: &[&str]) -> String {
    json!({
        "name": "cs",
        "containerSet": {"containers": [
            {"name": "a", "image": "x"},
            {"name": "b", "image": "x", "dependencies": dependencies_of_b},
        ]},
    })
    .to_string()
}

fn dependency_success_case(pod: Pod) {
    let template = container_set(&["a"]);
    let a_exit = pod.paths().exitcode_file("a");
    let script = format!("cat '{}' > b_saw", a_exit.display());
    let mut b = pod.spawn("b", pod.sh("b", &template, &script));
    pod.await_log("b", "waiting for dependencies");
    std::thread::sleep(WINDOW);
    assert!(b.try_wait().unwrap().is_none(), "b did not wait for a");
    assert!(!pod.work().join("b_saw").exists(), "b ran before a");

    let out = run(pod.sh("a", &template, "touch a_ran"));
    assert_eq!(out.status.code(), Some(0));
    let status = finish(&mut b, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        fs::read_to_string(pod.work().join("b_saw")).unwrap(),
        "0",
        "b ran before a's exit code"
    );
    assert!(pod.work().join("a_ran").exists());
}

#[test]
fn container_set_dependency_success_releases_the_dependent() {
    dependency_success_case(Pod::new());
}

#[test]
fn container_set_dependency_success_releases_the_dependent_when_polling() {
    dependency_success_case(Pod::polling());
}

fn dependency_failure_case(pod: Pod) {
    let template = container_set(&["a"]);
    let mut b = pod.spawn("b", pod.sh("b", &template, "touch b_ran"));
    pod.await_log("b", "waiting for dependencies");
    let out = run(pod.sh("a", &template, "exit 1"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(finish(&mut b, Duration::from_secs(10)).code(), Some(64));
    assert!(
        pod.log("b").contains(r#"dependency "a" exited with code 1"#),
        "{}",
        pod.log("b")
    );
    assert!(pod.termination_log().contains(r#"dependency "a""#));
    assert!(!pod.work().join("b_ran").exists(), "b ran despite a failing");
    assert_eq!(pod.exitcode("b").as_deref(), Some("64"));
}

#[test]
fn container_set_dependency_failure_fails_the_dependent() {
    dependency_failure_case(Pod::new());
}

#[test]
fn container_set_dependency_failure_fails_the_dependent_when_polling() {
    dependency_failure_case(Pod::polling());
}

#[test]
fn sigterm_while_waiting_for_a_dependency_exits_143() {
    let pod = Pod::new();
    let mut b = pod.spawn("b", pod.sh("b", &container_set(&["a"]), "touch b_ran"));
    pod.await_log("b", "waiting for dependencies");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(b.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = finish(&mut b, Duration::from_secs(5));
    assert_eq!(status.code(), Some(143));
    assert_eq!(pod.exitcode("b").as_deref(), Some("143"));
    assert!(!pod.work().join("b_ran").exists());
}

fn retrying(retries: u32) -> String {
    json!({
        "name": "r",
        "containerSet": {
            "retryStrategy": {"retries": retries, "duration": "10ms"},
            "containers": [{"name": "main", "image": "x"}],
        },
    })
    .to_string()
}

const FLAKY: &str =
    r#"n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo "attempt $n"; [ "$n" -ge 3 ]"#;

#[test]
fn container_set_retries_until_success() {
    let pod = Pod::new();
    let mut c = pod.sh("main", &retrying(2), FLAKY);
    c.env("ARGO_INCLUDE_SCRIPT_OUTPUT", "true");
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        fs::read_to_string(pod.paths().stdout_file("main")).unwrap(),
        "attempt 1\nattempt 2\nattempt 3\n"
    );
    assert_eq!(pod.exitcode("main").as_deref(), Some("0"));

    // retries: 1 → two attempts, then the failure stands.
    let pod = Pod::new();
    let out = run(pod.sh("main", &retrying(1), FLAKY));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fs::read_to_string(pod.work().join("count")).unwrap().trim(), "2");
    assert_eq!(text(&out.stdout), "attempt 1\nattempt 2\n");
}

fn pause_before_case(pod: Pod) {
    let mut c = pod.sh("main", PLAIN, "touch marker");
    c.env("ARGO_DEBUG_PAUSE_BEFORE", "true");
    let mut child = pod.spawn("main", c);
    pod.await_log("main", "paused: create the release file");
    std::thread::sleep(WINDOW);
    assert!(
        !pod.work().join("marker").exists(),
        "ran before the pause was released"
    );
    assert!(child.try_wait().unwrap().is_none());
    fs::write(pod.ctr("main").join("before"), "").unwrap();
    assert_eq!(finish(&mut child, Duration::from_secs(5)).code(), Some(0));
    assert!(pod.work().join("marker").exists());
}

#[test]
fn debug_pause_before_holds_the_command() {
    pause_before_case(Pod::new());
}

#[test]
fn debug_pause_before_holds_the_command_when_polling() {
    pause_before_case(Pod::polling());
}

fn pause_after_case(pod: Pod) {
    let mut c = pod.sh("main", PLAIN, "touch marker; exit 5");
    c.env("ARGO_DEBUG_PAUSE_AFTER", "true");
    let mut child = pod.spawn("main", c);
    pod.await_log("main", "paused: create the release file");
    assert!(
        pod.work().join("marker").exists(),
        "paused after a command that never ran"
    );
    std::thread::sleep(WINDOW);
    assert_eq!(pod.exitcode("main"), None, "exit code written during the pause");
    assert!(child.try_wait().unwrap().is_none());
    fs::write(pod.ctr("main").join("after"), "").unwrap();
    assert_eq!(finish(&mut child, Duration::from_secs(5)).code(), Some(5));
    assert_eq!(pod.exitcode("main").as_deref(), Some("5"));
}

#[test]
fn debug_pause_after_holds_the_exit_code() {
    pause_after_case(Pod::new());
}

#[test]
fn debug_pause_after_holds_the_exit_code_when_polling() {
    pause_after_case(Pod::polling());
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn large_output_streams_in_constant_memory() {
    let pod = Pod::new();
    let mut c = pod.sh(
        "main",
        PLAIN,
        "head -c 52428800 /dev/zero; touch ready; exec sleep 30",
    );
    c.env("ARGO_INCLUDE_SCRIPT_OUTPUT", "true");
    let mut child = pod.spawn("main", c);
    assert!(
        eventually(Duration::from_secs(60), || pod.work().join("ready").exists()),
        "output never finished"
    );
    let hwm = status_kib(child.id(), "VmHWM:");
    fs::write(pod.paths().signal_file("main"), "15").unwrap();
    assert_eq!(finish(&mut child, Duration::from_secs(10)).code(), Some(143));
    // Nearly all of it must have reached the capture file by the time `head` exited (at most
    // one pipe buffer may still have been in flight then, and it is drained at exit).
    assert_eq!(
        fs::metadata(pod.paths().stdout_file("main")).unwrap().len(),
        52_428_800
    );
    // Constant memory: far below the 50 MiB that went through. The bound leaves room for the
    // debug binary's touched code pages (it also carries the node server and kube client).
    assert!(hwm < 24 * 1024, "wrapper VmHWM {hwm} KiB");
}
