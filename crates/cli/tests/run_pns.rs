//! The pns backend on real pods: symlinks resolve inside main's root, mains that live a few
//! milliseconds keep their base-layer outputs (200 runs), sidecars without a shell or
//! ignoring SIGTERM are stopped through pidfds, and mains running as another user are read.
//! Also checklist items 3 (base-layer artifacts), 7 (script), 11 (sidecar KILL after grace)
//! and 15 (non-root) with every base-layer executor.

mod run_support;

use std::sync::atomic::{AtomicUsize, Ordering};

use run_support::{EXECUTORS, config_map, docker_available, only, run_yaml, wf};

/// Every entry of a .tgz as (path, type, link target or contents).
fn tgz(path: &std::path::Path) -> Vec<(String, tar::EntryType, Vec<u8>)> {
    let f = std::fs::File::open(path).unwrap();
    let mut ar = tar::Archive::new(flate2::read::MultiGzDecoder::new(f));
    let mut out = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        let kind = e.header().entry_type();
        let mut v = Vec::new();
        if kind.is_symlink() {
            v = e.link_name_bytes().unwrap().into_owned();
        } else {
            std::io::Read::read_to_end(&mut e, &mut v).unwrap();
        }
        out.push((name, kind, v));
    }
    out
}

#[test]
fn symlinks_resolve_inside_mains_root_not_the_wait_containers() {
    if !docker_available() {
        return;
    }
    // The wait container has a CA bundle at this path and no /etc/shadow; main has both with
    // its own contents. Absolute and climbing links must land in main's files.
    let y = wf(
        "links",
        "container:\n  image: busybox\n  command: [sh, -c]\n  args: ['mkdir -p /etc/ssl/certs /tmp/d; echo -n main-ca > /etc/ssl/certs/ca-certificates.crt; echo -n main-shadow > /etc/shadow; ln -s /etc/ssl/certs/ca-certificates.crt /tmp/ca; ln -s ../../../../../etc/shadow /tmp/up; ln -s /etc/shadow /tmp/d/abs; echo -n x > /tmp/d/f']\noutputs:\n  parameters:\n    - {name: ca, valueFrom: {path: /tmp/ca}}\n    - {name: up, valueFrom: {path: /tmp/up}}\n  artifacts:\n    - {name: d, path: /tmp/d}",
    );
    let r = run_yaml(&y, "pns", &[]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.param("ca").as_deref(), Some("main-ca"), "{}", r.dump());
    assert_eq!(r.param("up").as_deref(), Some("main-shadow"), "{}", r.dump());
    let d = tgz(&r.artifact("d").expect("artifact d"));
    let abs = d.iter().find(|(n, ..)| n == "d/abs").expect("d/abs");
    assert!(
        abs.1.is_symlink(),
        "links inside an archived directory are stored, not followed: {d:?}"
    );
    assert_eq!(abs.2, b"/etc/shadow");
    assert!(d.iter().any(|(n, _, v)| n == "d/f" && v == b"x"), "{d:?}");
}

#[test]
fn mains_living_a_few_milliseconds_lose_no_base_layer_outputs_in_200_runs() {
    if !docker_available() {
        return;
    }
    // `sh -c 'echo -n q > /tmp/q'` lives about a millisecond after its exec. Four runs at
    // a time (also a load test for the 1 ms /proc scan).
    let y = wf(
        "quick",
        "container: {image: busybox, command: [sh, -c], args: ['echo -n q > /tmp/q']}\noutputs:\n  parameters:\n    - {name: q, valueFrom: {path: /tmp/q}}\n  artifacts:\n    - {name: a, path: /tmp/q}",
    );
    let runs = std::env::var("ARGOEXEC_PNS_QUICK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200usize);
    let next = AtomicUsize::new(0);
    let lost = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    // wait's debug log is kept, so a loss shows what the tracker saw.
                    let logs = tempfile::tempdir().unwrap();
                    let dir = logs.path().to_str().unwrap();
                    let r = run_yaml(&y, "pns", &["--logs", dir, "--executor-loglevel", "debug"]);
                    let ok = r.phase() == "Succeeded"
                        && r.param("q").as_deref() == Some("q")
                        && r.artifact("a").is_some_and(|p| p.exists());
                    if !ok {
                        let wait = std::fs::read_to_string(logs.path().join("wait.log")).unwrap_or_default();
                        lost.lock()
                            .unwrap()
                            .push(format!("{}\nwait's log:\n{wait}", r.dump()));
                    }
                }
            });
        }
    });
    let lost = lost.into_inner().unwrap();
    assert!(
        lost.is_empty(),
        "{} of {runs} runs lost outputs; first:\n{}",
        lost.len(),
        lost[0]
    );
}

