//! Pod-builder checks per executor against argo-executors.md §5.2.

use argoexec_core::{ExecutorKind, Template};
use argoexec_podbuilder::*;
use k8s_openapi::api::core::v1::{Container, Pod};

const TPL: &str = r#"{"name": "step",
  "inputs": {"artifacts": [{"name": "in", "path": "/in/file", "raw": {"data": "x"}},
                           {"name": "onvol", "path": "/work/in", "raw": {"data": "y"}}]},
  "script": {"image": "busybox", "command": ["sh"], "source": "echo hi",
             "volumeMounts": [{"name": "work", "mountPath": "/work"}]},
  "volumes": [{"name": "work", "emptyDir": {}}],
  "sidecars": [{"name": "side", "image": "nginx"}],
  "activeDeadlineSeconds": 30}"#;

fn build(executor: ExecutorKind, cm: &str) -> Result<Pod, BuildError> {
    let (config, _) = ControllerConfig::from_configmap_yaml(cm).unwrap();
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        uid: "u-1".into(),
        ..Default::default()
    };
    build_pod(
        &wf,
        &Template::from_json(TPL).unwrap(),
        "wf-123",
        &config,
        executor,
        &BuildOptions::default(),
    )
}

const IMAGES: &str =
    "kind: ConfigMap\ndata:\n  images: |\n    nginx: {command: [nginx], args: [-g, daemon off;]}\n";

fn ctr<'a>(p: &'a Pod, name: &str) -> &'a Container {
    p.spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .find(|c| c.name == name)
        .unwrap()
}

fn mounts(c: &Container) -> Vec<(String, String)> {
    c.volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.clone(), m.mount_path.clone()))
        .collect()
}

fn env<'a>(c: &'a Container, name: &str) -> Option<&'a k8s_openapi::api::core::v1::EnvVar> {
    c.env.iter().flatten().find(|e| e.name == name)
}

#[test]
fn layout_common_to_every_executor() {
    for k in ExecutorKind::ALL {
        let p = build(k, IMAGES).unwrap();
        let spec = p.spec.as_ref().unwrap();
        let names: Vec<_> = spec.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["wait", "main", "side"], "{k}");
        assert_eq!(spec.init_containers.as_ref().unwrap()[0].name, "init");
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.active_deadline_seconds, Some(30));
        let vols: Vec<_> = spec.volumes.iter().flatten().map(|v| v.name.as_str()).collect();
        assert!(
            vols.contains(&"var-run-argo") && vols.contains(&"input-artifacts") && vols.contains(&"work"),
            "{k}: {vols:?}"
        );
        assert_eq!(
            vols.contains(&"docker-sock"),
            k == ExecutorKind::Docker,
            "{k}: docker.sock only for docker"
        );
        let wait = ctr(&p, "wait");
        assert!(
            mounts(wait).contains(&("work".into(), "/mainctrfs/work".into())),
            "{k}"
        );
        let main = ctr(&p, "main");
        assert!(
            mounts(main).contains(&("input-artifacts".into(), "/in/file".into())),
            "{k}: subPath mount"
        );
        assert!(
            !mounts(main).iter().any(|m| m.1 == "/work/in"),
            "{k}: an input on a volume gets no subPath mount"
        );
        assert_eq!(
            main.args.as_ref().unwrap().last().unwrap(),
            "/argo/staging/script"
        );
        assert_eq!(
            env(wait, "ARGO_CONTAINER_RUNTIME_EXECUTOR")
                .unwrap()
                .value
                .as_deref(),
            Some(k.as_str())
        );
        assert_eq!(
            env(main, "ARGO_CONTAINER_NAME").unwrap().value.as_deref(),
            Some("main")
        );
        let labels = p.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["workflows.argoproj.io/workflow"], "wf");
        assert_eq!(p.metadata.owner_references.as_ref().unwrap()[0].kind, "Workflow");
    }
}

