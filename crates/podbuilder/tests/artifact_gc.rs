//! Artifact-GC tasks and pods, per Argo version (AW@v4.1.2 `workflow/controller/artifact_gc.go`;
//! argo-2026-contract.md §1.5). The expected hashes were computed apart from the crate (FNV-1a
//! 32-bit in a few lines of Python).

use std::collections::BTreeMap;

use argoexec_core::ArgoVersion;
use argoexec_core::artifact_gc::{ArtifactNodeSpec, WorkflowArtifactGCTask};
use argoexec_core::template::{Artifact, ArtifactLocation};
use argoexec_podbuilder::build::artifact_gc::{GcPodInfo, GcStrategy, gc_pod, gc_pod_name, gc_task};
use argoexec_podbuilder::{BuildError, BuildOptions, WorkflowMeta};
use k8s_openapi::api::core::v1::Pod;

fn wf() -> WorkflowMeta {
    WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        uid: "wf-uid".into(),
        ..Default::default()
    }
}

fn s3(key: &str, secret: &str) -> ArtifactLocation {
    serde_json::from_value(
        serde_json::json!({"s3": {"bucket": "b", "endpoint": "s3:9000", "key": key,
        "accessKeySecret": {"name": secret, "key": "ak"}, "secretKeySecret": {"name": secret, "key": "sk"}}}),
    )
    .unwrap()
}

fn task(pod: &str) -> WorkflowArtifactGCTask {
    let out = Artifact {
        name: "out".into(),
        location: s3("wf/out.tgz", "art-creds"),
        ..Default::default()
    };
    let node = ArtifactNodeSpec {
        archive_location: Some(s3("wf", "repo-creds")),
        artifacts: BTreeMap::from([("out".to_string(), out)]),
    };
    gc_task(&wf(), pod, BTreeMap::from([("wf-123".to_string(), node)]))
}

fn pod(version: ArgoVersion) -> Result<Pod, BuildError> {
    let info = GcPodInfo::default();
    let name = gc_pod_name("wf", GcStrategy::OnWorkflowCompletion, &info);
    let opts = BuildOptions {
        argo_version: version,
        executor_image: "argoexec-rs:test".into(),
        deadline: "2026-12-05T00:00:00Z".into(),
        ..Default::default()
    };
    gc_pod(
        &wf(),
        GcStrategy::OnWorkflowCompletion,
        &info,
        &task(&name),
        "task-uid",
        &opts,
    )
}

fn env<'a>(p: &'a Pod, name: &str) -> Option<&'a str> {
    let main = &p.spec.as_ref().unwrap().containers[0];
    let e = main.env.as_ref()?.iter().find(|e| e.name == name)?;
    Some(e.value.as_deref().unwrap_or("<valueFrom>"))
}

#[test]
fn pod_names_hash_the_service_account_labels_and_annotations_as_argo() {
    let none = GcPodInfo::default();
    assert_eq!(
        gc_pod_name("wf", GcStrategy::OnWorkflowCompletion, &none),
        "wf-artgc-wfcomp-2166136261"
    );
    let info = GcPodInfo {
        service_account: Some("gcsa".into()),
        labels: BTreeMap::from([("team".to_string(), "blue".to_string())]),
        annotations: BTreeMap::new(),
        ..Default::default()
    };
    assert_eq!(
        gc_pod_name("wf", GcStrategy::OnWorkflowDeletion, &info),
        "wf-artgc-wfdel-2086883878"
    );
}

#[test]
fn the_task_is_named_after_its_pod_labelled_with_its_hash_and_owned_by_the_workflow() {
    let t = task("wf-artgc-wfcomp-2166136261");
    assert_eq!(t.name(), "wf-artgc-wfcomp-2166136261-0");
    assert_eq!(
        t.metadata["labels"]["workflows.argoproj.io/artifact-gc-pod"],
        "2762810898"
    );
    assert_eq!(t.metadata["ownerReferences"][0]["kind"], "Workflow");
    assert_eq!(t.metadata["ownerReferences"][0]["uid"], "wf-uid");
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["kind"], "WorkflowArtifactGCTask");
    assert!(json["spec"]["artifactsByNode"]["wf-123"]["artifacts"]["out"]["s3"].is_object());
}

