//! Faults injected by the local node (`argoexec run --faults …`, docs/faults.md), end to end
//! on real pods: for each fault, every backend that can meet it ends the step with the right
//! phase, message and outputs. Each test also reads the node's own account of what it
//! injected (`faults` in the JSON), so a fault that silently did not fire fails the test.
//!
//! The mains here live about two seconds (`sleep 2`), so that timed faults land while wait
//! waits; that is the workload's shape, not a synchronisation.

mod run_support;

use run_support::{ALL_EXECUTORS, KUBE_EXECUTORS, RunResult, docker_available, only, run_yaml, wf};

/// A step writing `42` to a volume after two seconds: every backend can read it.
fn slow_step(name: &str) -> String {
    wf(
        name,
        "volumes: [{name: out, emptyDir: {}}]\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['sleep 2; echo -n 42 > /out/answer']\n  volumeMounts: [{name: out, mountPath: /out}]\noutputs:\n  parameters: [{name: answer, valueFrom: {path: /out/answer}}]",
    )
}

fn faults(r: &RunResult) -> &serde_json::Value {
    &r.json["faults"]
}

fn count(r: &RunResult, key: &str) -> u64 {
    faults(r)[key].as_u64().unwrap_or(0)
}

fn acted(r: &RunResult, action: &str) -> bool {
    faults(r)["actions"].as_array().is_some_and(|a| {
        a.iter()
            .any(|x| x.as_str().is_some_and(|s| s.starts_with(action)))
    })
}

fn assert_answered(ex: &str, r: &RunResult) {
    assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
    assert_eq!(r.param("answer").as_deref(), Some("42"), "{ex}: {}", r.dump());
    assert_eq!(
        r.json["report"]["via"],
        "WorkflowTaskResult",
        "{ex}: {}",
        r.dump()
    );
}

#[test]
fn api_error_bursts_and_slow_answers_still_report() {
    if !docker_available() {
        return;
    }
    // Four errors fit in Argo's task-result backoff (5 attempts); the watch, log and kubelet
    // calls of the other backends meet some of them too.
    let y = slow_step("bursts");
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(
            &y,
            ex,
            &["--faults", "api-429=2:1,api-503=1,api-500=1,api-delay=150"],
        );
        assert_answered(ex, &r);
        assert_eq!(
            count(&r, "apiErrors"),
            4,
            "{ex}: every error was answered: {}",
            r.dump()
        );
    }
}

#[test]
fn cut_and_expired_watches_are_resumed() {
    if !docker_available() {
        return;
    }
    let y = slow_step("watchcut");
    // k8sapi waits on the watch; pns reads exit codes from it.
    for ex in only(&["k8sapi", "pns"]) {
        let r = run_yaml(&y, ex, &["--faults", "watch-cut-events=1,watch-expire=2"]);
        assert_answered(ex, &r);
        assert!(count(&r, "cutWatches") >= 1, "{ex}: {}", r.dump());
        if ex == "k8sapi" {
            // Every resume from a resourceVersion was answered 410 twice, then re-listed.
            assert_eq!(count(&r, "expiredWatches"), 2, "{ex}: {}", r.dump());
        }
        let r = run_yaml(&y, ex, &["--faults", "watch-cut-secs=1"]);
        assert_answered(ex, &r);
        if ex == "k8sapi" {
            assert!(count(&r, "cutWatches") >= 1, "{ex}: {}", r.dump());
        }
    }
}

#[test]
fn endpoints_restarting_mid_wait_do_not_lose_the_step() {
    if !docker_available() {
        return;
    }
    let y = slow_step("restart");
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(&y, ex, &["--faults", "api-restart=main-running+300:800"]);
        assert_answered(ex, &r);
        assert!(acted(&r, "ApiRestart"), "{ex}: {}", r.dump());
    }
    for ex in only(&["kubelet"]) {
        let r = run_yaml(&y, ex, &["--faults", "kubelet-restart=main-running+300:800"]);
        assert_answered(ex, &r);
        assert!(acted(&r, "KubeletRestart"), "{ex}: {}", r.dump());
    }
}