#[test]
fn sidecars_without_a_shell_or_ignoring_sigterm_are_stopped() {
    if !docker_available() {
        return;
    }
    // `noshell` has only /bin/busybox: no sh, no kill. Not PID 1 under pns, so TERM ends it.
    // `stubborn` ignores TERM and is KILLed after the (1 s) grace: 137, not a failure.
    let y = wf(
        "sidecars",
        "sidecars:\n  - {name: quiet, image: noshell, command: [/bin/busybox, sleep, '3600']}\n  - {name: stubborn, image: busybox, command: [sh, -c], args: [\"trap '' TERM; while true; do sleep 1; done\"]}\ncontainer: {image: busybox, command: [sh, -c], args: ['sleep 1; echo done']}",
    );
    let d = tempfile::tempdir().unwrap();
    let cm = config_map(
        &d,
        "  executor: |\n    env: [{name: ARGO_TERMINATION_GRACE_PERIOD_SECONDS, value: \"1\"}]\n",
    );
    let r = run_yaml(&y, "pns", &["--config", &cm]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.exit_of("quiet"), Some(143), "{}", r.dump());
    assert_eq!(r.exit_of("stubborn"), Some(137), "{}", r.dump());
    assert_eq!(r.exit_of("wait"), Some(0), "{}", r.dump());
}

#[test]
fn item3_base_layer_artifacts_file_dir_raw_and_compression_level() {
    if !docker_available() {
        return;
    }
    // 256 KiB of zeros on a volume at level 0 is stored (bigger than the data); a raw
    // directory is uploaded as a directory; a trailing slash is tolerated.
    let y = wf(
        "item3",
        "volumes: [{name: v, emptyDir: {}}]\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['mkdir -p /tmp/dir/sub /tmp/raw; echo -n f > /tmp/f.txt; echo -n b > /tmp/dir/sub/b; echo -n r > /tmp/raw/r; head -c 262144 /dev/zero > /v/zeros']\n  volumeMounts: [{name: v, mountPath: /v}]\noutputs:\n  artifacts:\n    - {name: file, path: /tmp/f.txt}\n    - {name: dir, path: /tmp/dir/}\n    - {name: raw, path: /tmp/raw, archive: {none: {}}}\n    - {name: stored, path: /v/zeros, archive: {tar: {compressionLevel: 0}}}\n    - {name: packed, path: /v/zeros}",
    );
    for ex in only(&EXECUTORS) {
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let f = tgz(&r.artifact("file").unwrap());
        assert_eq!(f.len(), 1, "{ex}: {f:?}");
        assert_eq!((f[0].0.as_str(), f[0].2.as_slice()), ("f.txt", &b"f"[..]), "{ex}");
        let d = tgz(&r.artifact("dir").unwrap());
        assert!(
            d.iter().all(|(n, ..)| n.starts_with("dir")),
            "{ex}: one top-level entry: {d:?}"
        );
        assert!(
            d.iter().any(|(n, _, v)| n == "dir/sub/b" && v == b"b"),
            "{ex}: {d:?}"
        );
        let raw = r.artifact("raw").unwrap();
        assert!(
            raw.is_dir(),
            "{ex}: a raw directory stays a directory: {}",
            raw.display()
        );
        assert_eq!(std::fs::read(raw.join("r")).unwrap(), b"r", "{ex}");
        let stored = std::fs::metadata(r.artifact("stored").unwrap()).unwrap().len();
        let packed = std::fs::metadata(r.artifact("packed").unwrap()).unwrap().len();
        assert!(
            stored > 262_144 && packed < 4096,
            "{ex}: level 0 gave {stored} B, default {packed} B"
        );
    }
}