#[test]
fn main_deletes_with_the_versions_log_options_and_env() {
    for v in ArgoVersion::ALL.into_iter().filter(|v| *v != ArgoVersion::V3_3) {
        let p = pod(v).unwrap();
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.containers.len(), 1, "{v}");
        let main = &spec.containers[0];
        assert_eq!(main.name, "main");
        assert_eq!(main.image.as_deref(), Some("argoexec-rs:test"));
        assert!(main.command.is_none(), "{v}: the image's entrypoint runs");
        let args = main.args.as_ref().unwrap();
        assert_eq!(args[..2], ["artifact", "delete"], "{v}");
        assert_eq!(
            args.iter().any(|a| a == "--log-format"),
            v >= ArgoVersion::V3_7,
            "{v}"
        );
        assert_eq!(env(&p, "ARGO_ARTIFACT_POD_NAME"), Some("2762810898"), "{v}");
        let v4 = v >= ArgoVersion::V4_0;
        assert_eq!(env(&p, "ARGO_POD_NAME").is_some(), v4, "{v}");
        assert_eq!(env(&p, "ARGO_TEMPLATE"), v4.then_some("{}"), "{v}");
        assert_eq!(
            env(&p, "ARGO_DEADLINE"),
            v4.then_some("2026-12-05T00:00:00Z"),
            "{v}"
        );
        assert_eq!(env(&p, "ARGO_ARTIFACT_PLUGIN_NAMES"), v4.then_some(""), "{v}");
        let res = main.resources.as_ref().unwrap();
        assert_eq!(res.requests.as_ref().unwrap()["memory"].0, "32Mi");
        assert_eq!(res.limits.as_ref().unwrap()["cpu"].0, "100m");
        let sc = main.security_context.as_ref().unwrap();
        assert_eq!(sc.privileged, Some(false), "{v}");
        assert_eq!(spec.security_context.is_some(), v >= ArgoVersion::V3_7, "{v}");
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    }
}

#[test]
fn the_pod_is_owned_by_its_task_and_mounts_every_locations_secret() {
    let p = pod(ArgoVersion::V4_1).unwrap();
    let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.kind, "WorkflowArtifactGCTask");
    assert_eq!(owner.name, "wf-artgc-wfcomp-2166136261-0");
    assert_eq!(owner.uid, "task-uid");
    let labels = p.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["workflows.argoproj.io/component"], "artifact-gc");
    assert_eq!(labels["workflows.argoproj.io/workflow"], "wf");
    let ann = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        ann["workflows.argoproj.io/artifact-gc-strategy"],
        "OnWorkflowCompletion"
    );
    let mounts = p.spec.as_ref().unwrap().containers[0]
        .volume_mounts
        .clone()
        .unwrap();
    let paths: Vec<_> = mounts.iter().map(|m| m.mount_path.as_str()).collect();
    assert!(paths.contains(&"/argo/secret/art-creds"), "{paths:?}");
    assert!(paths.contains(&"/argo/secret/repo-creds"), "{paths:?}");
}

#[test]
fn v3_3_has_no_artifact_gc() {
    assert!(matches!(pod(ArgoVersion::V3_3), Err(BuildError::BadValue { .. })));
}

