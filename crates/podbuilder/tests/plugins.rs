//! Artifact plugins in the pod (Argo v4.0+; AW@v4.1.2 `workflowpod.go` `newInitContainers`,
//! `addArtifactPluginsLegacy`, `addArtifactPluginsInitless`).

use argoexec_core::{ArgoVersion, ExecutorKind, Template};
use argoexec_podbuilder::*;
use k8s_openapi::api::core::v1::{Container, Pod};

const TPL: &str = r#"{"name": "step",
  "inputs": {"artifacts": [
    {"name": "in", "path": "/in/file", "plugin": {"name": "dir", "configuration": "root: /r", "key": "a/in"}},
    {"name": "raw", "path": "/in/raw", "raw": {"data": "x"}}]},
  "outputs": {"artifacts": [{"name": "out", "path": "/out", "plugin": {"name": "other", "configuration": "c", "key": "a/out"}}]},
  "script": {"image": "busybox", "command": ["sh"], "source": "echo hi"}}"#;

const CM: &str = "kind: ConfigMap
data:
  artifactDrivers: |
    - {name: dir, image: 'plugin-dir:1', connectionTimeoutSeconds: 9}
    - {name: other, image: 'plugin-other:1'}
  images: |
    plugin-dir:1: {entrypoint: [/argoexec-plugin-dir]}
    plugin-other:1: {entrypoint: [/other, --serve]}
";

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
    let t = Template::from_json(tpl).unwrap();
    build_pod(&wf, &t, "wf-1", &config, ExecutorKind::Emissary, &opts).map(|b| b.pod)
}

fn initless(cm: &str) -> String {
    format!("{cm}  initlessPod: |\n    enabled: true\n")
}

fn names(cs: &[Container]) -> Vec<&str> {
    cs.iter().map(|c| c.name.as_str()).collect()
}

fn find<'a>(cs: &'a [Container], name: &str) -> &'a Container {
    cs.iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

fn env_values<'a>(c: &'a Container, name: &str) -> Vec<&'a str> {
    c.env
        .iter()
        .flatten()
        .filter(|e| e.name == name)
        .map(|e| e.value.as_deref().unwrap_or(""))
        .collect()
}

fn mount_of<'a>(c: &'a Container, path: &str) -> Option<&'a k8s_openapi::api::core::v1::VolumeMount> {
    c.volume_mounts.iter().flatten().find(|m| m.mount_path == path)
}

/// Every mount names a volume of the pod, no container mounts two things at one path, and
/// container names are unique: what the API server would refuse.
fn admissible(p: &Pod) {
    let spec = p.spec.as_ref().unwrap();
    let vols: Vec<&str> = spec.volumes.iter().flatten().map(|v| v.name.as_str()).collect();
    let all: Vec<&Container> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for c in &all {
        assert!(seen.insert(c.name.clone()), "container {} twice", c.name);
        let mut paths = std::collections::BTreeSet::new();
        for m in c.volume_mounts.iter().flatten() {
            assert!(
                vols.contains(&m.name.as_str()),
                "{}: mount of missing volume {}",
                c.name,
                m.name
            );
            assert!(
                paths.insert(m.mount_path.clone()),
                "{}: two mounts at {}",
                c.name,
                m.mount_path
            );
        }
    }
    let mut vseen = std::collections::BTreeSet::new();
    assert!(vols.iter().all(|v| vseen.insert(*v)), "a volume twice: {vols:?}");
}