#[test]
fn item7_script_source_is_staged_and_its_result_captured() {
    if !docker_available() {
        return;
    }
    let y = wf(
        "item7",
        "script:\n  image: busybox\n  command: [sh]\n  source: |\n    echo \"$0\"\n    cat \"$0\" | wc -l\n",
    );
    for ex in only(&EXECUTORS) {
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        // The source path is appended to the args; one trailing newline is trimmed.
        assert_eq!(r.result(), Some("/argo/staging/script\n2"), "{ex}: {}", r.dump());
    }
}

#[test]
fn item15_non_root_pods_and_mains_running_as_another_user() {
    if !docker_available() {
        return;
    }
    // The whole pod as UID 8737 (runAsNonRoot), and main alone as UID 1234 beside a root wait.
    // A non-root wait has no CAP_SYS_PTRACE: it can open main's root only once main has
    // exec'd (runc's init is non-dumpable until then), so — as docs/backends/pns.md says —
    // main must outlive wait's first look after its exec. This main stays 300 ms after its
    // write (its shape, not a synchronisation); mains of a few ms are covered below.
    let pod_wide = wf(
        "nonroot",
        "securityContext: {runAsNonRoot: true, runAsUser: 8737}\ncontainer: {image: busybox, command: [sh, -c], args: ['echo -n $(id -u) > /tmp/uid; sleep 0.3']}\noutputs:\n  parameters:\n    - {name: uid, valueFrom: {path: /tmp/uid}}\n  artifacts:\n    - {name: a, path: /tmp/uid}",
    );
    let quick_non_root = wf(
        "nonrootquick",
        "securityContext: {runAsNonRoot: true, runAsUser: 8737}\ncontainer: {image: busybox, command: [sh, -c], args: ['echo -n q > /tmp/q']}\noutputs:\n  parameters:\n    - {name: q, valueFrom: {path: /tmp/q}}",
    );
    let main_only = wf(
        "otheruid",
        "container: {image: busybox, command: [sh, -c], args: ['echo -n $(id -u) > /tmp/uid; chmod 600 /tmp/uid'], securityContext: {runAsUser: 1234}}\noutputs:\n  parameters:\n    - {name: uid, valueFrom: {path: /tmp/uid}}",
    );
    // Not docker: its wait needs root for docker.sock (as in Argo's support matrix).
    for ex in only(&["emissary", "pns"]) {
        let r = run_yaml(&pod_wide, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("uid").as_deref(), Some("8737"), "{ex}: {}", r.dump());
        assert!(r.artifact("a").is_some_and(|p| p.exists()), "{ex}: {}", r.dump());
    }
    // A main of a few ms in a non-root pns pod: its output is read, or the step ends with
    // the error that names the cause — never a hang, a wrong value or a silent success.
    if only(&["pns"]).contains(&"pns") {
        for _ in 0..5 {
            let r = run_yaml(&quick_non_root, "pns", &[]);
            match r.phase() {
                "Succeeded" => assert_eq!(r.param("q").as_deref(), Some("q"), "{}", r.dump()),
                "Error" => assert!(
                    r.message().contains("without CAP_SYS_PTRACE on the wait container a main must run as wait's user and live until wait sees it"),
                    "{}",
                    r.dump()
                ),
                other => panic!("phase {other}: {}", r.dump()),
            }
        }
    }
    for ex in only(&EXECUTORS) {
        let r = run_yaml(&main_only, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("uid").as_deref(), Some("1234"), "{ex}: {}", r.dump());
    }
}

#[test]
fn volume_outputs_example_reports_once_through_a_task_result() {
    if !docker_available() {
        return;
    }
    let r = run_support::run_file(&run_support::example("volume-outputs.yaml"), "pns", &[], None);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.param("answer").as_deref(), Some("42"));
    let report = &r.json["report"];
    assert_eq!(report["via"], "WorkflowTaskResult", "{}", r.dump());
    assert_eq!(
        report["completedLabels"],
        serde_json::json!(["true"]),
        "v3.3 executors write once"
    );
    let entries = run_support::tgz_entries(&r.artifact("report").expect("report artifact"));
    assert!(
        entries
            .iter()
            .any(|(n, d)| n == "report/data.txt" && d == b"rows\n"),
        "{entries:?}"
    );
    // The exit code arrives from the pod status after the pidfd wake-up.
    assert_eq!(r.json["exitCode"], 0, "{}", r.dump());
}
