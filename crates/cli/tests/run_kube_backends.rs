//! The kubelet and k8sapi backends end to end (issue 7): `argoexec run` on the local node,
//! whose wait containers reach the node's kubelet and API endpoints with their projected
//! service-account tokens — no docker.sock, host path or privilege in the pod.
//!
//! Covered here: the volume examples, base-layer outputs rejected by validation, killing a
//! sidecar without a shell, a sidecar that cannot be signalled (a clear error), the
//! `kill-cmd-<container>` annotation (with and without `%d`, malformed), the least
//! RBAC per backend (and each rule's removal failing with a clear message), the three
//! kubelet certificate setups plus a wrong CA and `kubeletInsecure`, exec through the API
//! server, a token rotated mid-wait, and the requests each step makes. The §7.3 checklist
//! items shared with the other executors run in `run_checklist.rs`.

mod run_support;

use run_support::{
    KUBE_EXECUTORS, RunResult, config_map, docker_available, example, only, run_file, run_yaml, wf,
};

/// Request count for `endpoint`, `verb` and a path ending with `suffix`.
fn requests(r: &RunResult, endpoint: &str, verb: &str, suffix: &str) -> u64 {
    r.json["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["endpoint"] == endpoint && q["verb"] == verb)
        .filter(|q| q["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
        .map(|q| q["count"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn volume_examples_succeed() {
    if !docker_available() {
        return;
    }
    for ex in only(&KUBE_EXECUTORS) {
        let r = run_file(&example("volume-outputs.yaml"), ex, &[], None);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("answer").as_deref(), Some("42"), "{ex}");
        // §7.3 item 20: one task result named after the node, owned by the pod, written once.
        let report = &r.json["report"];
        assert_eq!(report["via"], "WorkflowTaskResult", "{ex}: {}", r.dump());
        assert_eq!(report["completedLabels"], serde_json::json!(["true"]), "{ex}");
        assert_eq!(report["taskResult"]["ownerReferences"][0]["kind"], "Pod", "{ex}");
        assert!(
            report["taskResult"]["labels"]["workflows.argoproj.io/workflow"].is_string(),
            "{ex}"
        );
        let tgz = r.artifact("report").expect("report artifact");
        let entries = run_support::tgz_entries(&tgz);
        assert!(
            entries
                .iter()
                .any(|(n, d)| n == "report/data.txt" && d == b"rows\n"),
            "{ex}: {entries:?}"
        );
        for (name, want) in [
            ("hello-world.yaml", "hello world"),
            ("parameters.yaml", "hello from parameters-"),
        ] {
            let r = run_file(&example(name), ex, &[], None);
            assert_eq!(r.phase(), "Succeeded", "{ex} {name}: {}", r.dump());
            assert!(
                r.result().is_some_and(|s| s.contains(want)),
                "{ex} {name}: {}",
                r.dump()
            );
        }
        let r = run_file(&example("input-artifact.yaml"), ex, &[], None);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        // The result is the combined log on these backends (documented): stderr included.
        let r = run_file(&example("script-result.yaml"), ex, &[], None);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let result = r.result().unwrap_or_default();
        assert!(
            result.contains("this goes to stderr") && result.contains("42"),
            "{ex}: {result}"
        );
        let r = run_file(&example("sidecar.yaml"), ex, &[], None);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.result(), Some("serving"), "{ex}");
        assert_eq!(
            r.exit_of("server"),
            Some(143),
            "{ex}: stopped by its SIGTERM: {}",
            r.dump()
        );
    }
}

#[test]
fn base_layer_outputs_are_rejected_by_validation() {
    if !docker_available() {
        return;
    }
    for ex in only(&KUBE_EXECUTORS) {
        let r = run_file(&example("output-parameter.yaml"), ex, &[], None);
        assert_eq!((r.code, r.phase()), (2, "Error"), "{ex}: {}", r.dump());
        assert!(
            r.message().contains("base image layer") && r.message().contains(&format!("the {ex} executor")),
            "{ex}: {}",
            r.message()
        );
    }
}

#[test]
fn optional_missing_output_on_a_volume_is_skipped_and_a_required_one_fails() {
    let base = "volumes: [{name: v, emptyDir: {}}]\ncontainer: {image: busybox, command: [sh, -c], args: ['true'], volumeMounts: [{name: v, mountPath: /v}]}\noutputs:\n  artifacts:\n";
    for ex in only(&KUBE_EXECUTORS) {
        if !docker_available() {
            return;
        }
        let r = run_yaml(
            &wf(
                "opt",
                &format!("{base}    - {{name: maybe, path: /v/none, optional: true}}"),
            ),
            ex,
            &[],
        );
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        let r = run_yaml(
            &wf("req", &format!("{base}    - {{name: needed, path: /v/none}}")),
            ex,
            &[],
        );
        assert_ne!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert!(r.message().contains("needed"), "{ex}: {}", r.dump());
    }
}

#[test]
fn sidecar_without_a_shell_is_stopped_through_argoexec_kill() {
    // noshell:latest has /bin/busybox alone: no sh, no kill. syslogd handles SIGTERM.
    let y = wf(
        "noshell",
        "sidecars:\n  - {name: quiet, image: noshell, command: [/bin/busybox, syslogd, -n, -O, /dev/null]}\ncontainer: {image: busybox, command: [sh, -c], args: ['echo done']}",
    );
    if !docker_available() {
        return;
    }
    for ex in only(&KUBE_EXECUTORS) {
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.exit_of("quiet"), Some(143), "{ex}: {}", r.dump());
        assert_eq!(r.exit_of("wait"), Some(0), "{ex}: {}", r.dump());
    }
}

#[test]
fn sidecar_ignoring_sigterm_as_pid_1_is_a_clear_error() {
    // `exec sleep`: PID 1 without handlers, which a signal from inside cannot stop.
    let y = wf(
        "stubborn",
        "sidecars:\n  - {name: stubborn, image: busybox, command: [sh, -c], args: ['exec sleep 3600']}\ncontainer: {image: busybox, command: [sh, -c], args: ['echo done']}",
    );
    if !docker_available() {
        return;
    }
    // A 1 s grace instead of 30 s, through the config map's executor template.
    let d = tempfile::tempdir().unwrap();
    let cm = config_map(
        &d,
        "  executor: |\n    env: [{name: ARGO_TERMINATION_GRACE_PERIOD_SECONDS, value: \"1\"}]\n",
    );
    for ex in only(&KUBE_EXECUTORS) {
        let r = run_yaml(&y, ex, &["--config", &cm]);
        assert_eq!(r.phase(), "Error", "{ex}: {}", r.dump());
        assert!(
            r.message().contains("stubborn") && r.message().contains("SIGTERM handler"),
            "{ex}: {}",
            r.message()
        );
        assert_eq!(
            r.result(),
            Some("done"),
            "{ex}: outputs still reported: {}",
            r.dump()
        );
    }
}

/// A step that needs every permission of its backend: a result (logs), a sidecar (exec
/// for kill), an output on a volume and the report.
fn full_step() -> String {
    wf(
        "rbac",
        "volumes: [{name: v, emptyDir: {}}]\nsidecars:\n  - {name: side, image: busybox, command: [sh, -c], args: [\"trap 'exit 143' TERM; sleep 3600 & wait\"]}\nscript:\n  image: busybox\n  command: [sh]\n  source: 'echo -n p > /v/p; echo out'\n  volumeMounts: [{name: v, mountPath: /v}]\noutputs:\n  parameters:\n    - {name: p, valueFrom: {path: /v/p}}",
    )
}

/// RBAC YAML: the given Role rules (namespace `default`) and ClusterRole rules, bound to the
/// pod's service account.
fn rbac(role_rules: &[&str], cluster_rules: &[&str]) -> String {
    let rules = |r: &[&str]| r.iter().map(|x| format!("- {x}\n")).collect::<String>();
    let mut y = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: least, namespace: default}}\nrules:\n{}---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: least, namespace: default}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: least}}\nsubjects: [{{kind: ServiceAccount, name: default, namespace: default}}]\n",
        rules(role_rules)
    );
    if !cluster_rules.is_empty() {
        y.push_str(&format!(
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: least-node}}\nrules:\n{}---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: least-node}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: least-node}}\nsubjects: [{{kind: ServiceAccount, name: default, namespace: default}}]\n",
            rules(cluster_rules)
        ));
    }
    y
}

