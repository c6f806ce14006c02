//! Exec over SPDY/3.1 with `v4.channel.k8s.io` (k8s-wire-protocols §3.6), the protocol of
//! kubectl before 1.30 and of client-go's SPDY executor. Only what those clients use:
//!
//! - the client opens one stream per channel, in client-go's fixed order — error, then stdin,
//!   stdout, stderr (each when requested; stderr not with a TTY), then resize (TTY only) —
//!   and the server replies to each; streams are mapped by that order (the requested
//!   channels are known from the query), so the client's compressed header blocks need not
//!   be inflated (they use zlib with SPDY's preset dictionary);
//! - the server's own header blocks are empty name/value lists in stored (uncompressed)
//!   deflate blocks (each ended by a sync flush) of one zlib stream without a dictionary,
//!   which any SPDY zlib reader accepts;
//! - data frames carry the channels; FIN on stdin is EOF; PINGs are echoed; SETTINGS,
//!   WINDOW_UPDATE and the rest are ignored (client-go does not enforce flow control);
//! - the status goes on the error stream as JSON (`Success`, `NonZeroExitCode`, or
//!   `InternalError`), then every stream is finished.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::exec::{ExecSpec, ExecStart, Input, internal_status, resize_of, run_process};
use crate::http::{Req, Resp};

/// The only SPDY stream protocol served.
pub const PROTOCOL: &str = "v4.channel.k8s.io";

/// Whether the request asks for a SPDY upgrade.
pub fn is_spdy(req: &Req) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("spdy/3"))
}

/// Whether the client offers `v4.channel.k8s.io` in `X-Stream-Protocol-Version`.
pub fn offers_v4(req: &Req) -> bool {
    req.headers()
        .get_all("x-stream-protocol-version")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == PROTOCOL)
}

/// The `101 Switching Protocols` answer.
pub fn switching() -> Resp {
    let mut r = Response::new(http_body_util::Empty::new().map_err(|n| match n {}).boxed());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    h.insert("x-stream-protocol-version", HeaderValue::from_static(PROTOCOL));
    r
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Error,
    Stdin,
    Stdout,
    Stderr,
    Resize,
}

fn expected(spec: &ExecSpec) -> Vec<Role> {
    let mut v = vec![Role::Error];
    if spec.stdin {
        v.push(Role::Stdin);
    }
    if spec.stdout {
        v.push(Role::Stdout);
    }
    if spec.stderr && !spec.tty {
        v.push(Role::Stderr);
    }
    if spec.tty {
        v.push(Role::Resize);
    }
    v
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![0x80, 0x03];
    f.extend_from_slice(&kind.to_be_bytes());
    f.push(flags);
    f.extend_from_slice(&len.to_be_bytes()[1..]);
    f.extend_from_slice(payload);
    f
}

fn data(stream: u32, fin: bool, payload: &[u8]) -> Vec<u8> {
    let mut f = (stream & 0x7fff_ffff).to_be_bytes().to_vec();
    f.push(u8::from(fin));
    f.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    f.extend_from_slice(payload);
    f
}

/// The server's header block for a reply: zero name/value pairs in a stored deflate block
/// and a sync-flush marker, preceded by the zlib header on the first block of the connection.
fn empty_headers(first: bool) -> Vec<u8> {
    let mut b = Vec::new();
    if first {
        b.extend_from_slice(&[0x78, 0x01]);
    }
    b.extend_from_slice(&[0x00, 0x04, 0x00, 0xfb, 0xff, 0, 0, 0, 0]);
    // The empty stored block of a sync flush: inflaters (Go's among them) hand out what
    // they have at it instead of reading on into the next frame.
    b.extend_from_slice(&[0x00, 0x00, 0x00, 0xff, 0xff]);
    b
}

/// Largest data payload per frame.
const MAX_DATA: usize = 32 * 1024;

