//! Unit tests of the template model.

use super::*;
use std::path::Path;

const FULL: &str = r#"{
  "name": "t",
  "metadata": {"labels": {"a": "b"}},
  "inputs": {"parameters": [{"name": "p", "value": "v"}],
             "artifacts": [{"name": "in", "path": "/in", "raw": {"data": "hi"}, "mode": 493, "recurseMode": true},
                           {"name": "opt", "path": "/opt-in", "optional": true},
                           {"name": "g", "path": "/g", "gcs": {"bucket": "b", "key": "k"}}]},
  "outputs": {"parameters": [{"name": "o", "valueFrom": {"path": "/tmp/o", "default": ""}}],
              "artifacts": [{"name": "a", "path": "/tmp/a", "optional": true, "archive": {"none": {}}},
                            {"name": "z", "path": "/tmp/z", "archive": {"tar": {"compressionLevel": 1}}}]},
  "script": {"image": "busybox", "command": ["sh"], "source": "echo hi", "volumeMounts": [{"name": "v", "mountPath": "/mnt/outer"}, {"name": "w", "mountPath": "/mnt/outer/inner"}], "futureField": 7},
  "sidecars": [{"name": "s", "image": "busybox", "mirrorVolumeMounts": true}],
  "archiveLocation": {"archiveLogs": true, "local": {"path": "/repo/wf/pod"}},
  "activeDeadlineSeconds": "30",
  "podSpecPatch": "{}"
}"#;

#[test]
fn round_trip_keeps_unknown_fields() {
    let t = Template::from_json(FULL).unwrap();
    let back: serde_json::Value = serde_json::from_str(&t.to_json()).unwrap();
    let orig: serde_json::Value = serde_json::from_str(FULL).unwrap();
    assert_eq!(back, orig);
}

#[test]
fn model_fields() {
    let t = Template::from_json(FULL).unwrap();
    assert_eq!(t.main_container_names(), vec!["main"]);
    assert!(t.archive_logs());
    assert_eq!(t.inputs.artifacts[0].mode, Some(0o755));
    assert_eq!(t.inputs.artifacts[2].location.kind_name(), Some("gcs"));
    assert_eq!(t.outputs.artifacts[0].archive_kind(), ArchiveKind::None);
    assert_eq!(t.outputs.artifacts[1].archive_kind(), ArchiveKind::TarGz(Some(1)));
    assert_eq!(t.script.as_ref().unwrap().source, "echo hi");
}

#[test]
fn base_layer_rules() {
    let t = Template::from_json(FULL).unwrap();
    assert!(t.is_base_layer_path(Path::new("/tmp/o")));
    assert!(!t.is_base_layer_path(Path::new("/mnt/outer/x")));
    assert!(!t.is_base_layer_path(Path::new("/in")));
    assert!(!t.is_base_layer_path(Path::new("/in/sub")));
    // an optional, unsupplied input at the same path falls back to the base layer
    assert!(t.is_base_layer_path(Path::new("/opt-in")));
    let deepest = t.overlapping_volume(Path::new("/mnt/outer/inner/b")).unwrap();
    assert_eq!(deepest.name, "w");
}

#[test]
fn container_set_names_and_retry() {
    let t = Template::from_json(
        r#"{"containerSet": {"retryStrategy": {"retries": "2", "duration": "1.5s"},
            "containers": [{"name": "a", "image": "x"}, {"name": "main", "image": "x", "dependencies": ["a"]}]}}"#,
    )
    .unwrap();
    assert_eq!(t.main_container_names(), vec!["a", "main"]);
    let rs = t.container_set.as_ref().unwrap().retry_strategy.as_ref().unwrap();
    assert_eq!(rs.retries(), 2);
    assert_eq!(rs.delay(), std::time::Duration::from_millis(1500));
    assert_eq!(t.container_set_node("main").unwrap().dependencies, vec!["a"]);
    assert!(t.has_capturable_result());
}

#[test]
fn go_durations() {
    assert_eq!(
        container::parse_go_duration("1m0s"),
        Some(std::time::Duration::from_secs(60))
    );
    assert_eq!(
        container::parse_go_duration("300ms"),
        Some(std::time::Duration::from_millis(300))
    );
    assert_eq!(
        container::parse_go_duration("2h1s"),
        Some(std::time::Duration::from_secs(7201))
    );
    assert_eq!(container::parse_go_duration("abc"), None);
    assert_eq!(container::parse_go_duration(""), None);
}

