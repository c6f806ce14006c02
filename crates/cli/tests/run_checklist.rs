//! The scenario checklist (docs: argo-executors.md §7.3, items 1–9, 11, 13, 14, 16, 17, 22)
//! as `argoexec run` workflows on the local node, each with every executor that supports it:
//! items whose outputs stay on volumes (2, 8, 9, 13, 14, 16) also run with kubelet and
//! k8sapi; base-layer items run with emissary, docker and pns.

mod run_support;

use std::time::{Duration, Instant};

use run_support::{
    ALL_EXECUTORS, EXECUTORS, RunResult, STDOUT_ONLY, docker_available, only, run_file, run_yaml,
    tgz_entries, wf,
};

fn each(yaml: &str, check: impl Fn(&str, &RunResult)) {
    each_of(&EXECUTORS, yaml, check);
}

/// With every executor, kubelet and k8sapi included (outputs on volumes only).
fn each_all(yaml: &str, check: impl Fn(&str, &RunResult)) {
    each_of(&ALL_EXECUTORS, yaml, check);
}

fn each_of(executors: &[&'static str], yaml: &str, check: impl Fn(&str, &RunResult)) {
    if !docker_available() {
        return;
    }
    for ex in only(executors) {
        check(ex, &run_yaml(yaml, ex, &[]));
    }
}

#[test]
fn item1_missing_output_parameter_without_default_is_an_error() {
    let y = wf(
        "param-missing",
        "container: {image: busybox, command: [sh, -c], args: ['true']}\noutputs:\n  parameters:\n    - {name: p, valueFrom: {path: /tmp/absent}}",
    );
    each(&y, |ex, r| {
        assert_ne!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert!(r.message().contains("p") && r.code != 0, "{ex}: {}", r.dump());
    });
}

#[test]
fn item2_output_parameter_from_nested_volume_mounts() {
    let y = wf(
        "nested",
        "volumes:\n  - {name: outer, emptyDir: {}}\n  - {name: inner, emptyDir: {}}\ncontainer:\n  image: busybox\n  command: [sh, -c]\n  args: ['echo o > /mnt/outer/o.txt; echo i > /mnt/outer/inner/i.txt']\n  volumeMounts:\n    - {name: outer, mountPath: /mnt/outer}\n    - {name: inner, mountPath: /mnt/outer/inner}\noutputs:\n  parameters:\n    - {name: o, valueFrom: {path: /mnt/outer/o.txt}}\n    - {name: i, valueFrom: {path: /mnt/outer/inner/i.txt}}",
    );
    each_all(&y, |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(
            (r.param("o").as_deref(), r.param("i").as_deref()),
            (Some("o"), Some("i")),
            "{ex}"
        );
    });
}

#[test]
fn item4_output_artifact_at_an_input_artifact_path() {
    let y = wf(
        "in-out",
        "inputs:\n  artifacts:\n    - {name: f, path: /file, raw: {data: hi}}\ncontainer: {image: busybox, command: [sh, -c], args: ['cat /file']}\noutputs:\n  artifacts:\n    - {name: f, path: /file}",
    );
    each(&y, |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let e = tgz_entries(&r.artifact("f").expect("artifact f"));
        assert_eq!(e, vec![("file".to_string(), b"hi".to_vec())], "{ex}");
    });
}

#[test]
fn item5_missing_required_output_artifact_fails_the_node() {
    let y = wf(
        "art-missing",
        "container: {image: busybox, command: [sh, -c], args: ['true']}\noutputs:\n  artifacts:\n    - {name: needed, path: /tmp/never}",
    );
    each(&y, |ex, r| {
        assert_ne!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert!(r.message().contains("needed"), "{ex}: {}", r.dump());
    });
}

#[test]
fn item6_input_tarball_from_the_local_repository_is_extracted() {
    if !docker_available() {
        return;
    }
    for ex in only(&EXECUTORS) {
        let repo = tempfile::tempdir().unwrap();
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(repo.path().join("in.tgz")).unwrap(),
            flate2::Compression::default(),
        );
        let mut t = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(5);
        h.set_mode(0o644);
        t.append_data(&mut h, "data.txt", &b"tar\n!"[..]).unwrap();
        t.into_inner().unwrap().finish().unwrap();
        let y = wf(
            "in-tgz",
            "inputs:\n  artifacts:\n    - {name: t, path: /in/renamed.txt, local: {path: /argo/artifact-repository/in.tgz}}\ncontainer: {image: busybox, command: [sh, -c], args: ['cat /in/renamed.txt']}",
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("wf.yaml"), y).unwrap();
        let r = run_file(&dir.path().join("wf.yaml"), ex, &[], Some(repo));
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(
            r.result(),
            Some("tar\n!"),
            "{ex}: single-entry tar renamed to the path"
        );
    }
}