/// Run one exec session over an upgraded SPDY connection.
pub async fn session(req: Req, start: ExecStart, spec: ExecSpec, pre: Option<Value>) {
    let upgraded = match hyper::upgrade::on(req).await {
        Ok(u) => u,
        Err(e) => {
            tracing::debug!(error = %e, "SPDY upgrade failed");
            return;
        }
    };
    let (mut rd, mut wr) = tokio::io::split(TokioIo::new(upgraded));
    let (ftx, mut frx) = mpsc::channel::<Vec<u8>>(32);
    let writer = tokio::spawn(async move {
        while let Some(f) = frx.recv().await {
            if wr.write_all(&f).await.is_err() || wr.flush().await.is_err() {
                return;
            }
        }
        let _ = wr.flush().await;
        let _ = wr.shutdown().await;
    });
    let roles = expected(&spec);
    let mut ids: Vec<(u32, Role)> = Vec::new();
    let (in_tx, in_rx) = mpsc::channel::<Input>(16);
    let (out_tx, mut out_rx) = mpsc::channel::<(u8, Bytes)>(16);
    let mut in_rx = Some(in_rx);
    let mut start = Some(start);
    let mut out_tx = Some(out_tx);
    let mut proc: Option<tokio::task::JoinHandle<Value>> = None;
    let mut status: Option<Value> = None;
    let deadline = tokio::time::sleep(std::time::Duration::from_secs(30));
    tokio::pin!(deadline);
    let id_of = |ids: &[(u32, Role)], r: Role| ids.iter().find(|(_, x)| *x == r).map(|(i, _)| *i);
    let mut reader = FrameReader;
    loop {
        tokio::select! {
            () = &mut deadline, if ids.len() < roles.len() => {
                tracing::debug!("SPDY exec: timed out waiting for the client to create streams");
                break;
            }
            frame = reader.next(&mut rd) => {
                let Some(frame) = frame else { tracing::debug!("SPDY: connection ended"); break };
                tracing::debug!(frame = frame.describe(), "SPDY frame");
                match frame {
                    Frame::SynStream(id) => {
                        let first = ids.is_empty();
                        let mut p = id.to_be_bytes().to_vec();
                        p.extend_from_slice(&empty_headers(first));
                        if ftx.send(control(2, 0, &p)).await.is_err() { break; }
                        if let Some(role) = roles.get(ids.len()).copied() {
                            ids.push((id, role));
                        }
                        if ids.len() == roles.len() && proc.is_none() && status.is_none() {
                            match &pre {
                                Some(s) => status = Some(s.clone()),
                                None => {
                                    if let (Some(rx), Some(tx), Some(start)) = (in_rx.take(), out_tx.take(), start.take()) {
                                        proc = Some(tokio::spawn(run_process(start, spec.command.clone(), tx, rx)));
                                    }
                                }
                            }
                            if status.is_some() { break; }
                        }
                    }
                    Frame::Ping(p) => { let _ = ftx.send(control(6, 0, &p)).await; }
                    Frame::Data { stream, fin, payload } => {
                        match ids.iter().find(|(i, _)| *i == stream).map(|(_, r)| *r) {
                            Some(Role::Stdin) => {
                                if !payload.is_empty() { let _ = in_tx.send(Input::Stdin(payload)).await; }
                                if fin { let _ = in_tx.send(Input::Eof).await; }
                            }
                            Some(Role::Resize) => {
                                if let Some((w, h)) = resize_of(&payload) {
                                    let _ = in_tx.send(Input::Resize(w, h)).await;
                                }
                            }
                            _ => {}
                        }
                    }
                    Frame::GoAway => break,
                    Frame::Other => {}
                }
            }
            out = out_rx.recv(), if proc.is_some() => match out {
                Some((ch, bytes)) => {
                    let role = if ch == 1 { Role::Stdout } else { Role::Stderr };
                    if let Some(id) = id_of(&ids, role) {
                        for chunk in bytes.chunks(MAX_DATA) {
                            if ftx.send(data(id, false, chunk)).await.is_err() { break; }
                        }
                    }
                }
                None => {
                    if let Some(p) = proc.take() {
                        status = Some(p.await.unwrap_or_else(|e| internal_status(&e.to_string())));
                    }
                    break;
                }
            },
        }
    }
    if let Some(p) = proc.take() {
        p.abort();
    }
    if let Some(s) = status {
        if let Some(id) = id_of(&ids, Role::Error) {
            let _ = ftx
                .send(data(id, false, &serde_json::to_vec(&s).unwrap_or_default()))
                .await;
        }
        for (id, _) in &ids {
            let _ = ftx.send(data(*id, true, &[])).await;
        }
        // GOAWAY (last stream, status OK), then let the client finish reading and close.
        let last = ids.last().map(|(i, _)| *i).unwrap_or(0);
        let mut g = last.to_be_bytes().to_vec();
        g.extend_from_slice(&0u32.to_be_bytes());
        let _ = ftx.send(control(7, 0, &g)).await;
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while reader.next(&mut rd).await.is_some() {}
        })
        .await;
    }
    drop(ftx);
    let _ = writer.await;
}