#[test]
fn legacy_init_containers_for_inputs_sidecars_for_outputs() {
    let p = build(TPL, CM, ArgoVersion::V4_1).unwrap();
    admissible(&p);
    let spec = p.spec.as_ref().unwrap();
    let inits = spec.init_containers.as_ref().unwrap();
    assert_eq!(names(inits), ["init", "init-artifact-dir"]);
    let ia = &inits[1];
    assert_eq!(ia.image.as_deref(), Some("plugin-dir:1"));
    let cmd = ia.command.as_ref().unwrap();
    assert_eq!(
        cmd[..4],
        [
            "/var/run/argo/argoexec",
            "artifact-plugin-init",
            "--plugin-name",
            "dir"
        ]
    );
    assert_eq!(
        cmd[cmd.len() - 3..],
        ["--", "/argoexec-plugin-dir", "/tmp/artifact-plugins/dir/socket"]
    );
    assert!(cmd.contains(&"--loglevel".to_string()));
    assert_eq!(env_values(ia, "ARGO_CONTAINER_NAME"), ["init-artifact-dir"]);
    assert_eq!(env_values(ia, "ARGO_TEMPLATE").len(), 1);
    assert!(mount_of(ia, "/argo/inputs/artifacts").is_some());
    assert!(mount_of(ia, "/var/run/argo").is_some());
    // The socket lives in the init container's own /tmp: no socket volume for an input-only plugin.
    assert!(mount_of(ia, "/tmp/artifact-plugins/dir").is_none());
    assert!(
        !spec
            .volumes
            .iter()
            .flatten()
            .any(|v| v.name == "artifact-plugin-dir")
    );

    assert_eq!(names(&spec.containers), ["wait", "main", "artifact-plugin-other"]);
    let side = find(&spec.containers, "artifact-plugin-other");
    assert_eq!(
        side.command.as_deref().unwrap(),
        [
            "/var/run/argo/argoexec",
            "artifact-plugin-sidecar",
            "--loglevel",
            "info",
            "--log-format",
            "text",
            "--gloglevel",
            "0",
            "--",
            "/other",
            "--serve",
            "/tmp/artifact-plugins/other/socket"
        ]
    );
    assert_eq!(
        mount_of(side, "/tmp/artifact-plugins/other").unwrap().name,
        "artifact-plugin-other"
    );
    let outputs = mount_of(side, "/tmp/argo/outputs").unwrap();
    assert_eq!(
        (outputs.name.as_str(), outputs.sub_path.as_deref()),
        ("tmp-dir-argo", Some("argo/outputs"))
    );
    assert!(mount_of(side, "/var/run/argo").is_some());
    // Not wrapped by the emissary and not given /tmp (it is not the executor image).
    assert!(mount_of(side, "/tmp").is_none());

    let wait = find(&spec.containers, "wait");
    assert_eq!(
        env_values(wait, "ARGO_ARTIFACT_PLUGIN_NAMES"),
        ["artifact-plugin-other"]
    );
    assert!(mount_of(wait, "/tmp/artifact-plugins/other").is_some());
    assert!(mount_of(wait, "/tmp/argo/outputs").is_some());
    let main = find(&spec.containers, "main");
    assert!(mount_of(main, "/tmp/artifact-plugins/other").is_none());
    assert_eq!(main.command.as_ref().unwrap()[0], "/var/run/argo/argoexec");
}

#[test]
fn initless_one_sidecar_per_plugin_driven_by_the_supervisor() {
    let both = TPL.replace(
        r#""name": "other", "configuration": "c""#,
        r#""name": "dir", "configuration": "c""#,
    );
    let p = build(&both, &initless(CM), ArgoVersion::V4_1).unwrap();
    admissible(&p);
    let spec = p.spec.as_ref().unwrap();
    assert!(spec.init_containers.is_none());
    assert_eq!(
        names(&spec.containers),
        ["supervisor", "main", "artifact-plugin-dir"]
    );
    let side = find(&spec.containers, "artifact-plugin-dir");
    assert_eq!(
        side.command.as_ref().unwrap()[..2],
        ["/argo-bin/bin/argoexec", "artifact-plugin-sidecar"]
    );
    assert_eq!(mount_of(side, "/argo-bin").unwrap().read_only, Some(true));
    assert!(mount_of(side, "/argo/inputs/artifacts").is_some());
    assert!(env_values(side, "ARGO_WAIT_FOR_READY").is_empty());
    let sup = find(&spec.containers, "supervisor");
    assert_eq!(
        env_values(sup, "ARGO_ARTIFACT_PLUGIN_NAMES"),
        ["artifact-plugin-dir"]
    );
    assert_eq!(env_values(sup, "ARGO_INPUT_ARTIFACT_PLUGIN_NAMES"), ["dir"]);
    assert!(mount_of(sup, "/tmp/artifact-plugins/dir").is_some());

    // Input-only plugins get a sidecar (and socket volume) too in this layout.
    let p = build(TPL, &initless(CM), ArgoVersion::V4_1).unwrap();
    admissible(&p);
    let spec = p.spec.as_ref().unwrap();
    assert_eq!(
        names(&spec.containers),
        [
            "supervisor",
            "main",
            "artifact-plugin-dir",
            "artifact-plugin-other"
        ]
    );
    let sup = find(&spec.containers, "supervisor");
    assert_eq!(
        env_values(sup, "ARGO_ARTIFACT_PLUGIN_NAMES"),
        ["artifact-plugin-dir,artifact-plugin-other"]
    );
}

