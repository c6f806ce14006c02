//! `nativeSidecar` (argoexec-rs): the auxiliary container as a sidecar container.

use argoexec_core::{ArgoVersion, ExecutorKind, Template};
use argoexec_podbuilder::*;

const TPL: &str = r#"{"name": "s", "container": {"image": "busybox", "command": ["true"]},
  "outputs": {"artifacts": [{"name": "o", "path": "/tmp/o"}]}}"#;

fn build(cm: &str, executor: ExecutorKind, version: ArgoVersion) -> k8s_openapi::api::core::v1::PodSpec {
    let (config, _) = ControllerConfig::from_configmap_yaml(cm).unwrap();
    let opts = BuildOptions {
        argo_version: version,
        ..Default::default()
    };
    let t = Template::from_json(TPL).unwrap();
    build_pod(&WorkflowMeta::default(), &t, "n", &config, executor, &opts)
        .unwrap()
        .pod
        .spec
        .unwrap()
}

const ON: &str = "kind: ConfigMap\ndata:\n  nativeSidecar: |\n    enabled: true\n";

#[test]
fn wait_becomes_the_last_init_container_restarting_always() {
    let spec = build(ON, ExecutorKind::Emissary, ArgoVersion::V4_1);
    let inits = spec.init_containers.as_ref().unwrap();
    assert_eq!(
        inits.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["init", "wait"]
    );
    let wait = &inits[1];
    assert_eq!(wait.restart_policy.as_deref(), Some("Always"));
    let native = wait
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "ARGOEXEC_NATIVE_SIDECAR");
    assert_eq!(native.and_then(|e| e.value.as_deref()), Some("true"));
    // Finished like the others first: its /tmp and /var/run/argo mounts are there.
    let paths: Vec<&str> = wait
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect();
    assert!(
        paths.contains(&"/tmp") && paths.contains(&"/var/run/argo"),
        "{paths:?}"
    );
    assert_eq!(
        spec.containers
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["main"]
    );
    // In the init-less layout it is the supervisor.
    let initless = format!("{ON}  initlessPod: |\n    enabled: true\n");
    let spec = build(&initless, ExecutorKind::Emissary, ArgoVersion::V4_1);
    let inits = spec.init_containers.unwrap();
    assert_eq!(
        inits.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["supervisor"]
    );
}

#[test]
fn off_by_default_and_for_other_executors() {
    let spec = build(
        "kind: ConfigMap\ndata: {}\n",
        ExecutorKind::Emissary,
        ArgoVersion::V4_1,
    );
    assert!(spec.containers.iter().any(|c| c.name == "wait"));
    let spec = build(ON, ExecutorKind::Pns, ArgoVersion::V3_3);
    assert!(spec.containers.iter().any(|c| c.name == "wait"));
    let bad = "kind: ConfigMap\ndata:\n  nativeSidecar: |\n    enabled: maybe\n";
    assert!(ControllerConfig::from_configmap_yaml(bad).is_err());
}
