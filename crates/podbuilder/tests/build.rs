//! Pod-builder checks per executor against argo-executors.md §5.2.

use argoexec_core::{ArgoVersion, ExecutorKind, Template};
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
    let v = if executor == ExecutorKind::Emissary {
        ArgoVersion::NEWEST
    } else {
        ArgoVersion::V3_3
    };
    build_v(executor, cm, v)
}

fn build_v(executor: ExecutorKind, cm: &str, version: ArgoVersion) -> Result<Pod, BuildError> {
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
        &BuildOptions {
            argo_version: version,
            ..Default::default()
        },
    )
    .map(|b| b.pod)
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
        let p = build_v(k, IMAGES, ArgoVersion::V3_3).unwrap();
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
            "--log-format",
            "text",
            "--gloglevel",
            "0",
            "--",
            "sh"
        ]
    );
    let v33 = build_v(ExecutorKind::Emissary, IMAGES, ArgoVersion::V3_3).unwrap();
    assert_eq!(
        ctr(&v33, "main").command.as_ref().unwrap(),
        &["/var/run/argo/argoexec", "emissary", "--", "sh"],
        "v3.3 passes no log options to the emissary"
    );
    let side = ctr(&p, "side");
    assert_eq!(side.command.as_ref().unwrap().last().unwrap(), "nginx");
    assert_eq!(side.args.as_ref().unwrap(), &["-g", "daemon off;"]);
    assert_eq!(
        ctr(&p, "wait").command.as_ref().unwrap()[..2],
        ["argoexec", "wait"],
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
            &BuildOptions {
                argo_version: ArgoVersion::V3_3,
                ..Default::default()
            },
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

fn all(p: &Pod) -> Vec<Container> {
    let s = p.spec.as_ref().unwrap();
    s.init_containers
        .iter()
        .flatten()
        .chain(&s.containers)
        .cloned()
        .collect()
}

fn script_of(bytes: usize) -> Template {
    Template::from_json(&format!(
        r#"{{"name": "big", "inputs": {{"parameters": [{{"name": "p", "value": "v"}}]}},
            "script": {{"image": "busybox", "command": ["sh"], "source": "{}"}}}}"#,
        "#".repeat(bytes)
    ))
    .unwrap()
}

fn wf_meta() -> WorkflowMeta {
    WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        uid: "u-1".into(),
        ..Default::default()
    }
}

fn build_tpl(t: &Template, version: ArgoVersion) -> Result<PodBuild, BuildError> {
    build_pod(
        &wf_meta(),
        t,
        "wf-1",
        &ControllerConfig::default(),
        ExecutorKind::Emissary,
        &BuildOptions {
            argo_version: version,
            ..Default::default()
        },
    )
}