fn run_with_rbac(ex: &str, role: &[&str], cluster: &[&str], extra: &[&str]) -> RunResult {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("rbac.yaml"), rbac(role, cluster)).unwrap();
    let mut args = vec!["--rbac", d.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    run_yaml(&full_step(), ex, &args)
}

const TASK_RESULTS: &str =
    "{apiGroups: [argoproj.io], resources: [workflowtaskresults], verbs: [create, patch]}";

#[test]
fn least_rbac_kubelet_works_and_each_rule_is_needed() {
    if !docker_available() {
        return;
    }
    let proxy = "{apiGroups: [\"\"], resources: [nodes/proxy], verbs: [get]}";
    let r = run_with_rbac("kubelet", &[TASK_RESULTS], &[proxy], &[]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!((r.result(), r.param("p").as_deref()), (Some("out"), Some("p")));
    assert_eq!(
        requests(&r, "api", "create", "/workflowtaskresults"),
        1,
        "{}",
        r.dump()
    );
    assert!(requests(&r, "kubelet", "get", "/pods") >= 1, "{}", r.dump());
    assert!(
        requests(&r, "kubelet", "get", "/main") == 1,
        "one log read: {}",
        r.dump()
    );
    assert!(
        requests(&r, "kubelet", "get", "/side") >= 1,
        "the sidecar's kill exec: {}",
        r.dump()
    );

    let r = run_with_rbac("kubelet", &[TASK_RESULTS], &[], &[]);
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    assert!(
        r.message().contains("403") && r.message().contains("nodes"),
        "{}",
        r.message()
    );

    let r = run_with_rbac("kubelet", &[], &[proxy], &[]);
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    assert!(
        r.message().contains("workflowtaskresults") && r.message().contains("forbidden"),
        "{}",
        r.message()
    );
}

#[test]
fn least_rbac_k8sapi_works_and_each_rule_is_needed() {
    if !docker_available() {
        return;
    }
    let watch = "{apiGroups: [\"\"], resources: [pods], verbs: [watch]}";
    let log = "{apiGroups: [\"\"], resources: [pods/log], verbs: [get]}";
    let exec = "{apiGroups: [\"\"], resources: [pods/exec], verbs: [get, create]}";
    let all = [watch, log, exec, TASK_RESULTS];
    let r = run_with_rbac("k8sapi", &all, &[], &[]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!((r.result(), r.param("p").as_deref()), (Some("out"), Some("p")));
    assert_eq!(
        requests(&r, "api", "watch", "/pods"),
        1,
        "one watch: {}",
        r.dump()
    );
    assert_eq!(requests(&r, "api", "get", "/log"), 1, "one log: {}", r.dump());
    assert_eq!(
        requests(&r, "api", "create", "/workflowtaskresults"),
        1,
        "one write: {}",
        r.dump()
    );
    assert_eq!(
        requests(&r, "api", "get", "/exec"),
        1,
        "one kill exec (SIGTERM): {}",
        r.dump()
    );
    for (i, (rule, hint)) in [
        (watch, "pods: watch"),
        (log, "pods/log"),
        (exec, "pods/exec"),
        (TASK_RESULTS, "workflowtaskresults"),
    ]
    .into_iter()
    .enumerate()
    {
        let rest: Vec<&str> = all
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, r)| *r)
            .collect();
        let r = run_with_rbac("k8sapi", &rest, &[], &[]);
        assert_ne!(r.phase(), "Succeeded", "without {rule}: {}", r.dump());
        assert!(r.message().contains(hint), "without {rule}: {}", r.message());
    }
    // `get` alone on pods/exec is what a WebSocket upgrade looked like before 1.35; the
    // node checks `create` too, as 1.35+ does.
    let get_only = "{apiGroups: [\"\"], resources: [pods/exec], verbs: [get]}";
    let r = run_with_rbac("k8sapi", &[watch, log, get_only, TASK_RESULTS], &[], &[]);
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    assert!(r.message().contains("pods/exec"), "{}", r.message());
}

