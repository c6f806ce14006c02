//! Resource templates end to end: `argoexec run` builds the pod a controller would
//! (`argoexec resource <action>` in main), binds the least role the manifest needs, and the
//! step acts on the local node's API from inside its pod. The custom-resource tests play the
//! operator with kubectl (1.33) against the run's node while the step waits on a watch.

mod run_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use argoexec_core::ArgoVersion;
use run_support::{StartedRun, docker_available, example, run_file, run_yaml, start_run, wf};

/// kubectl 1.33, installed beside the `kubectl` on PATH.
fn kubectl() -> PathBuf {
    let on_path = Command::new("sh")
        .args(["-c", "readlink -f \"$(command -v kubectl)\""])
        .output()
        .unwrap();
    let p = PathBuf::from(String::from_utf8_lossy(&on_path.stdout).trim());
    p.with_file_name("kubectl.1.33")
}

fn kc(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(kubectl())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn configmap_example_outputs_a_json_path_and_a_jq_value_in_every_version() {
    if !docker_available() {
        return;
    }
    for v in ArgoVersion::ALL {
        let r = run_file(
            &example("resource-configmap.yaml"),
            "emissary",
            &["--argo-version", v.as_str()],
            None,
        );
        assert_eq!((r.code, r.phase()), (0, "Succeeded"), "{v}: {}", r.dump());
        assert_eq!(r.param("greeting").as_deref(), Some("hello"), "{v}: {}", r.dump());
        assert_eq!(
            r.param("summary").as_deref(),
            Some("hello, world"),
            "{v}: {}",
            r.dump()
        );
    }
}

/// Start the custom-resource example with its CRD and a kubeconfig for its node; returns
/// once the Widget exists (kubectl's `wait --for=create`, a watch).
fn start_widget(dir: &tempfile::TempDir) -> (StartedRun, PathBuf) {
    let kubeconfig = dir.path().join("kubeconfig");
    let crd = example("resource/widget-crd.yaml");
    let run = start_run(
        &example("resource/custom-resource.yaml"),
        "emissary",
        &[
            "--create",
            crd.to_str().unwrap(),
            "--kubeconfig-out",
            kubeconfig.to_str().unwrap(),
        ],
        None,
        &[],
    );
    // The file appears when the node is up, before the pod; poll for its existence only.
    assert!(
        run_support_eventually(Duration::from_secs(60), || kubeconfig.exists()),
        "the run wrote no kubeconfig"
    );
    let (ok, out) = kc(
        &kubeconfig,
        &["wait", "--for=create", "widget/gizmo", "--timeout=90s"],
    );
    assert!(ok, "the step never created the Widget: {out}");
    (run, kubeconfig)
}

fn run_support_eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_custom_resource_step_waits_for_its_status_condition() {
    if !docker_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (run, kubeconfig) = start_widget(&dir);
    let (ok, owner) = kc(
        &kubeconfig,
        &[
            "get",
            "widget",
            "gizmo",
            "-o",
            "jsonpath={.metadata.ownerReferences[0].kind}",
        ],
    );
    assert!(ok && owner == "Workflow", "setOwnerReference: {owner}");
    let (ok, out) = kc(
        &kubeconfig,
        &[
            "patch",
            "widget",
            "gizmo",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Ready","size":3}}"#,
        ],
    );
    assert!(ok, "{out}");
    let r = run.finish(Duration::from_secs(120));
    assert_eq!((r.code, r.phase()), (0, "Succeeded"), "{}", r.dump());
    assert_eq!(r.param("size").as_deref(), Some("3"), "{}", r.dump());
    assert_eq!(r.param("color").as_deref(), Some("blue"), "{}", r.dump());
}

#[test]
fn a_failure_condition_fails_the_step_and_a_deleted_object_ends_it() {
    if !docker_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (run, kubeconfig) = start_widget(&dir);
    let (ok, out) = kc(
        &kubeconfig,
        &[
            "patch",
            "widget",
            "gizmo",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Failed"}}"#,
        ],
    );
    assert!(ok, "{out}");
    let r = run.finish(Duration::from_secs(120));
    assert_ne!(r.phase(), "Succeeded", "{}", r.dump());
    assert!(
        r.message().contains("failure condition") && r.message().contains("status.phase"),
        "{}",
        r.dump()
    );

    let dir = tempfile::tempdir().unwrap();
    let (run, kubeconfig) = start_widget(&dir);
    let (ok, out) = kc(&kubeconfig, &["delete", "widget", "gizmo"]);
    assert!(ok, "{out}");
    let r = run.finish(Duration::from_secs(120));
    assert_ne!(r.phase(), "Succeeded", "{}", r.dump());
    assert!(r.message().contains("deleted"), "{}", r.dump());
}

#[test]
fn an_unknown_kind_is_refused_before_any_pod() {
    if !docker_available() {
        return;
    }
    let tpl = "resource:\n  action: create\n  manifest: |\n    apiVersion: example.com/v9\n    kind: Gadget\n    metadata: {name: g}\n";
    let r = run_yaml(&wf("unknown-kind", tpl), "emissary", &[]);
    assert_eq!(r.code, 2, "{}", r.dump());
    for part in ["Gadget", "example.com", "v9"] {
        assert!(r.message().contains(part), "{part}: {}", r.dump());
    }
}

#[test]
fn a_missing_rbac_rule_fails_the_step_naming_verb_and_resource() {
    if !docker_available() {
        return;
    }
    // Only the executor's own role: no rule on configmaps.
    let rbac = tempfile::tempdir().unwrap();
    // The kit's file, placed in the workflow's namespace as `kubectl -n default apply` would.
    let kit = include_str!("../../../deploy/rbac/executor.yaml").replace(
        "  name: argoexec-executor\n",
        "  name: argoexec-executor\n  namespace: default\n",
    );
    std::fs::write(rbac.path().join("executor.yaml"), kit).unwrap();
    let r = run_file(
        &example("resource-configmap.yaml"),
        "emissary",
        &["--rbac", rbac.path().to_str().unwrap()],
        None,
    );
    assert_ne!(r.phase(), "Succeeded", "{}", r.dump());
    assert!(
        r.message().contains("cannot create resource \"configmaps\""),
        "{}",
        r.dump()
    );
}
