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

#[tokio::test]
async fn a_socket_nobody_listens_on_fails_within_the_time_out_naming_the_refusal() {
    let d = tempfile::tempdir().unwrap();
    let socket = d.path().join("socket");
    // A socket file left by a plugin that bound and went away.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let started = std::time::Instant::now();
    let e = PluginClient::connect("dir", &socket, Duration::from_millis(300), QUICK)
        .await
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(300), "{e}");
    match &e {
        PluginError::Connect { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
        }
        other => panic!("{other}"),
    }
    let text = e.to_string();
    assert!(
        text.starts_with("plugin dir: cannot connect to ") && text.contains("within 300ms"),
        "{text}"
    );
}

#[tokio::test]
async fn a_plugin_that_listens_after_its_socket_appears_is_reached() {
    let d = tempfile::tempdir().unwrap();
    let (root, socket) = (d.path().join("store"), d.path().join("socket"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    // The file exists but refuses, as between a plugin's bind and listen. `join!` polls
    // the client first: its first dial is refused (a Unix connect answers at once), and
    // only then does the plugin replace the file and listen.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let connecting = PluginClient::connect("dir", &socket, Duration::from_secs(30), QUICK);
    let serving = async { serve(&socket) };
    let (c, ()) = tokio::join!(connecting, serving);
    let c = c.unwrap();
    let config = format!("root: {root:?}");
    assert!(c.is_directory(artifact(&config, "sub")).await.unwrap());
}
