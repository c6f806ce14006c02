//! Exec over WebSocket with the `channel.k8s.io` protocol family (k8s-wire-protocols §3):
//! subprotocol negotiation by client preference, the greeting frame, `[channel][data]`
//! frames (base64 text frames for the `base64.*` protocols), stdin EOF by `[255, 0]` in
//! v5 only, resize on channel 4, and the final status on channel 3 in the exact shapes
//! client-go parses, then a normal close. The command runs as a Docker exec.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, frame::coding::CloseCode};

use crate::http::{Req, Resp};

/// Subprotocols served, by the server's knowledge (selection follows client order).
const SUPPORTED: [&str; 5] = [
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
];

/// The chosen protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocol {
    /// The wire name.
    pub name: &'static str,
    /// `v5`: stdin close signal.
    pub v5: bool,
    /// v4+: JSON status on channel 3 (else plain text, failure only).
    pub json_status: bool,
    /// Text frames with base64 payloads.
    pub base64: bool,
}

impl Protocol {
    fn of(name: &'static str) -> Self {
        Self {
            name,
            v5: name.starts_with("v5."),
            json_status: name.starts_with("v4.") || name.starts_with("v5."),
            base64: name.contains("base64"),
        }
    }
}

/// Pick the first client-offered protocol the server supports. A request that offers
/// none gets the unnamed binary protocol (`channel.k8s.io` framing), as the CRI server
/// does; one that offers only unknown names gets `None` (403).
pub fn negotiate(req: &Req) -> Option<Option<Protocol>> {
    negotiate_headers(req.headers())
}

fn negotiate_headers(headers: &http::HeaderMap) -> Option<Option<Protocol>> {
    let offered: Vec<String> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|p| p.trim().to_string()))
        .filter(|p| !p.is_empty())
        .collect();
    if offered.is_empty() {
        return Some(None);
    }
    offered
        .iter()
        .find_map(|o| SUPPORTED.iter().find(|s| **s == o.as_str()))
        .map(|s| Some(Protocol::of(s)))
}

/// The `101 Switching Protocols` answer.
pub fn switching(req: &Req, proto: Option<Protocol>) -> Resp {
    let key = req
        .headers()
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|k| k.as_bytes().to_vec())
        .unwrap_or_default();
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key);
    let mut r = Response::new(http_body_util::Empty::new().map_err(|n| match n {}).boxed());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = proto {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(p.name));
    }
    r
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    /// The Docker container.
    pub container_id: String,
    /// argv.
    pub command: Vec<String>,
    /// Attach stdin.
    pub stdin: bool,
    /// Attach stdout.
    pub stdout: bool,
    /// Attach stderr.
    pub stderr: bool,
    /// Allocate a TTY (stderr is then merged into stdout).
    pub tty: bool,
}

/// A status sent on channel 3 instead of running anything (e.g. container not running).
pub type PreError = Value;

/// The InternalError status shape (`code: 500`), without kind/apiVersion.
pub fn internal_status(msg: &str) -> Value {
    json!({"metadata": {}, "status": "Failure", "message": format!("Internal error occurred: {msg}"),
           "reason": "InternalError", "details": {"causes": [{"message": msg}]}, "code": 500})
}

/// Run one exec session over an upgraded connection; `drop_status` (a fault) closes it
/// without the channel-3 status.
pub async fn session(
    req: Req,
    proto: Option<Protocol>,
    docker: Docker,
    spec: ExecSpec,
    pre: Option<PreError>,
    drop_status: bool,
) {
    let upgraded = match hyper::upgrade::on(req).await {
        Ok(u) => u,
        Err(e) => {
            tracing::debug!(error = %e, "exec upgrade failed");
            return;
        }
    };
    let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
    let p = proto.unwrap_or(Protocol::of("channel.k8s.io"));
    let (mut tx, mut rx) = ws.split();
    let frame = |ch: u8, data: &[u8]| -> Message {
        if p.base64 {
            let mut s = String::with_capacity(1 + data.len() * 4 / 3 + 4);
            s.push(char::from(b'0' + ch));
            s.push_str(&STANDARD.encode(data));
            Message::text(s)
        } else {
            let mut v = Vec::with_capacity(1 + data.len());
            v.push(ch);
            v.extend_from_slice(data);
            Message::binary(v)
        }
    };
    let greet = if spec.stdout {
        1
    } else if spec.stderr && !spec.tty {
        2
    } else {
        3
    };
    if tx.send(frame(greet, &[])).await.is_err() {
        return;
    }
    let status = match pre {
        Some(s) => Some(s),
        None => pump(&docker, &spec, p, &mut tx, &mut rx, &frame).await,
    };
    if drop_status {
        tracing::warn!(command = ?spec.command, "fault: the exec closes without its status");
    }
    if let Some(s) = status.filter(|_| !drop_status) {
        let body = if p.json_status {
            serde_json::to_vec(&s).unwrap_or_default()
        } else {
            s["message"].as_str().unwrap_or("").as_bytes().to_vec()
        };
        let _ = tx.send(frame(3, &body)).await;
    }
    let _ = tx
        .send(Message::Close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        })))
        .await;
    // Let the client read and answer the close; give up after a while.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Some(Ok(m)) = rx.next().await {
            if m.is_close() {
                break;
            }
        }
    })
    .await;
}