#[test]
fn kubelet_exec_through_the_api_server() {
    if !docker_available() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let cm = config_map(&d, "  kubeletExec: apiserver\n");
    let pods = "{apiGroups: [\"\"], resources: [nodes/pods, nodes/proxy], verbs: [get]}";
    let exec = "{apiGroups: [\"\"], resources: [pods/exec], verbs: [get, create]}";
    let r = run_with_rbac("kubelet", &[TASK_RESULTS, exec], &[pods], &["--config", &cm]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(
        requests(&r, "kubelet", "get", "/side"),
        0,
        "no kubelet exec: {}",
        r.dump()
    );
    assert_eq!(
        requests(&r, "api", "get", "/exec"),
        1,
        "kill via pods/exec: {}",
        r.dump()
    );
}

#[test]
fn kubelet_certificate_setups() {
    if !docker_available() {
        return;
    }
    let y = example("volume-outputs.yaml");
    for cert in ["ca-ip", "ca-hostname", "self-signed"] {
        let r = run_file(&y, "kubelet", &["--kubelet-cert", cert], None);
        assert_eq!(r.phase(), "Succeeded", "{cert}: {}", r.dump());
        assert_eq!(r.param("answer").as_deref(), Some("42"), "{cert}");
    }
    let d = tempfile::tempdir().unwrap();
    // A self-signed kubelet checked against the cluster CA: refused, naming CA and names.
    let cm = config_map(
        &d,
        "  kubeletCAFile: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n",
    );
    let r = run_file(
        &y,
        "kubelet",
        &["--kubelet-cert", "self-signed", "--config", &cm],
        None,
    );
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    let m = r.message();
    assert!(
        m.contains("x509") && m.contains("serviceaccount/ca.crt") && m.contains("127.0.0.1, argoexec-local"),
        "{m}"
    );
    // A fixed verify name that is not on the certificate.
    let cm = config_map(&d, "  kubeletServerName: kubelet.example\n");
    let r = run_file(&y, "kubelet", &["--config", &cm], None);
    assert_eq!(r.phase(), "Error", "{}", r.dump());
    assert!(
        r.message().contains("kubelet.example") && r.message().contains("x509"),
        "{}",
        r.message()
    );
    // Explicit insecure accepts the self-signed cert without its CA.
    let cm = config_map(&d, "  kubeletInsecure: \"true\"\n  kubeletCAFile: /nonexistent\n");
    let r = run_file(
        &y,
        "kubelet",
        &["--kubelet-cert", "self-signed", "--config", &cm],
        None,
    );
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
}

#[test]
fn token_rotated_mid_wait_still_succeeds() {
    if !docker_available() {
        return;
    }
    let y = wf(
        "rotate",
        "volumes: [{name: v, emptyDir: {}}]\ncontainer: {image: busybox, command: [sh, -c], args: ['sleep 4; echo -n r > /v/r'], volumeMounts: [{name: v, mountPath: /v}]}\noutputs:\n  parameters:\n    - {name: r, valueFrom: {path: /v/r}}",
    );
    for ex in only(&KUBE_EXECUTORS) {
        let r = run_yaml(&y, ex, &["--node-token-rotation", "1", "--node-token-ttl", "2"]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(r.param("r").as_deref(), Some("r"), "{ex}");
        if ex == "kubelet" {
            // Polls after the first token expired were accepted: the token was re-read.
            assert!(requests(&r, "kubelet", "get", "/pods") > 3, "{}", r.dump());
        }
    }
}

#[test]
fn kill_cmd_annotation_replaces_the_kill_command() {
    // Each sidecar's PID 1 is a shell that exits 0 on SIGUSR1 but 3 on SIGTERM (which would
    // fail the node): only the annotations' commands make them end cleanly. side-a's command
    // has no %d and runs as is; side-b's computes SIGUSR1 (10) from the substituted 15.
    let side = "[sh, -c], args: [\"trap 'exit 0' USR1; trap 'exit 3' TERM; while true; do sleep 0.2; done\"]";
    let y = wf(
        "killcmd",
        &format!(
            "metadata:\n  annotations:\n    workflows.argoproj.io/kill-cmd-side-a: '[\"/bin/sh\", \"-c\", \"kill -USR1 1\"]'\n    workflows.argoproj.io/kill-cmd-side-b: '[\"/bin/sh\", \"-c\", \"kill -$((%d - 5)) 1\"]'\nsidecars:\n  - {{name: side-a, image: busybox, command: {side}}}\n  - {{name: side-b, image: busybox, command: {side}}}\ncontainer: {{image: busybox, command: [sh, -c], args: ['echo done']}}"
        ),
    );
    let malformed = wf(
        "killcmd-bad",
        &format!(
            "metadata:\n  annotations:\n    workflows.argoproj.io/kill-cmd-side-a: 'kill -USR1 1'\nsidecars:\n  - {{name: side-a, image: busybox, command: {side}}}\ncontainer: {{image: busybox, command: [sh, -c], args: ['echo done']}}"
        ),
    );
    if !docker_available() {
        return;
    }
    for ex in only(&KUBE_EXECUTORS) {
        let r = run_yaml(&y, ex, &[]);
        assert_eq!(r.phase(), "Succeeded", "{ex}: {}", r.dump());
        assert_eq!(
            (r.exit_of("side-a"), r.exit_of("side-b")),
            (Some(0), Some(0)),
            "{ex}: {}",
            r.dump()
        );
        assert_eq!(r.result(), Some("done"), "{ex}: {}", r.dump());
        let r = run_yaml(&malformed, ex, &[]);
        assert_eq!(r.phase(), "Error", "{ex}: {}", r.dump());
        assert!(
            r.message()
                .contains("annotation workflows.argoproj.io/kill-cmd-side-a")
                && r.message().contains("not a JSON array"),
            "{ex}: {}",
            r.dump()
        );
    }
}
