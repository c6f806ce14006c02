//! Data-template pods (`argoexec data` in main) and their validation, per Argo version
//! (argo-2026-contract.md §1.3).

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
        include_script_output: false,
        ..Default::default()
    };
    let t = Template::from_json(tpl).unwrap();
    build_pod(&wf, &t, "wf-1", &config, ExecutorKind::Emissary, &opts).map(|b| b.pod)
}

const DATA: &str = r#"{"name": "d", "data": {
  "source": {"artifactPaths": {"name": "in", "s3": {"bucket": "b", "endpoint": "s3:9000", "key": "logs",
    "accessKeySecret": {"name": "creds", "key": "ak"}, "secretKeySecret": {"name": "creds", "key": "sk"}}}},
  "transformation": [{"expression": "filter(data, {# endsWith \"main.log\"})"}]}}"#;

#[test]
fn main_runs_the_data_subcommand_without_wait_with_the_sources_credentials() {
    for v in ArgoVersion::ALL {
        let p = build(DATA, v).unwrap();
        let spec = p.spec.as_ref().unwrap();
        let names: Vec<_> = spec.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["main"], "{v}: data pods have no wait");
        let main = &spec.containers[0];
        let cmd = main.command.as_ref().unwrap();
        assert_eq!(cmd[0], "/var/run/argo/argoexec", "{v}: wrapped by the emissary");
        let at = cmd.iter().position(|c| c == "argoexec").unwrap();
        assert_eq!(cmd[at + 1], "data", "{v}");
        let arg: serde_json::Value = serde_json::from_str(&cmd[at + 2]).unwrap();
        assert_eq!(arg["source"]["artifactPaths"]["s3"]["key"], "logs", "{v}");
        assert!(
            cmd[at + 3..].iter().any(|c| c == "--loglevel"),
            "{v}: log options follow"
        );
        let env = main.env.as_ref().unwrap();
        let include = env
            .iter()
            .find(|e| e.name == "ARGO_INCLUDE_SCRIPT_OUTPUT")
            .unwrap();
        assert_eq!(include.value.as_deref(), Some("true"), "{v}");
        assert!(
            main.security_context.is_none(),
            "{v}: data pods are not locked down"
        );
        let mounts = main.volume_mounts.as_ref().unwrap();
        assert!(
            mounts.iter().any(|m| m.mount_path == "/argo/secret/creds"),
            "{v}: main lists with its own credentials: {mounts:?}"
        );
        let vols = spec.volumes.as_ref().unwrap();
        assert!(
            vols.iter()
                .any(|v| v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) == Some("creds"))
        );
    }
}

#[test]
fn a_data_template_without_a_source_is_refused_before_any_pod() {
    let e = build(
        r#"{"name": "d", "data": {"transformation": []}}"#,
        ArgoVersion::V4_1,
    )
    .unwrap_err();
    assert!(matches!(e, BuildError::BadData { .. }), "{e:?}");
    assert!(e.to_string().contains("artifactPaths is required"), "{e}");
    let e = build(
        r#"{"name": "d", "data": {"source": {"artifactPaths": {"name": "x"}}}}"#,
        ArgoVersion::V4_1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("names no location"), "{e}");
}