/// v3.6+: `ARGO_TEMPLATE` (without `inputs.parameters`) on init only; above 131072 bytes the
/// literal `offloaded`, the JSON in the `<pod>` ConfigMap mounted at `/argo/config` in init.
#[test]
fn large_templates_are_offloaded_as_argo_3_6_does() {
    let edge_len = |t: &Template| {
        let mut t = t.clone();
        t.inputs.parameters.clear();
        t.to_json().len()
    };
    let pad = argoexec_core::argo_version::TEMPLATE_ENV_MAX - edge_len(&script_of(0));
    let edge = script_of(pad);
    assert_eq!(edge_len(&edge), argoexec_core::argo_version::TEMPLATE_ENV_MAX);
    let b = build_tpl(&edge, ArgoVersion::V4_1).unwrap();
    assert!(b.config_map.is_none());
    let init = &all(&b.pod)[0];
    let t = env(init, "ARGO_TEMPLATE").unwrap().value.clone().unwrap();
    assert!(!t.contains("\"parameters\""), "inputs.parameters are cleared");
    assert!(
        all(&b.pod)[1..].iter().all(|c| env(c, "ARGO_TEMPLATE").is_none()),
        "init only"
    );

    let big = script_of(pad + 1);
    let b = build_tpl(&big, ArgoVersion::V4_1).unwrap();
    let init = &all(&b.pod)[0];
    assert_eq!(
        env(init, "ARGO_TEMPLATE").unwrap().value.as_deref(),
        Some("offloaded")
    );
    assert!(mounts(init).contains(&("argo-env-config".into(), "/argo/config".into())));
    assert!(
        all(&b.pod)[1..]
            .iter()
            .all(|c| !mounts(c).iter().any(|m| m.0 == "argo-env-config"))
    );
    let cm = b.config_map.unwrap();
    assert_eq!(cm.metadata.name.as_deref(), Some("wf-1"), "named after the pod");
    assert_eq!(cm.data.as_ref().unwrap()["ARGO_TEMPLATE"].len(), edge_len(&big));
    let vol = b
        .pod
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "argo-env-config")
        .unwrap();
    let src = vol.config_map.as_ref().unwrap();
    assert_eq!((src.name.as_str(), src.items.is_none()), ("wf-1", true));

    // v3.5 keeps the full template on every container; argoexec-rs offloads what would fail
    // with E2BIG, and tells wait its version (it cannot infer it without ARGO_TEMPLATE).
    let b = build_tpl(&script_of(1000), ArgoVersion::V3_5).unwrap();
    assert!(all(&b.pod).iter().all(|c| env(c, "ARGO_TEMPLATE").is_some()));
    let b = build_tpl(&script_of(200_000), ArgoVersion::V3_5).unwrap();
    let wait = ctr(&b.pod, "wait");
    assert!(env(wait, "ARGO_TEMPLATE").is_none());
    assert_eq!(
        env(wait, "ARGOEXEC_ARGO_VERSION").unwrap().value.as_deref(),
        Some("3.5")
    );

    let e = build_tpl(&script_of(1024 * 1024), ArgoVersion::V4_1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("above the 1048576 bytes a ConfigMap can hold"), "{e}");
}

/// v3.7.10+/v4.0.1+/v4.1: args whose JSON is above 131072 bytes move to the ConfigMap.
#[test]
fn large_args_move_to_the_args_file() {
    let t = Template::from_json(&format!(
        r#"{{"container": {{"image": "busybox", "command": ["echo"], "args": ["small", "{}"]}}}}"#,
        "a".repeat(140 * 1024)
    ))
    .unwrap();
    for v in [ArgoVersion::V3_7, ArgoVersion::V4_0, ArgoVersion::V4_1] {
        let b = build_tpl(&t, v).unwrap();
        let main = ctr(&b.pod, "main");
        assert!(main.args.is_none(), "{v}");
        assert_eq!(
            env(main, "ARGO_CONTAINER_ARGS_FILE").unwrap().value.as_deref(),
            Some("/argo/config/ARGO_CONTAINER_ARGS_FILE")
        );
        assert!(mounts(main).contains(&("argo-env-config".into(), "/argo/config".into())));
        let cm = b.config_map.unwrap();
        let args: Vec<String> =
            serde_json::from_str(&cm.data.as_ref().unwrap()["ARGO_CONTAINER_ARGS_FILE"]).unwrap();
        assert_eq!((args.len(), args[0].as_str()), (2, "small"));
        // The template holds the args too, so it is offloaded beside them.
        assert!(cm.data.as_ref().unwrap().contains_key("ARGO_TEMPLATE"));
    }
    let b = build_tpl(&t, ArgoVersion::V3_5).unwrap();
    assert!(ctr(&b.pod, "main").args.is_some(), "v3.5 has no args file");
    assert!(
        !b.config_map
            .unwrap()
            .data
            .unwrap()
            .contains_key("ARGO_CONTAINER_ARGS_FILE")
    );
}

