//! Exec and logs through the node's runtime (Docker, or containerd with
//! `ARGOEXEC_NODE_RUNTIME=containerd`): output streams kept apart, stdin and its end, exit
//! codes, a command that cannot start, and a followed log that ends with its container.

mod common;

use std::time::Duration;

use argoexec_node::runtime::{ExecEnd, ExecRequest, Input, OutputStream};
use bytes::Bytes;
use common::*;

/// Run `command` in container `id`, feeding `stdin`; returns (stdout, stderr, end).
async fn exec(
    node: &argoexec_node::LocalNode,
    id: &str,
    command: &[&str],
    stdin: Option<&[u8]>,
) -> (String, String, ExecEnd) {
    let request = ExecRequest {
        command: command.iter().map(|s| s.to_string()).collect(),
        stdin: stdin.is_some(),
        stdout: true,
        stderr: true,
        tty: false,
    };
    exec_with(node, id, request, stdin).await
}

async fn exec_with(
    node: &argoexec_node::LocalNode,
    id: &str,
    request: ExecRequest,
    stdin: Option<&[u8]>,
) -> (String, String, ExecEnd) {
    let mut h = node.runtime().exec(id, request).await.expect("exec starts");
    if let Some(data) = stdin {
        h.input
            .send(Input::Stdin(Bytes::copy_from_slice(data)))
            .await
            .unwrap();
        h.input.send(Input::Eof).await.unwrap();
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let collect = async {
        while let Some((stream, data)) = h.output.recv().await {
            match stream {
                OutputStream::Stdout => out.extend_from_slice(&data),
                OutputStream::Stderr => err.extend_from_slice(&data),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), collect)
        .await
        .expect("output ends");
    let end = h.end.await.expect("an end");
    (
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
        end,
    )
}

#[tokio::test]
async fn exec_streams_stdin_exit_codes_and_a_command_that_cannot_start() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("exec", state.path()).await;
    let p = pod(r#"
metadata: {name: ex1}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: main, image: busybox, command: [sh, -c, 'echo started; exec sleep 600']}]
"#);
    let run = node.start_pod(p).await.unwrap();
    let mut st = run.status();
    st.wait_for(|s| s.phase.as_deref() == Some("Running"))
        .await
        .unwrap();
    let id = run.container_id("main").unwrap();

    let (out, err, end) = exec(&node, &id, &["sh", "-c", "echo out; echo err >&2; exit 3"], None).await;
    assert_eq!(
        (out.as_str(), err.as_str(), end),
        ("out\n", "err\n", ExecEnd::Exited(3))
    );

    let stdout_only = ExecRequest {
        command: ["sh", "-c", "echo only-out; echo not-asked >&2"]
            .map(String::from)
            .to_vec(),
        stdout: true,
        ..Default::default()
    };
    let (out, err, end) = exec_with(&node, &id, stdout_only, None).await;
    assert_eq!(
        (out.as_str(), err.as_str(), end),
        ("only-out\n", "", ExecEnd::Exited(0))
    );

    let (out, _, end) = exec(&node, &id, &["cat"], Some(b"from stdin\n")).await;
    assert_eq!((out.as_str(), end), ("from stdin\n", ExecEnd::Exited(0)));

    let (_, _, end) = exec(&node, &id, &["no-such-binary"], None).await;
    match end {
        ExecEnd::NotStarted(m) => assert!(m.contains("no-such-binary"), "{m}"),
        ExecEnd::Exited(c) => assert_ne!(c, 0, "a command that does not exist cannot succeed"),
    }

    // A followed log ends when its container does.
    let mut logs = node.runtime().logs(
        &id,
        argoexec_node::runtime::LogRequest {
            follow: true,
            ..Default::default()
        },
    );
    run.stop(Duration::from_secs(1));
    let mut text = Vec::new();
    let read = async {
        use futures::StreamExt;
        while let Some(chunk) = logs.next().await {
            text.extend_from_slice(&chunk.unwrap());
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the followed log ends with the container");
    assert_eq!(String::from_utf8_lossy(&text), "started\n");
    finish(&node, run, state.path()).await;
}