#[test]
fn a_stale_kubelet_delays_the_notice_but_not_the_truth() {
    if !docker_available() {
        return;
    }
    let y = slow_step("stale");
    for ex in only(&["kubelet"]) {
        let r = run_yaml(&y, ex, &["--faults", "kubelet-stale=1500"]);
        assert_answered(ex, &r);
        assert!(count(&r, "staleAnswers") > 0, "{ex}: {}", r.dump());
        assert_eq!(r.json["exitCode"], 0, "{ex}: {}", r.dump());
    }
}

#[test]
fn exec_closed_without_a_status_is_never_taken_for_success() {
    if !docker_available() {
        return;
    }
    // The sidecar dies of the TERM the silent exec delivered: the pod status, not the exec,
    // says so, and the step succeeds.
    let sidecar = run_support::example("sidecar.yaml");
    // A sidecar whose PID 1 ignores TERM and KILL from inside: the silent execs must not
    // be read as "signalled and gone".
    let stubborn = wf(
        "stubborn",
        "container: {image: busybox, command: [sh, -c], args: ['echo done']}\nsidecars:\n  - {name: stubborn, image: busybox, command: [sh, -c], args: ['while true; do sleep 1; done']}",
    );
    for ex in only(&KUBE_EXECUTORS) {
        let r = run_support::run_file(&sidecar, ex, &["--faults", "exec-no-status=all"], None);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.result(), Some("serving"), "{ex}: {}", r.dump());
        assert!(count(&r, "silentExecs") >= 1, "{ex}: {}", r.dump());
        let r = run_yaml(&stubborn, ex, &["--faults", "exec-no-status=all"]);
        assert_eq!(r.phase(), "Error", "{ex}: {}", r.dump());
        assert!(
            r.message().contains("stubborn") && r.message().contains("still running"),
            "{ex}: {}",
            r.dump()
        );
    }
}

#[test]
fn a_rotated_cluster_ca_is_trusted_again_from_ca_crt() {
    if !docker_available() {
        return;
    }
    let y = slow_step("carotate");
    for ex in only(&["emissary", "k8sapi", "kubelet", "pns"]) {
        let r = run_yaml(&y, ex, &["--faults", "ca-rotate=main-running+300"]);
        assert_answered(ex, &r);
        assert!(acted(&r, "CaRotate"), "{ex}: {}", r.dump());
    }
}

#[test]
fn eviction_fails_the_step_with_the_kubelets_message() {
    if !docker_available() {
        return;
    }
    let y = slow_step("evict");
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(&y, ex, &["--faults", "evict=main-running+300"]);
        assert_eq!(r.phase(), "Failed", "{ex}: {}", r.dump());
        assert!(
            r.message().starts_with("The node was low on resource: memory."),
            "{ex}: {}",
            r.dump()
        );
        assert!(acted(&r, "Evict"), "{ex}: {}", r.dump());
        // An output is reported only if main wrote it, and then with its true value.
        if let Some(v) = r.param("answer") {
            assert_eq!(v, "42", "{ex}: {}", r.dump());
        }
    }
}

#[test]
fn a_pod_deleted_mid_step_is_an_error() {
    if !docker_available() {
        return;
    }
    let y = slow_step("deleted");
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(&y, ex, &["--faults", "delete=main-running+300"]);
        assert_eq!(r.phase(), "Error", "{ex}: {}", r.dump());
        assert_eq!(r.message(), "pod deleted", "{ex}: {}", r.dump());
        assert!(acted(&r, "Delete"), "{ex}: {}", r.dump());
        if let Some(v) = r.param("answer") {
            assert_eq!(v, "42", "{ex}: {}", r.dump());
        }
    }
}

#[test]
fn an_oom_killed_main_fails_with_oomkilled_and_keeps_earlier_outputs() {
    if !docker_available() {
        return;
    }
    // main writes its output, then grows past its 24 MiB limit.
    let y = wf(
        "oom",
        "volumes: [{name: out, emptyDir: {}}]\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['echo -n 42 > /out/answer; x=$(head -c 200000000 /dev/zero | tr \"\\\\0\" a); echo survived']\n  resources: {limits: {memory: 24Mi}}\n  volumeMounts: [{name: out, mountPath: /out}]\noutputs:\n  parameters: [{name: answer, valueFrom: {path: /out/answer}}]",
    );
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Failed", "{ex}: {}", r.dump());
        assert!(
            r.message().starts_with("OOMKilled (exit code 137)"),
            "{ex}: {}",
            r.dump()
        );
        assert_eq!(r.exit_of("main"), Some(137), "{ex}: {}", r.dump());
        assert_eq!(r.param("answer").as_deref(), Some("42"), "{ex}: {}", r.dump());
    }
}