#[test]
fn item8_exit_codes_follow_128_plus_signal() {
    // `$$$$`: Kubernetes reduces `$$` to `$` in command and args, so the shell sees `$$`.
    // `; exit $?` keeps the outer shell from exec'ing the inner one: as PID 1 (docker
    // executor, no wrapper) a process without handlers ignores TERM.
    for (cmd, code) in [
        ("exit 1", 1),
        ("sh -c 'kill -TERM $$$$'; exit $?", 143),
        ("sh -c 'kill -KILL $$$$'; exit $?", 137),
    ] {
        let y = wf(
            "exit",
            &format!("container: {{image: busybox, command: [sh, -c], args: [\"{cmd}\"]}}"),
        );
        each_all(&y, |ex, r| {
            assert_eq!((r.code, r.phase()), (1, "Failed"), "{ex} {cmd}: {}", r.dump());
            assert_eq!(r.json["exitCode"], code, "{ex} {cmd}");
            assert!(
                r.message().contains(&format!("(exit code {code})")),
                "{ex}: {}",
                r.message()
            );
        });
    }
}

#[test]
fn item9_invalid_command_says_executable_file_not_found() {
    let y = wf("badcmd", "container: {image: busybox, command: [no-such-binary]}");
    each_all(&y, |ex, r| {
        assert_eq!(r.phase(), "Failed", "{ex}: {}", r.dump());
        assert!(
            r.message().contains("executable file not found"),
            "{ex}: {}",
            r.dump()
        );
    });
}

#[test]
fn item13_deadline_fails_the_node_and_logs_are_still_saved() {
    let y = wf(
        "deadline",
        "activeDeadlineSeconds: 2\narchiveLocation: {archiveLogs: true}\ncontainer: {image: busybox, command: [sh, -c], args: ['echo started; trap \"exit 143\" TERM; sleep 60 & wait']}",
    );
    each_all(&y, |ex, r| {
        assert_eq!(r.phase(), "Failed", "{ex}: {}", r.dump());
        assert!(
            r.message().to_lowercase().contains("deadline"),
            "{ex}: {}",
            r.dump()
        );
        let logs = r
            .artifact("main-logs")
            .unwrap_or_else(|| panic!("{ex}: no main-logs: {}", r.dump()));
        assert!(
            std::fs::read_to_string(&logs).unwrap().contains("started"),
            "{ex}"
        );
    });
}

#[test]
fn item14_archive_logs_holds_stdout_and_stderr() {
    let y = wf(
        "logs",
        "archiveLocation: {archiveLogs: true}\ncontainer: {image: busybox, command: [sh, -c], args: ['echo to-out; echo to-err >&2']}",
    );
    each_all(&y, |ex, r| {
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let logs = r
            .artifact("main-logs")
            .unwrap_or_else(|| panic!("{ex}: {}", r.dump()));
        assert_eq!(
            logs.file_name().unwrap(),
            "main.log",
            "{ex}: logs are saved as <ctr>.log, not archived"
        );
        let text = std::fs::read_to_string(&logs).unwrap();
        assert!(text.contains("to-out") && text.contains("to-err"), "{ex}: {text}");
        if STDOUT_ONLY.contains(&ex) {
            assert_eq!(r.result(), Some("to-out"), "{ex}");
        } else {
            // kubelet, k8sapi and pns read the combined log (documented).
            assert!(
                r.result()
                    .is_some_and(|t| t.contains("to-out") && t.contains("to-err")),
                "{ex}"
            );
        }
    });
}

#[test]
fn item16_background_process_does_not_keep_the_pod_alive() {
    let y = wf(
        "bg",
        "container: {image: busybox, command: [sh, -c], args: ['sleep 60 & echo done']}",
    );
    if !docker_available() {
        return;
    }
    for ex in only(&ALL_EXECUTORS) {
        let started = Instant::now();
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert!(
            started.elapsed() < Duration::from_secs(45),
            "{ex}: the background sleep kept the pod alive"
        );
    }
}

#[test]
fn item17_failed_dependency_fails_its_dependants() {
    let y = wf(
        "cs-fail",
        "volumes: [{name: w, emptyDir: {}}]\ncontainerSet:\n  volumeMounts: [{name: w, mountPath: /w}]\n  containers:\n    - {name: a, image: busybox, command: [sh, -c], args: ['exit 2']}\n    - {name: main, image: busybox, command: [sh, -c], args: ['echo ran > /w/ran'], dependencies: [a]}\noutputs:\n  parameters:\n    - {name: ran, valueFrom: {path: /w/ran, default: never}}",
    );
    if !docker_available() {
        return;
    }
    // Container sets need the emissary (the pod builder refuses them for other executors).
    let r = run_yaml(&y, "emissary", &[]);
    assert_eq!(r.phase(), "Failed", "{}", r.dump());
    assert_eq!(
        r.param("ran").as_deref(),
        Some("never"),
        "main must not run after a failed dependency"
    );
}

#[test]
fn item22_short_lived_mains_lose_no_outputs() {
    let y = wf(
        "quick",
        "container: {image: busybox, command: [sh, -c], args: ['echo -n q > /tmp/q']}\noutputs:\n  parameters:\n    - {name: q, valueFrom: {path: /tmp/q}}\n  artifacts:\n    - {name: a, path: /tmp/q}",
    );
    for _ in 0..3 {
        each(&y, |ex, r| {
            assert_eq!(r.param("q").as_deref(), Some("q"), "{ex}: {}", r.dump());
            assert!(r.artifact("a").is_some_and(|p| p.exists()), "{ex}: {}", r.dump());
        });
    }
}
