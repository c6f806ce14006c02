//! Wrapped sidecars end themselves once the main containers exited (Argo AW#14633), and the
//! wait side's kill escalates from SIGTERM to SIGKILL against a real wrapper (AW#15352).

use crate::pod::*;
use argoexec_runtime::RuntimeExecutor;
use serde_json::json;
use std::time::{Duration, Instant};

fn with_sidecar() -> String {
    json!({
        "name": "t",
        "container": {"image": "x"},
        "sidecars": [{"name": "side", "image": "x"}],
    })
    .to_string()
}

/// Start sidecar `side` running `script` (which must touch `ready`), check it is not ended
/// early, then run main to completion.
fn start_sidecar_then_main(pod: &Pod, script: &str, grace: &str) -> std::process::Child {
    let template = with_sidecar();
    let mut c = pod.sh("side", &template, script);
    c.env("ARGO_TERMINATION_GRACE_PERIOD_SECONDS", grace);
    let mut side = pod.spawn("side", c);
    assert!(
        eventually(Duration::from_secs(10), || pod.work().join("ready").exists()),
        "the sidecar's command never started: {}",
        pod.log("side")
    );
    assert!(side.try_wait().unwrap().is_none(), "ended before main did");
    let out = run(pod.sh("main", &template, "exit 0"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "main is not affected: {}",
        text(&out.stderr)
    );
    assert_eq!(pod.exitcode("main").as_deref(), Some("0"));
    side
}

fn sidecar_ends_on_sigterm(pod: Pod, limit: Duration) {
    let mut side = start_sidecar_then_main(&pod, "touch ready; while :; do sleep 0.02; done", "30");
    let main_done = Instant::now();
    let status = finish(&mut side, Duration::from_secs(20));
    let took = main_done.elapsed();
    assert_eq!(status.code(), Some(143), "{}", pod.log("side"));
    assert_eq!(pod.exitcode("side").as_deref(), Some("143"));
    assert!(took < limit, "took {took:?}, far below the 30 s grace period");
    assert!(
        pod.log("side")
            .contains("main container(s) exited, terminating this sidecar"),
        "{}",
        pod.log("side")
    );
    pod.check_watch_mode("side");
}

#[test]
fn a_sidecar_ends_with_sigterm_once_main_exited() {
    sidecar_ends_on_sigterm(Pod::new(), Duration::from_secs(3));
}

#[test]
fn a_sidecar_ends_with_sigterm_once_main_exited_when_polling() {
    sidecar_ends_on_sigterm(Pod::polling(), Duration::from_secs(6));
}

#[test]
fn a_sidecar_that_traps_sigterm_is_killed_after_the_grace_period() {
    let pod = Pod::new();
    let script = "trap 'touch got_term' TERM; touch ready; while :; do sleep 0.02; done";
    let mut side = start_sidecar_then_main(&pod, script, "2");
    let got_term = pod.work().join("got_term");
    assert!(
        eventually(Duration::from_secs(10), || got_term.exists()),
        "SIGTERM never reached the sidecar's command: {}",
        pod.log("side")
    );
    let termed = Instant::now();
    let status = finish(&mut side, Duration::from_secs(20));
    let held = termed.elapsed();
    assert_eq!(status.code(), Some(137), "{}", pod.log("side"));
    assert_eq!(pod.exitcode("side").as_deref(), Some("137"));
    // The trap ran shortly after SIGTERM was sent, so SIGKILL came about 2 s later.
    assert!(
        held > Duration::from_millis(1500) && held < Duration::from_secs(6),
        "SIGKILL {held:?} after the trap ran, with a 2 s grace period"
    );
    assert!(pod.log("side").contains("sending SIGKILL"), "{}", pod.log("side"));
}

#[test]
fn a_sidecar_started_after_main_exited_ends_at_once() {
    let pod = Pod::new();
    let template = with_sidecar();
    assert_eq!(run(pod.sh("main", &template, "exit 3")).status.code(), Some(3));
    let mut side = pod.spawn("side", pod.sh("side", &template, "while :; do sleep 0.02; done"));
    assert_eq!(finish(&mut side, Duration::from_secs(10)).code(), Some(143));
}

#[test]
fn containers_that_are_no_sidecars_are_not_ended() {
    // Container `init-like` is in neither `sidecars` nor the mains: it runs to its own end
    // although main has exited, as does a container-set member.
    let pod = Pod::new();
    let template = with_sidecar();
    assert_eq!(run(pod.sh("main", &template, "exit 0")).status.code(), Some(0));
    let out = run(pod.sh("init-like", &template, "sleep 0.3; echo done"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "done\n");
}

/// The wait side's kill (TERM, the grace period, KILL) against a real wrapper whose command
/// traps SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_sides_kill_escalates_to_sigkill_for_a_stubborn_command() {
    let pod = Pod::new();
    let script = "trap 'touch got_term' TERM; touch ready; while :; do sleep 0.02; done";
    let mut main = pod.spawn("main", pod.sh("main", PLAIN, script));
    let ready = pod.work().join("ready");
    assert!(
        eventually(Duration::from_secs(10), || ready.exists()),
        "never started"
    );
    let env =
        argoexec_core::ExecutorEnv::parse(|k| (k == "ARGO_POD_NAME").then(|| "pod".to_string())).unwrap();
    let runtime = argoexec_backends::select(argoexec_core::ExecutorKind::Emissary, &env, &pod.paths())
        .await
        .unwrap();
    let start = Instant::now();
    runtime
        .kill(&["main".to_string()], Duration::from_secs(1))
        .await
        .unwrap();
    let took = start.elapsed();
    assert_eq!(finish(&mut main, Duration::from_secs(10)).code(), Some(137));
    assert_eq!(pod.exitcode("main").as_deref(), Some("137"));
    assert!(pod.work().join("got_term").exists(), "SIGTERM came first");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "kill took {took:?} with a 1 s grace period"
    );
}