type Tx = futures::stream::SplitSink<WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>, Message>;
type Rx = futures::stream::SplitStream<WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>>;

/// Bridge the WebSocket and the process; returns the status to send (`None`: the client left).
async fn pump(
    docker: &Docker,
    spec: &ExecSpec,
    p: Protocol,
    tx: &mut Tx,
    rx: &mut Rx,
    frame: &impl Fn(u8, &[u8]) -> Message,
) -> Option<Value> {
    let (out_tx, mut out_rx) = mpsc::channel::<(u8, Bytes)>(16);
    let (in_tx, in_rx) = mpsc::channel::<Input>(16);
    let proc = tokio::spawn(run_process(docker.clone(), spec.clone(), out_tx, in_rx));
    let mut input_open = true;
    loop {
        tokio::select! {
            out = out_rx.recv() => match out {
                Some((ch, data)) => {
                    if tx.send(frame(ch, &data)).await.is_err() {
                        proc.abort();
                        return None;
                    }
                }
                None => break,
            },
            msg = rx.next(), if input_open => match msg {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => {
                    // The client is gone: nobody can read the output or the status.
                    proc.abort();
                    return None;
                }
                Some(Ok(m)) => {
                    let input = match decode_client_message(p, &m) {
                        ClientMessage::Input(i) => i,
                        ClientMessage::Ignored => continue,
                        ClientMessage::InvalidClose => {
                            proc.abort();
                            return Some(internal_status("invalid close signal"));
                        }
                    };
                    if in_tx.send(input).await.is_err() {
                        input_open = false;
                    }
                }
            },
        }
    }
    proc.await.ok()
}

/// What one client WebSocket message means for a running exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessage {
    /// Something for the process.
    Input(Input),
    /// Nothing for the process: empty stdin, an unknown channel, a bad resize or base64
    /// payload, a ping or pong.
    Ignored,
    /// A v5 close signal other than `[255, 0]`: the session ends with an InternalError.
    InvalidClose,
}

/// Decode one client message: `[channel][data]` (binary, or text taken as bytes), or for the
/// `base64.*` protocols a text frame of an ASCII channel digit and base64 data. Channel 0 is
/// stdin, 4 a resize, 255 (v5 only) the stdin close signal. Close frames are the caller's.
pub fn decode_client_message(p: Protocol, m: &Message) -> ClientMessage {
    let data: Vec<u8> = match m {
        Message::Binary(b) => b.to_vec(),
        Message::Text(t) if p.base64 => {
            // Bytes, not chars: a frame starting with a multi-byte character is ignored
            // (found by the ws_frames fuzzer: slicing the str at 1 panicked).
            let Some((&ch, rest)) = t.as_bytes().split_first() else {
                return ClientMessage::Ignored;
            };
            match STANDARD.decode(rest) {
                Ok(mut d) => {
                    d.insert(0, ch.wrapping_sub(b'0'));
                    d
                }
                Err(_) => return ClientMessage::Ignored,
            }
        }
        // Binary protocols take text frames as bytes too (Go's wsstream reads both kinds;
        // the Python client sends str stdin as text).
        Message::Text(t) => t.as_bytes().to_vec(),
        _ => return ClientMessage::Ignored,
    };
    ClientMessage::Input(match data.split_first() {
        Some((0, rest)) if !rest.is_empty() => Input::Stdin(Bytes::copy_from_slice(rest)),
        Some((255, [0])) if p.v5 => Input::Eof,
        Some((255, _)) if p.v5 => return ClientMessage::InvalidClose,
        Some((4, rest)) => match resize_of(rest) {
            Some((w, h)) => Input::Resize(w, h),
            None => return ClientMessage::Ignored,
        },
        _ => return ClientMessage::Ignored,
    })
}

/// What a client sends to a running exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Bytes for stdin.
    Stdin(Bytes),
    /// End of stdin.
    Eof,
    /// A TTY resize (width, height).
    Resize(u16, u16),
}