#[test]
fn the_gc_pod_spec_patch_applies_but_cannot_replace_the_service_account() {
    let info = GcPodInfo {
        service_account: Some("gcsa".into()),
        pod_spec_patch: Some("serviceAccountName: other\nnodeSelector: {pool: gc}\n".into()),
        ..Default::default()
    };
    let name = gc_pod_name("wf", GcStrategy::OnWorkflowDeletion, &info);
    let opts = BuildOptions {
        argo_version: ArgoVersion::V4_1,
        ..Default::default()
    };
    let p = gc_pod(
        &wf(),
        GcStrategy::OnWorkflowDeletion,
        &info,
        &task(&name),
        "u",
        &opts,
    )
    .unwrap();
    let spec = p.spec.unwrap();
    assert_eq!(spec.node_selector.unwrap()["pool"], "gc");
    assert_eq!(spec.service_account_name.as_deref(), Some("gcsa"));
    let bad = GcPodInfo {
        pod_spec_patch: Some("- a list\n".into()),
        ..Default::default()
    };
    assert!(matches!(
        gc_pod(
            &wf(),
            GcStrategy::OnWorkflowDeletion,
            &bad,
            &task(&name),
            "u",
            &opts
        ),
        Err(BuildError::BadValue { .. })
    ));
}

/// v4.0+: a plugin artifact brings `init` (the per-pod copy), a sidecar per plugin wrapped by
/// the emissary with its socket volume shared with main, and the sidecars' names in main's
/// `ARGO_ARTIFACT_PLUGIN_NAMES`.
#[test]
fn plugin_artifacts_bring_their_sidecars() {
    let plugin: ArtifactLocation = serde_json::from_value(serde_json::json!(
        {"plugin": {"name": "dir", "configuration": "root: /r", "key": "wf/out.tgz"}}
    ))
    .unwrap();
    let mut t = task("wf-artgc-wfcomp-1");
    let node = t.spec.artifacts_by_node.get_mut("wf-123").unwrap();
    node.artifacts.insert(
        "p".into(),
        Artifact {
            name: "p".into(),
            location: plugin,
            ..Default::default()
        },
    );
    let mut info = GcPodInfo::default();
    let opts = BuildOptions {
        argo_version: ArgoVersion::V4_1,
        executor_image: "argoexec-rs:test".into(),
        ..Default::default()
    };
    let build = |info: &GcPodInfo| gc_pod(&wf(), GcStrategy::OnWorkflowCompletion, info, &t, "uid", &opts);
    assert!(matches!(build(&info), Err(BuildError::NoArtifactDriver { .. })));
    info.artifact_drivers = vec![argoexec_podbuilder::artifact_drivers::ArtifactDriver {
        name: "dir".into(),
        image: "plugin-dir:1".into(),
        connection_timeout_seconds: None,
    }];
    assert!(matches!(build(&info), Err(BuildError::NoCommand { .. })));
    info.images.insert(
        "plugin-dir:1".into(),
        argoexec_podbuilder::ImageEntry {
            command: vec!["/argoexec-plugin-dir".into()],
            args: None,
        },
    );
    let p = build(&info).unwrap();
    let spec = p.spec.as_ref().unwrap();
    let init = &spec.init_containers.as_ref().unwrap()[0];
    assert_eq!(init.command.as_ref().unwrap()[..2], ["argoexec", "init"]);
    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["artifact-plugin-dir", "main"]);
    let side = &spec.containers[0];
    let cmd = side.command.as_ref().unwrap();
    assert_eq!(cmd[..2], ["/var/run/argo/argoexec", "emissary"]);
    assert_eq!(
        cmd[cmd.len() - 2..],
        ["/argoexec-plugin-dir", "/tmp/artifact-plugins/dir/socket"]
    );
    let main = &spec.containers[1];
    let mounted = |c: &k8s_openapi::api::core::v1::Container, path: &str| {
        c.volume_mounts.iter().flatten().any(|m| m.mount_path == path)
    };
    for c in [side, main] {
        assert!(
            mounted(c, "/tmp/artifact-plugins/dir") && mounted(c, "/var/run/argo"),
            "{}",
            c.name
        );
    }
    let e = main
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "ARGO_ARTIFACT_PLUGIN_NAMES")
        .unwrap();
    assert_eq!(e.value.as_deref(), Some("artifact-plugin-dir"));
    let vols: Vec<&str> = spec.volumes.iter().flatten().map(|v| v.name.as_str()).collect();
    for v in ["var-run-argo", "artifact-plugin-dir"] {
        assert!(vols.contains(&v), "{vols:?}");
    }
}
