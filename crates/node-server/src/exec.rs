//! Exec over WebSocket with the `channel.k8s.io` protocol family (k8s-wire-protocols §3):
//! subprotocol negotiation by client preference, the greeting frame, `[channel][data]`
//! frames (base64 text frames for the `base64.*` protocols), stdin EOF by `[255, 0]` in
//! v5 only, resize on channel 4, and the final status on channel 3 in the exact shapes
//! client-go parses, then a normal close. The command runs through the node's container
//! runtime ([`argoexec_node::runtime::ContainerRuntime::exec`]), handed to the session as an
//! [`ExecStart`]; nothing here knows which runtime it is.

pub use argoexec_node::runtime::Input;
use argoexec_node::runtime::{ExecEnd, ExecHandle, ExecRequest, OutputStream, RuntimeError};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{SinkExt, StreamExt};
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
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

/// [`negotiate`] on the request's headers.
pub fn negotiate_headers(headers: &http::HeaderMap) -> Option<Option<Protocol>> {
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
    /// The runtime's container ID.
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

impl ExecSpec {
    /// The runtime's request for this exec.
    pub fn request(&self) -> ExecRequest {
        ExecRequest {
            command: self.command.clone(),
            stdin: self.stdin,
            stdout: self.stdout,
            stderr: self.stderr,
            tty: self.tty,
        }
    }
}

/// A status sent on channel 3 instead of running anything (e.g. container not running).
pub type PreError = Value;

/// Starts the process when first polled (a session that answers with a [`PreError`] never
/// polls it): the runtime's `exec`, or a test's fake.
pub type ExecStart = BoxFuture<'static, Result<ExecHandle, RuntimeError>>;

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
    start: ExecStart,
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
    serve(TokioIo::new(upgraded), proto, start, spec, pre, drop_status).await;
}

/// The session on an upgraded byte stream (the WebSocket server side).
pub async fn serve<S>(
    io: S,
    proto: Option<Protocol>,
    start: ExecStart,
    spec: ExecSpec,
    pre: Option<PreError>,
    drop_status: bool,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send,
{
    let ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
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
        None => pump(start, &spec, p, &mut tx, &mut rx, &frame).await,
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

/// Bridge the WebSocket and the process; returns the status to send (`None`: the client left).
async fn pump<S>(
    start: ExecStart,
    spec: &ExecSpec,
    p: Protocol,
    tx: &mut futures::stream::SplitSink<WebSocketStream<S>, Message>,
    rx: &mut futures::stream::SplitStream<WebSocketStream<S>>,
    frame: &impl Fn(u8, &[u8]) -> Message,
) -> Option<Value>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (out_tx, mut out_rx) = mpsc::channel::<(u8, Bytes)>(16);
    let (in_tx, in_rx) = mpsc::channel::<Input>(16);
    let proc = tokio::spawn(run_process(start, spec.command.clone(), out_tx, in_rx));
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

/// Start the process and bridge it: output chunks go to `out` as `(1|2, data)`, `input`
/// feeds stdin and resizes. Returns the channel-3 status once the output has ended.
pub async fn run_process(
    start: ExecStart,
    command: Vec<String>,
    out: mpsc::Sender<(u8, Bytes)>,
    mut input: mpsc::Receiver<Input>,
) -> Value {
    let not_run = |m: &str| internal_status(&format!("error executing command in container: {m}"));
    let mut h = match start.await {
        Ok(h) => h,
        Err(e) => return not_run(&e.engine_message()),
    };
    let mut input_open = true;
    loop {
        tokio::select! {
            o = h.output.recv() => match o {
                None => break,
                Some((stream, data)) => {
                    let ch = match stream {
                        OutputStream::Stdout => 1,
                        OutputStream::Stderr => 2,
                    };
                    if out.send((ch, data)).await.is_err() {
                        break;
                    }
                }
            },
            i = input.recv(), if input_open => match i {
                None => input_open = false,
                Some(i) => {
                    let _ = h.input.send(i).await;
                }
            },
        }
    }
    match h.end.await {
        Ok(ExecEnd::Exited(code)) => exit_status(&command, code),
        Ok(ExecEnd::NotStarted(m)) => not_run(&m),
        Err(_) => internal_status("the exec ended without an exit status"),
    }
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