/// What each version puts in the environment (docs/compatibility.md).
#[test]
fn environment_per_version() {
    let t = Template::from_json(r#"{"container": {"image": "busybox", "command": ["true"]}}"#).unwrap();
    let has = |c: &Container, n: &str| env(c, n).is_some();
    for v in ArgoVersion::ALL {
        let p = build_tpl(&t, v).unwrap().pod;
        let (wait, main) = (ctr(&p, "wait"), ctr(&p, "main"));
        assert_eq!(has(wait, "ARGO_TEMPLATE"), v <= ArgoVersion::V3_5, "{v}");
        assert_eq!(has(main, "ARGO_TEMPLATE"), v <= ArgoVersion::V3_5, "{v}");
        assert_eq!(has(wait, "GODEBUG"), v <= ArgoVersion::V3_5, "{v}");
        assert_eq!(has(wait, "ARGO_WORKFLOW_UID"), v >= ArgoVersion::V3_5, "{v}");
        assert_eq!(has(main, "ARGO_WORKFLOW_NAME"), v >= ArgoVersion::V4_1, "{v}");
        assert_eq!(
            has(wait, "ARGO_ARTIFACT_PLUGIN_NAMES"),
            v >= ArgoVersion::V4_0,
            "{v}"
        );
        assert!(!has(main, "ARGO_POD_NAME") && has(wait, "ARGO_POD_NAME"), "{v}");
        assert!(
            !has(main, "ARGO_TERMINATION_GRACE_PERIOD_SECONDS"),
            "{v}: only with a grace period"
        );
        let cmd = wait.command.as_ref().unwrap();
        assert_eq!(
            cmd.contains(&"--gloglevel".to_string()),
            v >= ArgoVersion::V3_7,
            "{v}"
        );
        assert_eq!(
            cmd.contains(&"--log-format".to_string()),
            v >= ArgoVersion::V3_5,
            "{v}"
        );
        let tmp = mounts(wait).contains(&("tmp-dir-argo".into(), "/tmp".into()));
        assert_eq!(tmp, v >= ArgoVersion::V3_5, "{v}");
    }
    // Progress off: v3.5+ drop all three variables, v3.3 keeps the file.
    for (v, file) in [(ArgoVersion::V3_3, true), (ArgoVersion::V4_1, false)] {
        let opts = BuildOptions {
            argo_version: v,
            progress: None,
            ..Default::default()
        };
        let p = build_pod(
            &wf_meta(),
            &t,
            "wf-1",
            &ControllerConfig::default(),
            ExecutorKind::Emissary,
            &opts,
        )
        .unwrap()
        .pod;
        assert_eq!(has(ctr(&p, "main"), "ARGO_PROGRESS_FILE"), file, "{v}");
        assert!(!has(ctr(&p, "main"), "ARGO_PROGRESS_PATCH_TICK_DURATION"), "{v}");
    }
    // A grace period from podSpecPatch: every container since v3.7, wait only before.
    let patched = Template::from_json(
        r#"{"container": {"image": "busybox", "command": ["true"]}, "podSpecPatch": "terminationGracePeriodSeconds: 7"}"#,
    )
    .unwrap();
    for v in ArgoVersion::ALL {
        let p = build_tpl(&patched, v).unwrap().pod;
        assert_eq!(p.spec.as_ref().unwrap().termination_grace_period_seconds, Some(7));
        let g = |c: &Container| env(c, "ARGO_TERMINATION_GRACE_PERIOD_SECONDS").and_then(|e| e.value.clone());
        assert_eq!(g(ctr(&p, "wait")).as_deref(), Some("7"), "{v}");
        assert_eq!(g(ctr(&p, "main")).is_some(), v >= ArgoVersion::V3_7, "{v}");
    }
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
        &BuildOptions {
            argo_version: ArgoVersion::V3_3,
            ..Default::default()
        },
    )
    .unwrap()
    .pod;
    let ann = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann["workflows.argoproj.io/kill-cmd-side"], "[\"/bin/stop\"]");
    assert_eq!(
        ann["workflows.argoproj.io/node-id"], "wf-1",
        "the controller's keys win"
    );
    assert_eq!(p.metadata.labels.as_ref().unwrap()["team"], "a");
}
