//! The init-less pod layout (Argo v4.1 `initlessPod.enabled`; AW@v4.1.2
//! `workflow/controller/workflowpod_layout.go`, `newSupervisorContainer`).

use argoexec_core::{ArgoVersion, ExecutorKind, Template};
use argoexec_podbuilder::*;
use k8s_openapi::api::core::v1::{Container, Pod};

const TPL: &str = r#"{"name": "step",
  "inputs": {"artifacts": [{"name": "in", "path": "/in/file", "raw": {"data": "x"}},
                           {"name": "onvol", "path": "/work/in", "raw": {"data": "y"}}]},
  "script": {"image": "busybox", "command": ["sh"], "source": "echo hi",
             "volumeMounts": [{"name": "work", "mountPath": "/work"}]},
  "volumes": [{"name": "work", "emptyDir": {}}],
  "sidecars": [{"name": "side", "image": "nginx", "command": ["nginx"]}]}"#;

const INITLESS: &str = "kind: ConfigMap\ndata:\n  initlessPod: |\n    enabled: true\n  executor: |\n    imagePullPolicy: Never\n";

fn build(tpl: &str, cm: &str, version: ArgoVersion) -> Result<Pod, BuildError> {
    let (config, _) = ControllerConfig::from_configmap_yaml(cm).unwrap();
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        uid: "u-1".into(),
        ..Default::default()
    };
    let opts = BuildOptions {
        argo_version: version,
        executor_image: "argoexec-rs:test".into(),
        ..Default::default()
    };
    build_pod(
        &wf,
        &Template::from_json(tpl).unwrap(),
        "wf-123",
        &config,
        ExecutorKind::Emissary,
        &opts,
    )
    .map(|b| b.pod)
}

fn ctr<'a>(p: &'a Pod, name: &str) -> &'a Container {
    p.spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

fn env<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
    c.env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)
        .map(|e| e.value.as_deref().unwrap_or(""))
}

fn mounts(c: &Container) -> Vec<(String, String, Option<String>, bool)> {
    c.volume_mounts
        .iter()
        .flatten()
        .map(|m| {
            (
                m.name.clone(),
                m.mount_path.clone(),
                m.sub_path.clone(),
                m.read_only.unwrap_or(false),
            )
        })
        .collect()
}

fn has_mount(c: &Container, name: &str, path: &str) -> bool {
    mounts(c).iter().any(|(n, p, _, _)| n == name && p == path)
}

#[test]
fn a_script_with_inputs_and_a_sidecar() {
    let p = build(TPL, INITLESS, ArgoVersion::V4_1).unwrap();
    let spec = p.spec.as_ref().unwrap();
    assert!(spec.init_containers.is_none(), "no init container");
    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["supervisor", "main", "side"]);
    let bin = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "argoexec-bin")
        .expect("the image volume");
    let image = bin.image.as_ref().unwrap();
    assert_eq!(image.reference.as_deref(), Some("argoexec-rs:test"));
    assert_eq!(image.pull_policy.as_deref(), Some("Never"));

    let sup = ctr(&p, "supervisor");
    assert_eq!(sup.command.as_ref().unwrap()[..2], ["argoexec", "supervisor"]);
    assert_eq!(env(sup, "ARGO_INITLESS_POD"), Some("true"));
    assert!(env(sup, "ARGO_TEMPLATE").is_some_and(|t| t.contains("\"echo hi\"")));
    assert!(env(sup, "ARGO_WAIT_FOR_READY").is_none());
    for (name, path) in [
        ("input-artifacts", "/argo/inputs/artifacts"),
        ("work", "/mainctrfs/work"),
        ("argo-staging", "/argo/staging"),
        ("var-run-argo", "/var/run/argo"),
    ] {
        assert!(
            has_mount(sup, name, path),
            "supervisor mounts {name} at {path}: {:?}",
            mounts(sup)
        );
    }
    assert!(!has_mount(sup, "argoexec-bin", "/argo-bin"));

    let main = ctr(&p, "main");
    assert_eq!(
        main.command.as_ref().unwrap()[..2],
        ["/argo-bin/bin/argoexec", "emissary"]
    );
    assert_eq!(env(main, "ARGO_WAIT_FOR_READY"), Some("true"));
    assert!(env(main, "ARGO_TEMPLATE").is_none());
    let m = mounts(main);
    let inputs: Vec<_> = m.iter().filter(|x| x.0 == "input-artifacts").collect();
    assert_eq!(
        inputs,
        [&(
            "input-artifacts".into(),
            "/argo/inputs/artifacts".into(),
            None,
            false
        )],
        "one whole-volume mount, no subPath per artifact"
    );
    assert!(m.contains(&("argoexec-bin".into(), "/argo-bin".into(), None, true)));

    let side = ctr(&p, "side");
    assert_eq!(side.command.as_ref().unwrap()[0], "/argo-bin/bin/argoexec");
    assert_eq!(env(side, "ARGO_WAIT_FOR_READY"), Some("true"));
    assert!(has_mount(side, "argoexec-bin", "/argo-bin"));
    assert!(!has_mount(side, "input-artifacts", "/argo/inputs/artifacts"));
}

