//! `argoexec run --artifact-gc` (the artifact-GC task and pod on the run's node, the deploy
//! kit's `artifact-gc.yaml` role) and data-template entrypoints (`argoexec data` in main),
//! end to end through the executor image: in the local repository and in S3 (moto), with
//! credentials only by Secret volume.

mod run_support;

use std::sync::{Arc, OnceLock};

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, Settings};
use argoexec_core::PodPaths;
use argoexec_testkit::moto::Moto;
use run_support::*;
use serde_json::{Value, json};

const BUCKET: &str = "gc-runs";

fn moto() -> &'static Moto {
    static M: OnceLock<Moto> = OnceLock::new();
    M.get_or_init(|| Moto::start(&[BUCKET]))
}

/// A driver for `key` in the bucket, reading the credentials from a temp secret mount.
fn object(m: &Moto, key: &str) -> (AnyDriver, tempfile::TempDir) {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("argo/secret/c");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("a"), m.access_key()).unwrap();
    std::fs::write(s.join("s"), m.secret_key()).unwrap();
    let loc = serde_json::from_value(json!({"s3": {
        "endpoint": m.host_port(), "insecure": true, "bucket": BUCKET, "key": key,
        "accessKeySecret": {"name": "c", "key": "a"}, "secretKeySecret": {"name": "c", "key": "s"}}}))
    .unwrap();
    let settings = Arc::new(Settings {
        paths: PodPaths::new(d.path()),
        ..Settings::default()
    });
    (AnyDriver::for_location(&loc, &settings).unwrap(), d)
}

/// The run's `artifactGC` results by artifact name.
fn gc_results(r: &RunResult) -> serde_json::Map<String, Value> {
    let gc = &r.json["artifactGC"];
    assert_eq!(gc["phase"], "Succeeded", "the GC pod succeeds: {}", r.dump());
    gc["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no artifactGC results: {}", r.dump()))
        .iter()
        .map(|x| (x["name"].as_str().unwrap().to_string(), x.clone()))
        .collect()
}

const OUTPUTS: &str = r#"container:
  image: busybox
  command: [sh, -c]
  args: ["echo report > /tmp/report.txt; mkdir -p /tmp/out/sub; echo a > /tmp/out/a.txt; echo b > /tmp/out/sub/b.txt; echo raw > /tmp/raw.txt; echo keep > /tmp/keep.txt"]
outputs:
  artifacts:
    - {name: report, path: /tmp/report.txt}
    - {name: dir, path: /tmp/out, archive: {none: {}}}
    - {name: raw, path: /tmp/raw.txt, archive: {none: {}}}
    - {name: kept, path: /tmp/keep.txt, artifactGC: {strategy: Never}}
"#;

#[test]
fn the_local_repository_is_emptied_but_for_what_gc_must_never_touch() {
    if !docker_available() {
        return;
    }
    let r = run_yaml(&wf("gc-local", OUTPUTS), "emissary", &["--artifact-gc"]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    assert_eq!(r.code, 0, "{}", r.dump());
    let results = gc_results(&r);
    for name in ["report", "dir", "raw"] {
        assert_eq!(results[name]["success"], true, "{name}: {}", r.dump());
        let path = r.artifact(name).unwrap();
        assert!(!path.exists(), "{name} is deleted: {}", path.display());
    }
    assert!(!results.contains_key("kept"), "{}", r.dump());
    assert_eq!(r.json["artifactGC"]["kept"], json!(["kept"]));
    assert!(r.artifact("kept").unwrap().exists(), "Never is kept");
    let pod = r.json["artifactGC"]["pod"].as_str().unwrap();
    assert!(pod.contains("-artgc-wfcomp-"), "{pod}");
}

#[test]
fn s3_outputs_are_deleted_by_the_gc_pod_with_secret_volume_credentials() {
    if !docker_available() {
        return;
    }
    let m = moto();
    let target = format!("s3://{BUCKET}/gc");
    let endpoint = m.host_port();
    // The credentials reach `run` by environment; `run` puts them in a Secret, and both the
    // step's pod and the GC pod read them from its volume only.
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("wf.yaml");
    std::fs::write(&file, wf("gc-s3", OUTPUTS)).unwrap();
    let r = run_file_env(
        &file,
        "emissary",
        &[
            "--artifacts",
            &target,
            "--s3-endpoint",
            &endpoint,
            "--s3-insecure",
            "--artifact-gc",
        ],
        None,
        &[
            ("AWS_ACCESS_KEY_ID", m.access_key()),
            ("AWS_SECRET_ACCESS_KEY", m.secret_key()),
        ],
    );
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    let results = gc_results(&r);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let arts = r.json["outputs"]["artifacts"].as_array().unwrap().clone();
    for a in &arts {
        let name = a["name"].as_str().unwrap();
        let key = a["s3"]["key"].as_str().unwrap();
        let (drv, _d) = object(m, key);
        // A file is its own object; a directory (`archive: none`) is the objects under it.
        let mut left = match rt.block_on(drv.list_objects()) {
            Ok(keys) => keys,
            Err(ArtifactError::NotFound { .. }) => Vec::new(),
            Err(e) => panic!("{name}: {e}"),
        };
        if rt.block_on(drv.exists()).unwrap() && left.is_empty() {
            left.push(key.to_string());
        }
        if name == "kept" {
            assert_eq!(left, [key], "kept stays: {}", r.dump());
        } else {
            assert_eq!(results[name]["success"], true, "{name}: {}", r.dump());
            assert!(left.is_empty(), "{name} ({key}) is gone: {left:?}");
        }
    }
}

#[test]
fn a_data_entrypoint_lists_and_filters_s3_keys() {
    if !docker_available() {
        return;
    }
    let m = moto();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("f"), "x").unwrap();
    for key in [
        "data/a/main.log",
        "data/b/main.log",
        "data/b/other.txt",
        "data2/main.log",
    ] {
        let (drv, _d) = object(m, key);
        rt.block_on(drv.save(&src.path().join("f"))).unwrap();
    }
    let creds = tempfile::tempdir().unwrap();
    std::fs::write(creds.path().join("accesskey"), m.access_key()).unwrap();
    std::fs::write(creds.path().join("secretkey"), m.secret_key()).unwrap();
    // The README's example, pointed at moto.
    let text = std::fs::read_to_string(example("s3/data-filter.yaml"))
        .unwrap()
        .replace("127.0.0.1:9000", &m.host_port())
        .replace("my-bucket", BUCKET);
    let secret = format!("creds={}", creds.path().display());
    let r = run_yaml(&text, "emissary", &["--secret", &secret]);
    assert_eq!(r.phase(), "Succeeded", "{}", r.dump());
    let result: Value = serde_json::from_str(r.result().unwrap_or("null")).unwrap();
    assert_eq!(
        result,
        json!(["data/a/main.log", "data/b/main.log"]),
        "the prefix's own keys only, filtered: {}",
        r.dump()
    );
}