#[test]
fn emissary_wraps_commands_and_looks_up_images() {
    let p = build(ExecutorKind::Emissary, IMAGES).unwrap();
    let main = ctr(&p, "main");
    assert_eq!(
        main.command.as_ref().unwrap(),
        &[
            "/var/run/argo/argoexec",
            "emissary",
            "--loglevel",
            "info",
            "--",
            "sh"
        ]
    );
    let side = ctr(&p, "side");
    assert_eq!(side.command.as_ref().unwrap().last().unwrap(), "nginx");
    assert_eq!(side.args.as_ref().unwrap(), &["-g", "daemon off;"]);
    assert!(
        ctr(&p, "wait").command.as_ref().unwrap() == &["argoexec"],
        "wait is never wrapped"
    );
    let e = build(ExecutorKind::Emissary, "kind: ConfigMap\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"side\"") && e.contains("nginx") && e.contains("images"),
        "{e}"
    );
}

#[test]
fn pns_kubelet_deltas() {
    let p = build(ExecutorKind::Pns, IMAGES).unwrap();
    assert_eq!(p.spec.as_ref().unwrap().share_process_namespace, Some(true));
    let caps = ctr(&p, "wait")
        .security_context
        .as_ref()
        .unwrap()
        .capabilities
        .as_ref()
        .unwrap()
        .add
        .clone()
        .unwrap();
    assert_eq!(caps, ["SYS_PTRACE"]);
    assert_eq!(
        ctr(&p, "main").command.as_ref().unwrap(),
        &["sh"],
        "only emissary rewrites commands"
    );
    let k = build(
        ExecutorKind::Kubelet,
        "kind: ConfigMap\ndata:\n  kubeletPort: \"10255\"\n",
    )
    .unwrap();
    let wait = ctr(&k, "wait");
    let host = env(wait, "ARGO_KUBELET_HOST").unwrap();
    assert_eq!(
        host.value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "status.hostIP"
    );
    assert_eq!(
        env(wait, "ARGO_KUBELET_PORT").unwrap().value.as_deref(),
        Some("10255")
    );
    assert!(
        env(ctr(&k, "main"), "ARGO_KUBELET_HOST").is_none(),
        "kubelet env only on executor containers"
    );
    let d = build(ExecutorKind::Docker, IMAGES).unwrap();
    let sock = ctr(&d, "wait")
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "docker-sock")
        .unwrap();
    assert_eq!(
        (sock.mount_path.as_str(), sock.read_only),
        ("/var/run/docker.sock", Some(true))
    );
    assert!(!mounts(ctr(&d, "main")).iter().any(|m| m.0 == "docker-sock"));
}

#[test]
fn container_names_like_paths_are_refused() {
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        ..Default::default()
    };
    let try_build = |tpl: &str, executor: ExecutorKind| {
        build_pod(
            &wf,
            &Template::from_json(tpl).unwrap(),
            "wf-1",
            &ControllerConfig::default(),
            executor,
            &BuildOptions::default(),
        )
    };
    for (tpl, executor, needle) in [
        (
            r#"{"containerSet": {"containers": [{"name": "a/b", "image": "x", "command": ["true"]}]}}"#,
            ExecutorKind::Emissary,
            r#""a/b" (containerSet.containers[0].name)"#,
        ),
        (
            r#"{"container": {"image": "x", "command": ["true"]}, "sidecars": [{"name": "../x", "image": "x", "command": ["true"]}]}"#,
            ExecutorKind::Docker,
            r#""../x" (sidecars[0].name)"#,
        ),
        (
            r#"{"container": {"image": "x", "command": ["true"]}, "sidecars": [{"name": ".", "image": "x", "command": ["true"]}]}"#,
            ExecutorKind::Pns,
            r#""." (sidecars[0].name)"#,
        ),
    ] {
        let e = try_build(tpl, executor).unwrap_err();
        assert!(matches!(e, BuildError::BadName(_)), "{e}");
        let e = e.to_string();
        assert!(e.contains(needle) && e.contains("RFC 1123"), "{e}");
    }
    // A plain container's own `name` is ignored (it always runs as `main`), as in Argo.
    assert!(
        try_build(
            r#"{"container": {"name": "Whatever/Name", "image": "x", "command": ["true"]}}"#,
            ExecutorKind::Emissary
        )
        .is_ok()
    );
}

