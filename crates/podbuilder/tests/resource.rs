//! Resource-template pods (`argoexec resource` in main) and their validation, per Argo
//! version (argo-2026-contract.md §1.2). The full pods are in `golden/resource.*`.

use argoexec_core::{ArgoVersion, ExecutorKind, Template};
use argoexec_podbuilder::*;
use k8s_openapi::api::core::v1::Pod;

fn build(tpl: &str, version: ArgoVersion) -> Result<Pod, BuildError> {
    let (config, _) = ControllerConfig::from_configmap_yaml("kind: ConfigMap\n").unwrap();
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        uid: "u-1".into(),
        ..Default::default()
    };
    let opts = BuildOptions {
        argo_version: version,
        ..Default::default()
    };
    let t = Template::from_json(tpl).unwrap();
    build_pod(&wf, &t, "wf-1", &config, ExecutorKind::Emissary, &opts).map(|b| b.pod)
}

fn names(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

const CREATE: &str = r#"{"name": "r", "resource": {"action": "create",
  "manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}}"#;

#[test]
fn main_runs_the_resource_subcommand_under_the_emissary() {
    for v in ArgoVersion::ALL {
        let p = build(CREATE, v).unwrap();
        assert_eq!(names(&p), ["main"], "{v}: no wait unless logs are archived");
        let main = &p.spec.as_ref().unwrap().containers[0];
        let cmd = main.command.as_ref().unwrap();
        let at = cmd.iter().position(|c| c == "argoexec").unwrap();
        assert_eq!(&cmd[at..at + 3], ["argoexec", "resource", "create"], "{v}");
        assert_eq!(cmd[0], "/var/run/argo/argoexec", "{v}");
        let include = main
            .env
            .as_ref()
            .unwrap()
            .iter()
            .find(|e| e.name == "ARGO_INCLUDE_SCRIPT_OUTPUT");
        assert_eq!(include.unwrap().value.as_deref(), Some("false"), "{v}");
        let sc = main.security_context.as_ref();
        if v == ArgoVersion::V3_3 {
            assert!(sc.is_none(), "v3.3 has no lockdown");
        } else {
            let sc = sc.unwrap();
            assert_eq!(
                (sc.run_as_user, sc.read_only_root_filesystem),
                (Some(8737), Some(true)),
                "{v}"
            );
            let init = &p.spec.as_ref().unwrap().init_containers.as_ref().unwrap()[0];
            assert_eq!(
                init.security_context.as_ref().unwrap().read_only_root_filesystem,
                None,
                "{v}"
            );
        }
    }
}

#[test]
fn wait_archives_logs_from_3_7_only() {
    let tpl = r#"{"name": "r", "archiveLocation": {"archiveLogs": true}, "resource": {"action": "get",
      "manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}}"#;
    assert_eq!(names(&build(tpl, ArgoVersion::V3_5).unwrap()), ["main"]);
    for v in [ArgoVersion::V3_7, ArgoVersion::V4_0, ArgoVersion::V4_1] {
        assert_eq!(names(&build(tpl, v).unwrap()), ["wait", "main"], "{v}");
    }
}

#[test]
fn a_configured_security_context_is_kept() {
    let (config, _) = ControllerConfig::from_configmap_yaml(
        "kind: ConfigMap\ndata:\n  executor: |\n    securityContext: {runAsUser: 1000}\n",
    )
    .unwrap();
    let t = Template::from_json(CREATE).unwrap();
    let p = build_pod(
        &WorkflowMeta::default(),
        &t,
        "n",
        &config,
        ExecutorKind::Emissary,
        &BuildOptions::default(),
    )
    .unwrap()
    .pod;
    let sc = p.spec.unwrap().containers[0].security_context.clone().unwrap();
    assert_eq!((sc.run_as_user, sc.read_only_root_filesystem), (Some(1000), None));
}

#[test]
fn bad_resource_templates_are_refused_before_any_pod() {
    let cases = [
        (
            r#"{"action": "frobnicate", "manifest": "a: 1"}"#,
            "must be one of: get, create",
        ),
        (
            r#"{"action": "create"}"#,
            "either resource.manifest or resource.manifestFrom",
        ),
        (
            r#"{"action": "create", "manifest": "a: 1", "manifestFrom": {"artifact": {"name": "m"}}}"#,
            "both specified",
        ),
        (
            r#"{"action": "apply", "manifestFrom": {"artifact": {"name": "m"}}}"#,
            "not among the template's input artifacts",
        ),
        (
            r#"{"action": "create", "manifest": "a: [1"}"#,
            "must be valid YAML",
        ),
        (
            r#"{"action": "patch", "manifest": "a: 1", "mergeStrategy": "deep"}"#,
            "mergeStrategy \"deep\"",
        ),
        (
            r#"{"action": "delete", "manifest": "a: 1", "successCondition": "a == b"}"#,
            "not supported for the delete action",
        ),
    ];
    for (r, want) in cases {
        let tpl = format!(r#"{{"name": "bad", "resource": {r}}}"#);
        let e = build(&tpl, ArgoVersion::V4_1).unwrap_err().to_string();
        assert!(e.contains("template \"bad\"") && e.contains(want), "{r}: {e}");
    }
    let from_input = r#"{"name": "ok", "inputs": {"artifacts": [{"name": "m", "path": "/m.yaml", "raw": {"data": "a: 1"}}]},
      "resource": {"action": "apply", "manifestFrom": {"artifact": {"name": "m"}}}}"#;
    let p = build(from_input, ArgoVersion::V4_1).unwrap();
    let main = &p.spec.as_ref().unwrap().containers[0];
    assert!(
        main.volume_mounts
            .as_ref()
            .unwrap()
            .iter()
            .any(|m| m.mount_path == "/m.yaml"),
        "the manifest artifact is mounted in main"
    );
}