#[test]
fn a_main_whose_pid_1_is_sigkilled_ends_failed_and_never_hangs() {
    if !docker_available() {
        return;
    }
    // Under the emissary, main's PID 1 is the wrapper: killed, it never writes `exitcode`
    // (Argo #9083, where wait then polled forever). Its liveness lock tells wait instead.
    let y = wf(
        "sigkilled",
        "volumes: [{name: out, emptyDir: {}}]\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['echo -n 42 > /out/answer; sleep 30']\n  volumeMounts: [{name: out, mountPath: /out}]\noutputs:\n  parameters: [{name: answer, valueFrom: {path: /out/answer}}]",
    );
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(&y, ex, &["--faults", "sigkill=main-running+500"]);
        assert!(acted(&r, "SigKill"), "{ex}: {}", r.dump());
        assert_eq!(r.phase(), "Failed", "{ex}: {}", r.dump());
        assert_eq!(r.message(), "Error (exit code 137)", "{ex}: {}", r.dump());
        assert_eq!(r.exit_of("main"), Some(137), "{ex}: {}", r.dump());
        assert_eq!(r.param("answer").as_deref(), Some("42"), "{ex}: {}", r.dump());
    }
}

/// A step whose main writes 24 MiB of random bytes as a base-layer artifact, and a small
/// parameter beside it.
fn big_output_step(name: &str) -> String {
    wf(
        name,
        "container: {image: busybox, command: [sh, -c], args: ['head -c 25165824 /dev/urandom > /tmp/big; echo -n ok > /tmp/p']}\noutputs:\n  parameters: [{name: p, valueFrom: {path: /tmp/p}}]\n  artifacts: [{name: big, path: /tmp/big}]",
    )
}

#[test]
fn a_full_var_run_argo_fails_the_emissarys_staging_clearly() {
    if !docker_available() {
        return;
    }
    // /var/run/argo holds the per-pod copy (a few MB); 16 MiB leaves no room for the 24 MiB
    // output the emissary stages there. docker and pns read main's root instead.
    let y = big_output_step("fullstage");
    for ex in only(&["emissary", "docker", "pns"]) {
        let r = run_yaml(&y, ex, &["--faults", "emptydir-size=var-run-argo:16Mi"]);
        if ex == "emissary" {
            assert_eq!(r.phase(), "Failed", "{ex}: {}", r.dump());
            assert!(
                r.message().contains("failed to save output /tmp/big")
                    && r.message().contains("No space left on device"),
                "{ex}: {}",
                r.dump()
            );
            assert!(
                r.artifact("big").is_none(),
                "{ex}: no half artifact: {}",
                r.dump()
            );
        } else {
            assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
            let len = std::fs::metadata(r.artifact("big").unwrap()).unwrap().len();
            assert!(len > 24 << 20, "{ex}: the whole artifact ({len} B)");
        }
    }
}

#[test]
fn a_full_artifact_repository_is_an_error_and_leaves_no_partial_object() {
    if !docker_available() {
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(repo.path())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a 16 MiB tmpfs needs root");
        return;
    }
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(repo.path());
    let y = big_output_step("fullrepo");
    let dir = repo.path().to_str().unwrap();
    for ex in only(&["emissary", "docker", "pns"]) {
        let r = run_yaml(&y, ex, &["--artifacts", dir]);
        assert_eq!(r.phase(), "Error", "{ex}: {}", r.dump());
        assert!(
            r.message().contains("output artifact \"big\"")
                && r.message().contains("No space left on device"),
            "{ex}: {}",
            r.dump()
        );
        let left: Vec<_> = walk(repo.path());
        assert!(left.is_empty(), "{ex}: files left in the repository: {left:?}");
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