/// Run `spec` as a Docker exec: output chunks go to `out` as `(1|2, data)`, `input` feeds
/// stdin and resizes. Returns the channel-3 status once the output has ended.
pub async fn run_process(
    docker: Docker,
    spec: ExecSpec,
    out: mpsc::Sender<(u8, Bytes)>,
    mut input: mpsc::Receiver<Input>,
) -> Value {
    let create = CreateExecOptions {
        attach_stdin: Some(spec.stdin),
        attach_stdout: Some(spec.stdout),
        attach_stderr: Some(spec.stderr),
        tty: Some(spec.tty),
        cmd: Some(spec.command.clone()),
        ..Default::default()
    };
    let id = match docker.create_exec(&spec.container_id, create).await {
        Ok(r) => r.id,
        Err(e) => return internal_status(&format!("error executing command in container: {e}")),
    };
    let start = StartExecOptions {
        detach: false,
        tty: spec.tty,
        output_capacity: None,
    };
    let (mut output, mut stdin) = match docker.start_exec(&id, Some(start)).await {
        Ok(StartExecResults::Attached { output, input }) => (output, Some(input)),
        Ok(StartExecResults::Detached) => return internal_status("exec started detached"),
        Err(e) => return internal_status(&format!("error executing command in container: {e}")),
    };
    if !spec.stdin
        && let Some(mut i) = stdin.take()
    {
        let _ = i.shutdown().await;
    }
    let mut first = true;
    let mut start_error = None;
    let mut input_open = true;
    loop {
        tokio::select! {
            o = output.next() => match o {
                None => break,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "exec output ended with an error");
                    break;
                }
                Some(Ok(o)) => {
                    let (ch, msg): (u8, Bytes) = match o {
                        LogOutput::StdOut { message } | LogOutput::Console { message } => (1, message),
                        LogOutput::StdErr { message } => (2, message),
                        LogOutput::StdIn { .. } => continue,
                    };
                    if first && msg.starts_with(b"OCI runtime exec failed") {
                        start_error = Some(String::from_utf8_lossy(&msg).trim().to_string());
                        first = false;
                        continue;
                    }
                    first = false;
                    let wanted = (ch == 1 && spec.stdout) || (ch == 2 && spec.stderr);
                    if wanted && out.send((ch, msg)).await.is_err() {
                        break;
                    }
                }
            },
            i = input.recv(), if input_open => match i {
                None => input_open = false,
                Some(Input::Stdin(b)) => {
                    if let Some(s) = stdin.as_mut()
                        && s.write_all(&b).await.is_err()
                    {
                        stdin = None;
                    }
                }
                Some(Input::Eof) => {
                    if let Some(mut s) = stdin.take() {
                        let _ = s.shutdown().await;
                    }
                }
                Some(Input::Resize(w, h)) => {
                    let o = bollard::query_parameters::ResizeExecOptions { h: i32::from(h), w: i32::from(w) };
                    let _ = docker.resize_exec(&id, o).await;
                }
            },
        }
    }
    if let Some(e) = start_error {
        return internal_status(&format!("error executing command in container: {e}"));
    }
    let code = docker
        .inspect_exec(&id)
        .await
        .ok()
        .and_then(|i| i.exit_code)
        .unwrap_or(-1);
    exit_status(&spec.command, code)
}

/// The channel-3 status for an exit code (success or `NonZeroExitCode`).
pub fn exit_status(command: &[String], code: i64) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
            command.join(" ")
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
    })
}

/// A resize message (`{"Width":…,"Height":…}`, keys case-insensitive).
pub fn resize_of(body: &[u8]) -> Option<(u16, u16)> {
    #[derive(serde::Deserialize)]
    struct Size {
        #[serde(alias = "width", alias = "Width")]
        w: u16,
        #[serde(alias = "height", alias = "Height")]
        h: u16,
    }
    serde_json::from_slice::<Size>(body).ok().map(|s| (s.w, s.h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_client_go_shapes() {
        let ok = serde_json::to_string(&exit_status(&[], 0)).unwrap();
        assert_eq!(ok, r#"{"metadata":{},"status":"Success"}"#);
        let bad = exit_status(&["sh".into(), "-c".into(), "exit 3".into()], 3);
        assert_eq!(bad["reason"], "NonZeroExitCode");
        assert_eq!(bad["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(bad["details"]["causes"][0]["message"], "3");
        assert!(bad.get("code").is_none());
        assert!(
            bad["message"]
                .as_str()
                .unwrap()
                .ends_with("[sh -c exit 3], exit code 3")
        );
        assert_eq!(internal_status("x")["code"], 500);
    }

    #[test]
    fn negotiation_follows_client_preference() {
        let req = |p: Option<&str>| {
            let mut b = http::Request::builder().uri("/exec");
            if let Some(p) = p {
                b = b.header("Sec-WebSocket-Protocol", p);
            }
            b.body(()).unwrap()
        };
        let pick = |p| negotiate_headers(req(p).headers());
        assert_eq!(
            pick(Some("v4.channel.k8s.io, v5.channel.k8s.io"))
                .unwrap()
                .unwrap()
                .name,
            "v4.channel.k8s.io"
        );
        assert!(pick(Some("v5.channel.k8s.io")).unwrap().unwrap().v5);
        assert!(pick(Some("x, y")).is_none());
        assert_eq!(pick(None), Some(None));
    }

    /// A base64 text frame is `[digit][base64]`; one starting with a multi-byte character is
    /// ignored, never a panic (found by the ws_frames fuzzer).
    #[test]
    fn base64_text_frames_are_read_as_bytes() {
        let p = Protocol::of("base64.channel.k8s.io");
        let text = |s: &str| Message::Text(s.into());
        assert!(matches!(
            decode_client_message(p, &text("0aGk=")),
            ClientMessage::Input(Input::Stdin(b)) if &b[..] == b"hi"
        ));
        for odd in ["\u{fffd}aGk=", "é", "€0", ""] {
            assert!(
                matches!(decode_client_message(p, &text(odd)), ClientMessage::Ignored),
                "{odd:?}"
            );
        }
    }
}
