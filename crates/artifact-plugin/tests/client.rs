//! The client against a real gRPC server on a Unix socket: the project's test plugin,
//! `argoexec-plugin-dir`, which keeps artifacts as files under the directory its
//! configuration names (the key is the file's path under it).

use std::path::Path;
use std::time::Duration;

use argoexec_artifact_plugin::wire::*;
use argoexec_artifact_plugin::{PluginClient, PluginError};

/// Serve the directory plugin on `socket` in the background (listening on return).
fn serve(socket: &Path) {
    let listener = argoexec_plugin_dir::Listener::bind(socket).unwrap();
    tokio::spawn(async move {
        listener.serve(std::future::pending()).await.unwrap();
    });
}

/// An artifact at `key` of the plugin configured by `configuration`.
fn artifact(configuration: &str, key: &str) -> Artifact {
    Artifact {
        name: "a".into(),
        plugin: Some(PluginArtifact {
            name: "dir".into(),
            configuration: configuration.into(),
            key: key.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

const QUICK: (u32, Duration) = (50, Duration::from_millis(100));

#[tokio::test]
async fn every_call_against_a_directory_plugin() {
    let d = tempfile::tempdir().unwrap();
    let (root, socket) = (d.path().join("store"), d.path().join("socket"));
    std::fs::create_dir_all(root.join("wf")).unwrap();
    let config = format!("root: {root:?}");
    let art = |key: &str| artifact(&config, key);
    serve(&socket);
    let c = PluginClient::connect("dir", &socket, Duration::ZERO, QUICK)
        .await
        .unwrap();

    let src = d.path().join("out.txt");
    std::fs::write(&src, "hello plugin").unwrap();
    c.save(&src, art("wf/out.txt")).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("wf/out.txt")).unwrap(),
        "hello plugin"
    );

    let back = d.path().join("in.txt");
    c.load(art("wf/out.txt"), &back).await.unwrap();
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "hello plugin");
    assert_eq!(c.read_all(art("wf/out.txt")).await.unwrap(), b"hello plugin");
    // Keys relative to the root, as the plugin lists them.
    assert_eq!(c.list_objects(art("wf")).await.unwrap(), ["wf/out.txt"]);
    assert!(c.is_directory(art("wf")).await.unwrap());
    assert!(!c.is_directory(art("wf/out.txt")).await.unwrap());

    c.delete(art("wf/out.txt")).await.unwrap();
    assert!(!root.join("wf/out.txt").exists());
    // Deleting a missing key succeeds; a plugin's `success: false` is a refusal.
    c.delete(art("wf/out.txt")).await.unwrap();
    let refusing = format!("root: {root:?}\nrefuse: [delete]");
    let e = c.delete(artifact(&refusing, "wf/out.txt")).await.unwrap_err();
    assert!(
        matches!(&e, PluginError::Refused { op: "delete", .. })
            && e.to_string().starts_with("plugin dir delete failed: "),
        "{e}"
    );
    let e = c.load(art("wf/../../etc/passwd"), &back).await.unwrap_err();
    assert!(matches!(e, PluginError::Call { op: "load", .. }), "{e}");
}

#[tokio::test]
async fn the_client_waits_for_a_late_socket_and_gives_up_with_argos_message() {
    let d = tempfile::tempdir().unwrap();
    let socket = d.path().join("socket");
    let late = {
        let socket = socket.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            serve(&socket);
        })
    };
    let c = PluginClient::connect("dir", &socket, Duration::from_secs(2), QUICK).await;
    late.await.unwrap();
    assert!(c.is_ok(), "{:?}", c.err());

    let missing = d.path().join("never");
    let e = PluginClient::connect("dir", &missing, Duration::ZERO, (3, Duration::from_millis(10)))
        .await
        .unwrap_err();
    assert!(
        e.to_string().starts_with("plugin dir expected unix socket at ")
            && e.to_string().contains("does not exist"),
        "{e}"
    );
}
