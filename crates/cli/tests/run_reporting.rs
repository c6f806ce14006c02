//! Reporting through the local node's API (issue 8 §2): the wait container of an emissary
//! or docker step creates a WorkflowTaskResult (`report-outputs-completed` false → true for
//! the emissary; one write with `true` for the v3.3 executors)
//! that `argoexec run` reads back; with `create` on task results missing from the pod's
//! RBAC, the outputs of a ≤ v3.5 pod still arrive through the pod-annotation fallback, and a
//! v3.6+ pod's step fails naming the missing rule (those controllers read no annotation).

mod run_support;

use run_support::{EXECUTORS, docker_available, example, only, run_file};

/// The handshake (false → true) is v3.5's and so the emissary's; the v3.3 executors write
/// the task result once.
fn expected_labels(ex: &str) -> Vec<&'static str> {
    if ex == "emissary" {
        vec!["false", "true"]
    } else {
        vec!["true"]
    }
}

fn labels(r: &run_support::RunResult) -> Vec<String> {
    r.json["report"]["completedLabels"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

#[test]
fn outputs_arrive_as_a_task_result_with_the_handshake() {
    if !docker_available() {
        return;
    }
    for ex in only(&EXECUTORS) {
        let r = run_file(&example("output-parameter.yaml"), ex, &[], None);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(
            r.json["report"]["via"],
            "WorkflowTaskResult",
            "{ex}: {}",
            r.dump()
        );
        assert_eq!(labels(&r), expected_labels(ex), "{ex}: {}", r.dump());
        assert_eq!(
            r.param("volume").as_deref(),
            Some("from volume"),
            "{ex}: {}",
            r.dump()
        );
    }
}

#[test]
fn forbidden_task_results_fall_back_to_the_pod_annotation() {
    if !docker_available() {
        return;
    }
    let rbac = tempfile::tempdir().unwrap();
    std::fs::write(
        rbac.path().join("role.yaml"),
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: no-task-results, namespace: default}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, watch, patch]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: no-task-results, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: no-task-results}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
"#,
    )
    .unwrap();
    let dir = rbac.path().to_str().unwrap();
    for ex in only(&EXECUTORS) {
        // The fallback is v3.3's and v3.5's (the legacy executors are v3.3 only).
        let version = if ex == "emissary" { "3.5" } else { "3.3" };
        let r = run_file(
            &example("script-result.yaml"),
            ex,
            &["--rbac", dir, "--argo-version", version],
            None,
        );
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.json["report"]["via"], "pod annotation", "{ex}: {}", r.dump());
        assert!(labels(&r).is_empty(), "no task result was written: {}", r.dump());
        // pns reads the combined log, whose stream order is not defined.
        assert!(
            r.result().is_some_and(|t| t.lines().any(|l| l == "42")),
            "{ex}: {}",
            r.dump()
        );
    }
}

/// The script-result example as a `version` emissary pod whose service account may do nothing.
fn run_without_rights(version: &str) -> run_support::RunResult {
    let rbac = tempfile::tempdir().unwrap();
    std::fs::write(rbac.path().join("none.yaml"), "").unwrap();
    run_file(
        &example("script-result.yaml"),
        "emissary",
        &["--rbac", rbac.path().to_str().unwrap(), "--argo-version", version],
        None,
    )
}

#[test]
fn no_reporting_rights_at_all_is_a_step_error_naming_both_failures() {
    if !docker_available() {
        return;
    }
    let r = run_without_rights("3.5");
    assert_eq!(r.json["report"]["via"], "none", "{}", r.dump());
    // A wait failure: Error, and the message names both refused calls.
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    let m = r.message();
    assert!(
        m.contains("cannot create resource \"workflowtaskresults\"")
            && m.contains("fallback to the pod annotation failed too")
            && m.contains("cannot patch resource \"pods\""),
        "{}",
        r.dump()
    );
}

#[test]
fn a_token_rotated_mid_step_still_reports() {
    if !docker_available() {
        return;
    }
    let yaml = r#"apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {generateName: rotation-}
spec:
  entrypoint: main
  templates:
  - name: main
    script:
      image: busybox
      command: [sh]
      source: |
        sleep 4
        echo rotated
"#;
    // Tokens rotate every second and live two: the one wait started with has expired by
    // the final report, which must re-read the projected token file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wf.yaml");
    std::fs::write(&path, yaml).unwrap();
    for ex in only(&EXECUTORS) {
        let r = run_file(
            &path,
            ex,
            &["--node-token-rotation", "1", "--node-token-ttl", "2"],
            None,
        );
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(
            r.json["report"]["via"],
            "WorkflowTaskResult",
            "{ex}: {}",
            r.dump()
        );
        assert_eq!(labels(&r), expected_labels(ex), "{ex}: {}", r.dump());
        assert_eq!(r.result(), Some("rotated"), "{ex}: {}", r.dump());
    }
}

/// A v3.6+ pod (the default, 4.1) has no annotation fallback: a 403 on the task result is a
/// step error naming the rule to add, and the pod is never patched.
#[test]
fn a_4_1_pod_without_task_result_rights_names_the_missing_rule() {
    if !docker_available() {
        return;
    }
    let r = run_without_rights("4.1");
    assert_eq!(r.json["report"]["via"], "none", "{}", r.dump());
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    let m = r.message();
    assert!(
        m.contains("lacks the rule `create` on `workflowtaskresults.argoproj.io`")
            && !m.contains("fallback to the pod annotation"),
        "{}",
        r.dump()
    );
    let pod_patches = r.json["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["verb"] == "patch" && q["path"].as_str().is_some_and(|p| p.contains("/pods/")))
        .count();
    assert_eq!(pod_patches, 0, "{}", r.dump());
}