enum Frame {
    SynStream(u32),
    Ping(Vec<u8>),
    Data { stream: u32, fin: bool, payload: Bytes },
    GoAway,
    Other,
}

impl Frame {
    fn describe(&self) -> String {
        match self {
            Self::SynStream(id) => format!("SYN_STREAM {id}"),
            Self::Ping(_) => "PING".into(),
            Self::Data { stream, fin, payload } => format!("DATA {stream} fin={fin} len={}", payload.len()),
            Self::GoAway => "GOAWAY".into(),
            Self::Other => "other".into(),
        }
    }
}

/// Read `bytes` as a client's SPDY stream with the session's frame reader and describe each
/// frame (`SYN_STREAM 1`, `PING`, `DATA 3 fin=true len=2`, …), up to the end or the first
/// malformed frame. For tests and fuzzing.
#[doc(hidden)]
pub fn describe_frames(mut bytes: &[u8]) -> Vec<String> {
    let mut reader = FrameReader;
    let mut out = Vec::new();
    while let Some(f) = futures::executor::block_on(reader.next(&mut bytes)) {
        out.push(f.describe());
    }
    out
}

#[derive(Default)]
struct FrameReader;

impl FrameReader {
    /// The next frame; `None` at EOF or on a malformed frame.
    async fn next<R: tokio::io::AsyncRead + Unpin>(&mut self, rd: &mut R) -> Option<Frame> {
        let mut h = [0u8; 8];
        rd.read_exact(&mut h).await.ok()?;
        let len = u32::from_be_bytes([0, h[5], h[6], h[7]]) as usize;
        if len > 16 * 1024 * 1024 {
            return None;
        }
        let mut payload = vec![0u8; len];
        rd.read_exact(&mut payload).await.ok()?;
        if h[0] & 0x80 == 0 {
            let stream = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) & 0x7fff_ffff;
            return Some(Frame::Data {
                stream,
                fin: h[4] & 0x01 != 0,
                payload: Bytes::from(payload),
            });
        }
        let kind = u16::from_be_bytes([h[2], h[3]]);
        Some(match kind {
            1 if payload.len() >= 4 => Frame::SynStream(
                u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff,
            ),
            6 => Frame::Ping(payload),
            7 => Frame::GoAway,
            _ => Frame::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_encode_as_spdy3() {
        assert_eq!(
            control(6, 0, &[0, 0, 0, 1]),
            vec![0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]
        );
        assert_eq!(data(3, true, b"hi"), vec![0, 0, 0, 3, 1, 0, 0, 2, b'h', b'i']);
        assert_eq!(&empty_headers(true)[..2], &[0x78, 0x01]);
        assert_eq!((0x78u32 * 256 + 0x01) % 31, 0, "a valid zlib header");
    }

    #[test]
    fn frames_decode_until_the_end_or_a_malformed_frame() {
        let mut wire = data(3, true, b"hi");
        wire.extend(control(6, 0, &[0, 0, 0, 1]));
        wire.extend(control(1, 0, &[0, 0, 0, 5, 0, 0, 0, 0]));
        wire.extend([0, 0, 0, 1, 0, 0, 0, 9, b'x']); // truncated payload
        assert_eq!(
            describe_frames(&wire),
            ["DATA 3 fin=true len=2", "PING", "SYN_STREAM 5"]
        );
    }

    #[test]
    fn stream_order_follows_client_go() {
        let spec = |stdin, tty| ExecSpec {
            stdin,
            stdout: true,
            stderr: true,
            tty,
            ..Default::default()
        };
        assert_eq!(
            expected(&spec(false, false)),
            [Role::Error, Role::Stdout, Role::Stderr]
        );
        assert_eq!(
            expected(&spec(true, true)),
            [Role::Error, Role::Stdin, Role::Stdout, Role::Resize]
        );
    }
}
