//! The built program: its command line, and a run that serves one call and exits 0 on
//! SIGTERM, removing its socket.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use argoexec_artifact_plugin::PluginClient;
use argoexec_artifact_plugin::wire::{Artifact, PluginArtifact};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const BIN: &str = env!("CARGO_BIN_EXE_argoexec-plugin-dir");

/// Wait (off the async threads, for at most 20 s) for `child` to exit; kill it if it does not.
async fn wait(child: std::process::Child) -> Output {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let waited = tokio::task::spawn_blocking(move || child.wait_with_output());
    match tokio::time::timeout(Duration::from_secs(20), waited).await {
        Ok(out) => out.unwrap().unwrap(),
        Err(_) => {
            let _ = kill(pid, Signal::SIGKILL);
            panic!("argoexec-plugin-dir did not exit within 20 s");
        }
    }
}

#[tokio::test]
async fn it_serves_until_sigterm_then_removes_the_socket_and_exits_0() {
    let d = tempfile::tempdir().unwrap();
    let (root, socket) = (d.path().join("store"), d.path().join("plugins/dir/socket"));
    let child = Command::new(BIN)
        .arg(&socket)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    // Polls for the socket for up to 10 s.
    let client =
        PluginClient::connect("dir", &socket, Duration::ZERO, (200, Duration::from_millis(50))).await;
    let called = match client {
        Ok(c) => {
            let src = d.path().join("out.txt");
            std::fs::write(&src, "from the binary").unwrap();
            let art = Artifact {
                name: "out".into(),
                plugin: Some(PluginArtifact {
                    name: "dir".into(),
                    configuration: format!("root: {:?}", root),
                    key: "wf/out.txt".into(),
                    ..Default::default()
                }),
                ..Default::default()
            };
            c.save(&src, art).await.map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    kill(pid, Signal::SIGTERM).unwrap();
    let out = wait(child).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    called.unwrap_or_else(|e| panic!("{e}; stderr: {stderr}"));
    assert_eq!(
        std::fs::read_to_string(root.join("wf/out.txt")).unwrap(),
        "from the binary"
    );
    assert!(out.status.success(), "{:?}; stderr: {stderr}", out.status);
    assert!(!socket.exists(), "the socket is left behind");
    assert!(
        stderr.starts_with("argoexec-plugin-dir: listening on "),
        "{stderr}"
    );
}

#[test]
fn the_command_line_is_one_socket_path() {
    let help = Command::new(BIN).arg("--help").output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("usage: argoexec-plugin-dir <socket-path>"));
    for args in [&[][..], &["a", "b"], &["--port", "1"]] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("usage:"),
            "{args:?}"
        );
    }
}