#[test]
fn child_location_derives_key() {
    let loc = ArtifactLocation {
        local: Some(LocalArtifact {
            path: "/repo/wf/pod/".into(),
        }),
        ..Default::default()
    };
    assert_eq!(
        loc.child("a.tgz").unwrap().local.unwrap().path,
        "/repo/wf/pod/a.tgz"
    );
    let s3: ArtifactLocation = serde_json::from_str(r#"{"s3": {"key": "wf/pod", "bucket": "b"}}"#).unwrap();
    let c = s3.child("x.tgz").unwrap();
    assert_eq!(c.s3.as_ref().unwrap().key, "wf/pod/x.tgz");
    assert_eq!(c.s3.unwrap().bucket.as_deref(), Some("b"));
    let plugin: ArtifactLocation =
        serde_json::from_str(r#"{"plugin": {"name": "dir", "configuration": "root: /r", "key": "wf/pod"}}"#)
            .unwrap();
    let c = plugin.child("x.tgz").unwrap();
    assert_eq!(
        c.extra["plugin"],
        serde_json::json!({"name": "dir", "configuration": "root: /r", "key": "wf/pod/x.tgz"})
    );
}

/// Found by the `template_json` fuzzer: an integer too large for u64 in an unknown field
/// came back one ULP off after `to_json` → `from_json` (serde_json's fast float parsing).
#[test]
fn huge_numbers_survive_a_round_trip() {
    let text = r#"{"containerSet": {"containers": [{"name": "main", "image": "b"}],
        "retrYStrategy": {"retries": 77777777777777777777777777777777777777773}},
        "x": [1.7976931348623157e308, 5e-324, 0.30000000000000004, 123456789012345678901234567890]}"#;
    let t = Template::from_json(text).unwrap();
    assert_eq!(Template::from_json(&t.to_json()).unwrap(), t);
}

/// Found by the `template_json` fuzzer: a duration beyond `Duration::MAX` panicked in
/// `Duration::from_secs_f64` (a container set's `retryStrategy.duration`, the
/// `ARGO_PROGRESS_*_DURATION` variables).
#[test]
fn go_duration_overflow_is_none() {
    assert_eq!(
        container::parse_go_duration("5555555555555555555555555550s"),
        None
    );
    assert_eq!(
        container::parse_go_duration(&format!("{}h", "9".repeat(400))),
        None
    );
    let rs = ContainerSetRetryStrategy {
        duration: Some("99999999999999999999999h".into()),
        ..Default::default()
    };
    assert_eq!(rs.delay(), std::time::Duration::ZERO);
    assert_eq!(
        container::parse_go_duration("1.5h"),
        Some(std::time::Duration::from_secs(5400))
    );
}

#[test]
fn resource_templates_parse_and_round_trip() {
    let text = r#"{"name":"r","resource":{"action":"patch","mergeStrategy":"json","manifest":"x: 1\n",
        "setOwnerReference":true,"successCondition":"status.phase == Done","flags":["--validate=false"],
        "manifestFrom":{"artifact":{"name":"m"}},"future":1},
        "outputs":{"parameters":[{"name":"p","valueFrom":{"jsonPath":"{.metadata.name}","jqFilter":".a","default":"d"}}]}}"#;
    let t = Template::from_json(text).unwrap();
    let r = t.resource.as_ref().unwrap();
    assert_eq!((r.action.as_str(), r.merge_strategy()), ("patch", "json"));
    assert!(r.set_owner_reference);
    assert_eq!(r.manifest_from.as_ref().unwrap().artifact.name, "m");
    assert_eq!(r.flags, ["--validate=false"]);
    let vf = t.outputs.parameters[0].value_from.as_ref().unwrap();
    assert_eq!(vf.json_path.as_deref(), Some("{.metadata.name}"));
    assert_eq!(vf.jq_filter.as_deref(), Some(".a"));
    let back: serde_json::Value = serde_json::from_str(&t.to_json()).unwrap();
    let orig: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(back, orig);
    assert_eq!(ResourceTemplate::default().merge_strategy(), "strategic");
}
