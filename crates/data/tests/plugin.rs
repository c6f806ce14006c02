//! A data template's `artifactPaths` in an artifact plugin (v4.0): listed by the plugin's
//! `ListObjects` over its socket (`/tmp/artifact-plugins/<plugin>/socket` under the pod's
//! root), key-only and relocated onto the archive location; the project's directory plugin
//! serves it in-process.

use std::path::Path;
use std::sync::Arc;

use argoexec_artifacts::Settings;
use argoexec_core::{PodPaths, Template};
use serde_json::json;

fn settings(dir: &Path) -> Arc<Settings> {
    Arc::new(Settings {
        paths: PodPaths::new(dir),
        plugin_socket_wait: (2, std::time::Duration::from_millis(50)),
        ..Settings::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_source_is_listed_through_the_socket_and_filtered() {
    let pod = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    for (key, text) in [
        ("runs/a/main.log", "x"),
        ("runs/a/other.txt", "y"),
        ("runs/b/main.log", "z"),
        ("runs2/main.log", "w"),
    ] {
        let p = store.path().join(key);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let socket = pod.path().join("tmp/artifact-plugins/dir/socket");
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let listener = argoexec_plugin_dir::Listener::bind(&socket).unwrap();
    tokio::spawn(async move { listener.serve(std::future::pending()).await.unwrap() });
    let configuration = format!("root: {}", store.path().display());
    let t = Template::from_json(
        &json!({"name": "d",
            "archiveLocation": {"plugin": {"name": "dir", "configuration": configuration, "key": "unused"}},
            "data": {"source": {"artifactPaths": {"name": "logs", "plugin": {"key": "runs"}}},
                     "transformation": [{"expression": r#"filter(data, {# endsWith "main.log"})"#}]}})
        .to_string(),
    )
    .unwrap();
    let got = argoexec_data::process(&t, &settings(pod.path())).await.unwrap();
    assert_eq!(got, json!(["runs/a/main.log", "runs/b/main.log"]));
}

/// No plugin sidecar (no controller gives a data pod one): the socket wait's failure, naming it.
#[tokio::test]
async fn without_the_plugin_the_socket_is_named() {
    let pod = tempfile::tempdir().unwrap();
    let t = Template::from_json(
        &json!({"name": "d", "data": {"source": {"artifactPaths": {"name": "logs",
            "plugin": {"name": "dir", "configuration": "root: /x", "key": "runs"}}},
            "transformation": []}})
        .to_string(),
    )
    .unwrap();
    let e = argoexec_data::process(&t, &settings(pod.path()))
        .await
        .unwrap_err();
    let text = argoexec_data::message(&e);
    assert!(text.contains("/tmp/artifact-plugins/dir/socket"), "{text}");
}
