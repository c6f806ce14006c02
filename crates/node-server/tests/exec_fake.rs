//! The exec wire protocol (channel.k8s.io over WebSocket) against a fake runtime: an
//! [`ExecHandle`] driven by the test, so framing, stdin, the close signal and the channel-3
//! status are checked without any container engine.

use std::time::Duration;

use argoexec_node::runtime::{ExecEnd, ExecHandle, Input, OutputStream, RuntimeError};
use argoexec_node_server::exec::{ExecSpec, ExecStart, Protocol, negotiate_headers, serve};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

type Client = WebSocketStream<tokio::io::DuplexStream>;

fn protocol(name: &str) -> Option<Protocol> {
    let mut headers = http::HeaderMap::new();
    headers.insert("Sec-WebSocket-Protocol", name.parse().unwrap());
    negotiate_headers(&headers).flatten()
}

fn spec(command: &[&str], stdin: bool) -> ExecSpec {
    ExecSpec {
        container_id: "fake".into(),
        command: command.iter().map(|s| s.to_string()).collect(),
        stdin,
        stdout: true,
        stderr: true,
        tty: false,
    }
}

/// Serve one session on an in-memory connection; returns the client's end.
async fn session(proto: Option<Protocol>, start: ExecStart, spec: ExecSpec) -> Client {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(serve(server_io, proto, start, spec, None, false));
    WebSocketStream::from_raw_socket(client_io, Role::Client, None).await
}

/// Every binary frame until the server closes, as `(channel, payload)`.
async fn frames(client: &mut Client) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let read = async {
        while let Some(Ok(m)) = client.next().await {
            match m {
                Message::Binary(b) => out.push((b[0], b[1..].to_vec())),
                Message::Close(_) => break,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the session ends");
    out
}

/// A fake process that echoes stdin to stdout until EOF (when `reads_stdin`), writes
/// `err` on stderr, and exits with `code`.
fn echo(code: i64, reads_stdin: bool) -> ExecStart {
    Box::pin(async move {
        let (handle, mut d) = ExecHandle::channels();
        tokio::spawn(async move {
            while reads_stdin && let Some(i) = d.input.recv().await {
                match i {
                    Input::Stdin(b) => d.output.send((OutputStream::Stdout, b)).await.unwrap(),
                    Input::Eof => break,
                    Input::Resize(..) => {}
                }
            }
            d.output
                .send((OutputStream::Stderr, Bytes::from_static(b"err")))
                .await
                .unwrap();
            drop(d.output);
            let _ = d.end.send(ExecEnd::Exited(code));
        });
        Ok::<_, RuntimeError>(handle)
    })
}

#[tokio::test]
async fn v5_stdin_is_echoed_and_the_close_signal_ends_it_with_success() {
    let mut c = session(protocol("v5.channel.k8s.io"), echo(0, true), spec(&["cat"], true)).await;
    c.send(Message::binary(b"\x00hello".to_vec())).await.unwrap();
    c.send(Message::binary(vec![255, 0])).await.unwrap();
    let got = frames(&mut c).await;
    assert_eq!(got[0], (1, vec![]), "the greeting names stdout");
    assert!(got.contains(&(1, b"hello".to_vec())), "{got:?}");
    assert!(got.contains(&(2, b"err".to_vec())), "{got:?}");
    let (ch, status) = got.last().unwrap();
    assert_eq!(*ch, 3);
    let status: serde_json::Value = serde_json::from_slice(status).unwrap();
    assert_eq!(status["status"], "Success", "{status}");
}

#[tokio::test]
async fn a_non_zero_exit_is_a_non_zero_exit_code_status() {
    let mut c = session(
        protocol("v4.channel.k8s.io"),
        echo(3, false),
        spec(&["sh", "-c", "exit 3"], false),
    )
    .await;
    let got = frames(&mut c).await;
    let status: serde_json::Value = serde_json::from_slice(&got.last().unwrap().1).unwrap();
    assert_eq!(status["reason"], "NonZeroExitCode", "{status}");
    assert_eq!(status["details"]["causes"][0]["message"], "3");
}

#[tokio::test]
async fn a_process_that_cannot_start_is_an_internal_error_with_the_runtimes_words() {
    let start: ExecStart = Box::pin(async {
        let (handle, d) = ExecHandle::channels();
        drop(d.output);
        let _ = d.end.send(ExecEnd::NotStarted(
            "exec: \"nope\": executable file not found".into(),
        ));
        Ok::<_, RuntimeError>(handle)
    });
    let mut c = session(protocol("v4.channel.k8s.io"), start, spec(&["nope"], false)).await;
    let got = frames(&mut c).await;
    let status: serde_json::Value = serde_json::from_slice(&got.last().unwrap().1).unwrap();
    assert_eq!(status["code"], 500, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("error executing command in container: exec: \"nope\""),
        "{message}"
    );
}

#[tokio::test]
async fn the_unnamed_protocol_sends_a_failure_as_plain_text() {
    let mut c = session(None, echo(2, false), spec(&["false"], false)).await;
    let got = frames(&mut c).await;
    let (ch, text) = got.last().unwrap();
    assert_eq!(*ch, 3);
    let text = String::from_utf8_lossy(text);
    assert!(text.ends_with("[false], exit code 2"), "{text}");
}