#[test]
fn only_v4_1_knows_the_switch() {
    for v in [ArgoVersion::V3_7, ArgoVersion::V4_0] {
        let p = build(TPL, INITLESS, v).unwrap();
        let spec = p.spec.as_ref().unwrap();
        assert!(spec.init_containers.is_some(), "{v}: legacy layout");
        assert!(spec.containers.iter().any(|c| c.name == "wait"));
        assert!(!spec.volumes.iter().flatten().any(|v| v.name == "argoexec-bin"));
    }
    let p = build(TPL, "kind: ConfigMap\ndata: {}\n", ArgoVersion::V4_1).unwrap();
    assert!(
        p.spec.as_ref().unwrap().init_containers.is_some(),
        "off by default"
    );
}

#[test]
fn an_artifact_path_around_a_volume_is_refused() {
    let tpl = r#"{"name": "step",
      "inputs": {"artifacts": [{"name": "a", "path": "/work", "raw": {"data": "x"}}]},
      "container": {"image": "busybox", "command": ["true"],
                    "volumeMounts": [{"name": "v", "mountPath": "/work/cache"}]},
      "volumes": [{"name": "v", "emptyDir": {}}]}"#;
    let e = build(tpl, INITLESS, ArgoVersion::V4_1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "input artifact \"a\" path \"/work\" is an ancestor of volume mount \"v\" (/work/cache); this is not supported \
         in init-less pod mode because staging the artifact would clear the mounted volume"
    );
    assert!(build(tpl, "kind: ConfigMap\ndata: {}\n", ArgoVersion::V4_1).is_ok());
}

#[test]
fn a_data_template_has_no_supervisor_and_main_gets_the_template() {
    let tpl = r#"{"name": "d", "data": {"source": {"artifactPaths": {"name": "p", "s3": {"bucket": "b", "key": "k"}}},
      "transformation": [{"expression": "filter(data, {# endsWith 'x'})"}]}}"#;
    let p = build(tpl, INITLESS, ArgoVersion::V4_1).unwrap();
    let names: Vec<&str> = p
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["main"]);
    let main = ctr(&p, "main");
    assert!(env(main, "ARGO_TEMPLATE").is_some());
    assert!(env(main, "ARGO_WAIT_FOR_READY").is_none());
    assert_eq!(main.command.as_ref().unwrap()[0], "/argo-bin/bin/argoexec");
}

#[test]
fn the_config_key_is_checked() {
    let bad = "kind: ConfigMap\ndata:\n  initlessPod: |\n    enabled: maybe\n";
    let e = ControllerConfig::from_configmap_yaml(bad).unwrap_err();
    assert!(e.to_string().contains("initlessPod.enabled"), "{e}");
}

#[test]
fn the_name_supervisor_is_reserved_only_in_the_init_less_layout() {
    let tpl = r#"{"name": "step", "container": {"image": "busybox", "command": ["true"]},
      "sidecars": [{"name": "supervisor", "image": "busybox", "command": ["sleep", "60"]}]}"#;
    let e = build(tpl, INITLESS, ArgoVersion::V4_1).unwrap_err();
    assert!(e.to_string().contains("supervisor"), "{e}");
    // The legacy layout keeps it a user sidecar: wrapped by the emissary like any other.
    let p = build(tpl, "kind: ConfigMap\ndata: {}\n", ArgoVersion::V4_1).unwrap();
    let side = ctr(&p, "supervisor");
    assert_eq!(
        side.command.as_ref().unwrap()[..2],
        ["/var/run/argo/argoexec", "emissary"]
    );
    assert!(env(side, "ARGO_CONTAINER_NAME").is_some());
}