#[test]
fn archived_logs_and_keyless_outputs_go_through_the_archive_plugin() {
    let tpl = r#"{"name": "s", "container": {"image": "busybox", "command": ["true"]},
      "outputs": {"artifacts": [{"name": "o", "path": "/o"}]},
      "archiveLocation": {"archiveLogs": true, "plugin": {"name": "dir", "key": "wf/pod"}}}"#;
    let p = build(tpl, CM, ArgoVersion::V4_0).unwrap();
    admissible(&p);
    assert_eq!(
        names(&p.spec.as_ref().unwrap().containers),
        ["wait", "main", "artifact-plugin-dir"]
    );
    // An artifact with its own S3 location does not start the archive location's plugin.
    let tpl = r#"{"name": "s", "container": {"image": "busybox", "command": ["true"]},
      "outputs": {"artifacts": [{"name": "o", "path": "/o", "s3": {"bucket": "b", "key": "k", "endpoint": "e"}}]},
      "archiveLocation": {"plugin": {"name": "dir", "key": "wf/pod"}}}"#;
    let p = build(tpl, CM, ArgoVersion::V4_0).unwrap();
    assert_eq!(names(&p.spec.as_ref().unwrap().containers), ["wait", "main"]);
    let wait = find(&p.spec.as_ref().unwrap().containers, "wait");
    assert_eq!(env_values(wait, "ARGO_ARTIFACT_PLUGIN_NAMES"), [""]);
}

#[test]
fn what_cannot_be_built_is_named() {
    let e = build(TPL, "kind: ConfigMap\ndata: {}\n", ArgoVersion::V4_1).unwrap_err();
    assert!(
        matches!(e, BuildError::NoArtifactDriver { ref plugin, .. } if plugin == "dir" || plugin == "other"),
        "{e}"
    );
    assert!(e.to_string().contains("artifactDrivers"), "{e}");
    let no_index = "kind: ConfigMap\ndata:\n  artifactDrivers: |\n    - {name: dir, image: p}\n    - {name: other, image: p}\n";
    let e = build(TPL, no_index, ArgoVersion::V4_1).unwrap_err();
    assert!(
        matches!(e, BuildError::NoCommand { ref container, .. } if container.contains("artifact-")),
        "{e}"
    );
    let e = build(TPL, CM, ArgoVersion::V3_7).unwrap_err();
    assert!(matches!(e, BuildError::PluginsNeedV4 { .. }), "{e}");
    assert!(e.to_string().contains("v4.0"), "{e}");
}

#[test]
fn the_drivers_timeout_travels_in_the_template() {
    let p = build(TPL, CM, ArgoVersion::V4_1).unwrap();
    let inits = p.spec.as_ref().unwrap().init_containers.as_ref().unwrap();
    let t = Template::from_json(env_values(&inits[0], "ARGO_TEMPLATE")[0]).unwrap();
    // `dir` has 9 s configured; `other` none, so its artifact keeps no value.
    assert_eq!(
        t.inputs.artifacts[0].location.extra["plugin"]["connectionTimeoutSeconds"],
        9
    );
    assert!(
        t.outputs.artifacts[0].location.extra["plugin"]
            .get("connectionTimeoutSeconds")
            .is_none()
    );
}
