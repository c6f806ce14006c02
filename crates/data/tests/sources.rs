//! Data sources beyond S3 and local: `artifactPaths` in Azure Blob (Azurite) and GCS
//! (fake-gcs-server), key-only and relocated onto the template's archive location as Argo's
//! `Relocate` does, listed as Argo's `ListObjects` per provider (a directory's full keys, not
//! its string-prefix sibling) and filtered by an expression, with credentials only from the
//! Secret mount.

use std::path::Path;
use std::sync::Arc;

use argoexec_artifacts::{AnyDriver, ArtifactDriver, Settings};
use argoexec_core::{PodPaths, Template};
use argoexec_testkit::azurite::{Azurite, KEY};
use argoexec_testkit::fake_gcs::{FakeGcs, service_account_key};
use serde_json::{Value, json};

const FILTER: &str = r#"filter(data, {# endsWith "main.log"})"#;

/// A data template listing `artifact_paths`, with `archive` as its archive location.
fn template(artifact_paths: Value, archive: Value) -> Template {
    Template::from_json(
        &json!({"name": "d", "archiveLocation": archive, "data": {
            "source": {"artifactPaths": artifact_paths},
            "transformation": [{"expression": FILTER}]}})
        .to_string(),
    )
    .unwrap()
}

fn settings(dir: &Path, gcs_base_url: Option<String>) -> Arc<Settings> {
    Arc::new(Settings {
        paths: PodPaths::new(dir),
        retries: 1,
        retry_timeout: std::time::Duration::from_secs(2),
        gcs_base_url,
        ..Settings::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_prefix_is_listed_and_filtered() {
    let az = Azurite::start(&["logs"]);
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("argo/secret/az")).unwrap();
    std::fs::write(d.path().join("argo/secret/az/key"), KEY).unwrap();
    let s = settings(d.path(), None);
    let repo = json!({"azure": {"endpoint": az.endpoint(), "container": "logs", "blob": "",
        "accountKeySecret": {"name": "az", "key": "key"}}});
    std::fs::write(d.path().join("f"), "x").unwrap();
    for blob in [
        "runs/a/main.log",
        "runs/a/other.txt",
        "runs/b/main.log",
        "runs2/main.log",
    ] {
        let mut loc = repo.clone();
        loc["azure"]["blob"] = json!(blob);
        let drv = AnyDriver::for_location(&serde_json::from_value(loc).unwrap(), &s).unwrap();
        drv.save(&d.path().join("f")).await.unwrap();
    }
    // Key-only: the container, endpoint and credentials come from the archive location.
    let t = template(json!({"name": "logs", "azure": {"blob": "runs"}}), repo);
    let got = argoexec_data::process(&t, &s).await.unwrap();
    assert_eq!(got, json!(["runs/a/main.log", "runs/b/main.log"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcs_prefix_is_listed_and_filtered() {
    let gcs = FakeGcs::start(&["logs"]);
    for key in [
        "runs/a/main.log",
        "runs/a/other.txt",
        "runs/b/main.log",
        "runs2/main.log",
    ] {
        gcs.put("logs", key, b"x");
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("argo/secret/gcs")).unwrap();
    std::fs::write(d.path().join("argo/secret/gcs/sa"), service_account_key()).unwrap();
    let s = settings(d.path(), Some(gcs.base_url()));
    let repo = json!({"gcs": {"bucket": "logs", "key": "",
        "serviceAccountKeySecret": {"name": "gcs", "key": "sa"}}});
    let t = template(json!({"name": "logs", "gcs": {"key": "runs"}}), repo);
    let got = argoexec_data::process(&t, &s).await.unwrap();
    assert_eq!(got, json!(["runs/a/main.log", "runs/b/main.log"]));
}