#[test]
fn large_templates_leave_the_environment_for_a_config_map() {
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        uid: "u-1".into(),
        ..Default::default()
    };
    let script = |bytes: usize| {
        Template::from_json(&format!(
            r#"{{"name": "big", "script": {{"image": "busybox", "command": ["sh"], "source": "{}"}}}}"#,
            "#".repeat(bytes)
        ))
        .unwrap()
    };
    let build = |t: &Template| {
        build_pod(
            &wf,
            t,
            "wf-1",
            &ControllerConfig::default(),
            ExecutorKind::Emissary,
            &BuildOptions::default(),
        )
        .unwrap()
    };
    let all = |p: &Pod| -> Vec<Container> {
        let s = p.spec.as_ref().unwrap();
        s.init_containers
            .iter()
            .flatten()
            .chain(&s.containers)
            .cloned()
            .collect()
    };
    // At the threshold: ARGO_TEMPLATE everywhere (Argo compatibility), no ConfigMap.
    let small = script(1000);
    let p = build(&small);
    assert!(all(&p).iter().all(|c| env(c, "ARGO_TEMPLATE").is_some()));
    assert!(template_config_map(&wf, &small, "wf-1").unwrap().is_none());
    let mut edge = script(0);
    let pad = argoexec_podbuilder::offload::TEMPLATE_ENV_MAX - edge.to_json().len();
    edge = script(pad);
    assert_eq!(
        edge.to_json().len(),
        argoexec_podbuilder::offload::TEMPLATE_ENV_MAX
    );
    assert!(env(&all(&build(&edge))[0], "ARGO_TEMPLATE").is_some());
    // One byte more: no container has it; init mounts the ConfigMap read-only.
    let big = script(pad + 1);
    let p = build(&big);
    for c in all(&p) {
        assert!(
            env(&c, "ARGO_TEMPLATE").is_none(),
            "{} still has ARGO_TEMPLATE",
            c.name
        );
    }
    let init = &p.spec.as_ref().unwrap().init_containers.as_ref().unwrap()[0];
    let m = init
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "argo-template")
        .expect("init mounts the template");
    assert_eq!(
        (m.mount_path.as_str(), m.read_only),
        ("/argo/template", Some(true))
    );
    assert!(
        all(&p)
            .iter()
            .skip(1)
            .all(|c| !mounts(c).iter().any(|m| m.0 == "argo-template")),
        "only init mounts it"
    );
    let vol = p
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "argo-template")
        .unwrap();
    assert_eq!(vol.config_map.as_ref().unwrap().name, "wf-1-template");
    let cm = template_config_map(&wf, &big, "wf-1").unwrap().unwrap();
    assert_eq!(cm.metadata.name.as_deref(), Some("wf-1-template"));
    assert_eq!(cm.metadata.namespace.as_deref(), Some("argo"));
    assert_eq!(cm.data.as_ref().unwrap()["template"], big.to_json());
    // Beyond what a ConfigMap holds: a clear error, no pod.
    let huge = script(1024 * 1024);
    let e = build_pod(
        &wf,
        &huge,
        "wf-1",
        &ControllerConfig::default(),
        ExecutorKind::Emissary,
        &BuildOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("above the 1048576 bytes a ConfigMap can hold"), "{e}");
}

#[test]
fn template_metadata_reaches_the_pod() {
    let wf = WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        ..Default::default()
    };
    let t = Template::from_json(
        r#"{"container": {"image": "x", "command": ["true"]},
            "metadata": {"annotations": {"workflows.argoproj.io/kill-cmd-side": "[\"/bin/stop\"]",
                                         "workflows.argoproj.io/node-id": "not-yours"},
                         "labels": {"team": "a"}}}"#,
    )
    .unwrap();
    let p = build_pod(
        &wf,
        &t,
        "wf-1",
        &ControllerConfig::default(),
        ExecutorKind::K8sApi,
        &BuildOptions::default(),
    )
    .unwrap();
    let ann = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann["workflows.argoproj.io/kill-cmd-side"], "[\"/bin/stop\"]");
    assert_eq!(
        ann["workflows.argoproj.io/node-id"], "wf-1",
        "the controller's keys win"
    );
    assert_eq!(p.metadata.labels.as_ref().unwrap()["team"], "a");
}
