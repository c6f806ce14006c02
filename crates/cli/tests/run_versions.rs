//! The pod contract of every Argo version, end to end on the local node (issue 16): pods
//! built as each controller builds them (`--argo-version`) run with this image and report
//! as that controller reads it; pods in another namespace; templates and args offloaded to
//! the `<pod>` ConfigMap; progress ticks; sidecars that end themselves; polling instead of
//! inotify; a wait stopped by SIGTERM; an API server away for a minute.

mod run_support;

use run_support::{ALL_EXECUTORS, RunResult, docker_available, example, only, run_file, run_yaml, wf};

/// Task-result writes (creates and patches) the step made.
fn writes(r: &RunResult) -> u64 {
    r.json["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["endpoint"] == "api" && (q["verb"] == "create" || q["verb"] == "patch"))
        .filter(|q| {
            q["path"]
                .as_str()
                .is_some_and(|p| p.contains("/workflowtaskresults"))
        })
        .map(|q| q["count"].as_u64().unwrap_or(0))
        .sum()
}

fn labels(r: &RunResult) -> Vec<String> {
    r.json["report"]["completedLabels"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Each version's emissary pod, and v3.3's with every executor: Succeeded, the outputs read
/// back from the task result, the handshake of that version, and at most two writes.
#[test]
fn every_version_runs_and_reports_as_its_controller_reads_it() {
    if !docker_available() {
        return;
    }
    let mut cases: Vec<(&str, &str)> = ["3.3", "3.5", "3.7", "4.0", "4.1"]
        .into_iter()
        .map(|v| (v, "emissary"))
        .collect();
    cases.extend(
        only(&ALL_EXECUTORS)
            .into_iter()
            .filter(|e| *e != "emissary")
            .map(|e| ("3.3", e)),
    );
    for (v, ex) in cases {
        if ex == "emissary" && only(&["emissary"]).is_empty() {
            continue;
        }
        let yaml = if matches!(ex, "kubelet" | "k8sapi") {
            example("volume-outputs.yaml")
        } else {
            example("output-parameter.yaml")
        };
        let r = run_file(&yaml, ex, &["--argo-version", v], None);
        let ctx = format!("{v}/{ex}: {}", r.dump());
        assert_eq!(r.phase(), "Succeeded", "{ctx}");
        assert_eq!(r.json["report"]["via"], "WorkflowTaskResult", "{ctx}");
        // A v3.3 emissary pod looks like a v3.5 one from inside (ARGO_TEMPLATE, emissary), so
        // it gets the handshake too, which a v3.3 controller ignores (docs/compatibility.md).
        let (want, most) = if ex != "emissary" {
            (vec!["true"], 1)
        } else {
            (vec!["false", "true"], 2)
        };
        assert_eq!(labels(&r), want, "{ctx}");
        assert!(writes(&r) <= most, "{} writes: {ctx}", writes(&r));
        let owner = &r.json["report"]["taskResult"]["ownerReferences"][0]["kind"];
        assert_eq!(owner, if v == "3.3" { "Pod" } else { "Workflow" }, "{ctx}");
    }
}

/// Argo never sets ARGO_NAMESPACE: every backend finds its pod in another namespace from the
/// service account's namespace file (docker by the pod's UID).
#[test]
fn a_pod_in_another_namespace_works_with_every_backend() {
    if !docker_available() {
        return;
    }
    let yaml = example("volume-outputs.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap().replacen(
        "metadata:\n",
        "metadata:\n  namespace: team-a\n",
        1,
    );
    for ex in only(&ALL_EXECUTORS) {
        let r = run_yaml(&text, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("answer").as_deref(), Some("42"), "{ex}: {}", r.dump());
        assert_eq!(
            r.json["report"]["taskResult"]["namespace"],
            "team-a",
            "{ex}: {}",
            r.dump()
        );
    }
}

/// A template above 128 KiB: `ARGO_TEMPLATE=offloaded` on init, the JSON in the `<pod>`
/// ConfigMap at `/argo/config`; args above 128 KiB reach the command through
/// `ARGO_CONTAINER_ARGS_FILE` and `@/tmp/argo_arg_<i>.txt`.
#[test]
fn offloaded_templates_and_args_run() {
    if !docker_available() {
        return;
    }
    let big = "x".repeat(140 * 1024);
    let yaml = wf(
        "offload",
        &format!(
            r#"container:
  image: busybox
  command: [sh, -c]
  args:
    - 'f="${{0#@}}"; case "$0" in @*) wc -c < "$f" > /tmp/n;; *) echo inline > /tmp/n;; esac'
    - "{big}"
outputs:
  parameters:
    - name: count
      valueFrom: {{path: /tmp/n}}
"#
        ),
    );
    for v in ["3.7", "4.1"] {
        let r = run_yaml(&yaml, "emissary", &["--argo-version", v]);
        assert_eq!(r.phase(), "Succeeded", "{v}: {}", r.dump());
        assert_eq!(
            r.param("count").map(|n| n.trim().to_string()).as_deref(),
            Some("143360"),
            "{v}: the long argument arrives as a file: {}",
            r.dump()
        );
    }
}

/// Progress: main writes `N/M` lines to `$ARGO_PROGRESS_FILE`; wait patches them into the
/// task result at every tick while they change, and the final report has the last one.
#[test]
fn progress_ticks_reach_the_task_result() {
    if !docker_available() {
        return;
    }
    // The steps of the workload are seconds apart and the ticks a fifth of a second, so every
    // value is seen by some tick.
    let yaml = wf(
        "progress",
        "script:\n  image: busybox\n  command: [sh]\n  source: |\n    echo 1/3 > $ARGO_PROGRESS_FILE; sleep 2\n    echo 2/3 >> $ARGO_PROGRESS_FILE; sleep 2\n    echo 3/3 >> $ARGO_PROGRESS_FILE\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wf.yaml");
    std::fs::write(&path, yaml).unwrap();
    let env = [
        ("ARGO_PROGRESS_PATCH_TICK_DURATION", "200ms"),
        ("ARGO_PROGRESS_FILE_TICK_DURATION", "100ms"),
    ];
    let r = run_support::run_file_env(&path, "emissary", &[], None, &env);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.json["report"]["taskResult"]["progress"], "3/3", "{}", r.dump());
    let patches = writes(&r) - 1;
    assert!(
        (2..=4).contains(&patches),
        "the final patch plus one per value seen (1/3, 2/3, maybe 3/3): {patches}: {}",
        r.dump()
    );
}

/// Sidecars end themselves once main has exited (v3.7+): one by SIGTERM, one that traps it
/// by SIGKILL after the pod's grace period; the step Succeeds either way.
#[test]
fn sidecars_end_after_main_by_term_or_after_the_grace_period() {
    if !docker_available() {
        return;
    }
    let yaml = wf(
        "sidecars",
        r#"podSpecPatch: "terminationGracePeriodSeconds: 3"
container: {image: busybox, command: [sh, -c, "sleep 1"]}
sidecars:
  - {name: polite, image: busybox, command: [sleep, "3600"]}
  - {name: stubborn, image: busybox, command: [sh, -c, "trap '' TERM; while true; do sleep 1; done"]}
"#,
    );
    let r = run_yaml(&yaml, "emissary", &[]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.exit_of("polite"), Some(143), "{}", r.dump());
    assert_eq!(r.exit_of("stubborn"), Some(137), "{}", r.dump());
}

/// With inotify forced off (`ARGOEXEC_FS_WATCH=poll` in every container), the pod still
/// runs: the 2 s polling fallback of the wrapper and of wait.
#[test]
fn forced_polling_runs_the_step() {
    if !docker_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cm = run_support::config_map(
        &dir,
        "  executor: |\n    env: [{name: ARGOEXEC_FS_WATCH, value: poll}]\n",
    );
    let yaml = wf(
        "polling",
        "container:\n  image: busybox\n  command: [sh, -c, 'echo polled > /tmp/out']\n  env: [{name: ARGOEXEC_FS_WATCH, value: poll}]\noutputs:\n  parameters: [{name: out, valueFrom: {path: /tmp/out}}]\n",
    );
    let r = run_yaml(&yaml, "emissary", &["--config", &cm]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.param("out").as_deref(), Some("polled"), "{}", r.dump());
}

/// Wait SIGTERMed (the pod deleted) while main still runs: it stops main, saves what it has
/// and finalizes the task result (`report-outputs-completed: "true"`, Argo #12993).
#[test]
fn a_terminated_wait_still_finalizes_the_task_result() {
    if !docker_available() {
        return;
    }
    let yaml = wf(
        "terminated",
        "container:\n  image: busybox\n  command: [sh, -c, 'echo partial > /tmp/p; sleep 600']\noutputs:\n  parameters: [{name: p, valueFrom: {path: /tmp/p, default: none}}]\n",
    );
    let r = run_yaml(&yaml, "emissary", &["--faults", "delete=main-running+1500"]);
    assert_eq!(labels(&r), ["false", "true"], "{}", r.dump());
    assert_eq!(r.phase(), "Error", "{}", r.dump());
}

/// The API server answers 503 for a minute from the step's first request (the create of
/// the task result): v3.6+ pods retry forever and report once it is back.
#[test]
fn an_api_server_away_for_a_minute_is_waited_out() {
    if !docker_available() {
        return;
    }
    let r = run_file(
        &example("output-parameter.yaml"),
        "emissary",
        &["--faults", "api-503-for=60000"],
        None,
    );
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(labels(&r), ["false", "true"], "{}", r.dump());
    assert_eq!(r.param("volume").as_deref(), Some("from volume"), "{}", r.dump());
    assert!(
        r.json["faults"]["apiErrors"].as_u64().unwrap_or(0) >= 5,
        "{}",
        r.dump()
    );
}
