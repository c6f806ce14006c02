//! `ws_frames`: exec channel frames, both ends.
//!
//! Client side (`argoexec-kube`, kubelet and k8sapi backends): the input is a sequence of
//! `[len][channel][data…]` frames as an exec WebSocket delivers them; channel 1 is stdout,
//! 2 stderr, and the first channel-3 frame is decoded as a `Status` the way kube-rs does
//! (a status that does not decode ends the stream without one). `exec::judge` then gives the
//! verdict. Checks: no panic, and the verdict follows the rule of crates/kube/src/exec.rs —
//! `Success` is the only success, no status is `NoStatus`, an `ExitCode` cause is the code.
//!
//! Server side (`argoexec-node-server`): the same bytes as client messages
//! (`[len][kind][payload…]`, kind picking text or binary) for one of the five
//! `channel.k8s.io` protocols, through `exec::decode_client_message`, and as a client's SPDY
//! stream through the SPDY session's frame reader (`spdy::describe_frames`). Checks: no
//! panic; stdin is never empty; the close signal only exists in v5.

#![no_main]

use argoexec_kube::exec::{ExecFailure, judge};
use argoexec_node_server::exec::{ClientMessage, Input, Protocol, decode_client_message};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use libfuzzer_sys::fuzz_target;
use tokio_tungstenite::tungstenite::Message;

const PROTOCOLS: [(&str, bool, bool, bool); 5] = [
    ("v5.channel.k8s.io", true, true, false),
    ("v4.channel.k8s.io", false, true, false),
    ("v4.base64.channel.k8s.io", false, true, true),
    ("channel.k8s.io", false, false, false),
    ("base64.channel.k8s.io", false, false, true),
];

/// Split `[len][body…]` records; a short last record takes what is left.
fn records(mut data: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let (&len, rest) = data.split_first()?;
        let n = usize::from(len).min(rest.len());
        let (rec, tail) = rest.split_at(n);
        data = tail;
        Some(rec)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    client(body);

    let (name, v5, json_status, base64) = PROTOCOLS[usize::from(sel) % PROTOCOLS.len()];
    let p = Protocol {
        name,
        v5,
        json_status,
        base64,
    };
    for rec in records(body) {
        let Some((&kind, payload)) = rec.split_first() else {
            continue;
        };
        let m = if kind & 1 == 0 {
            Message::binary(payload.to_vec())
        } else {
            Message::text(String::from_utf8_lossy(payload).into_owned())
        };
        match decode_client_message(p, &m) {
            ClientMessage::Input(Input::Stdin(b)) => assert!(!b.is_empty(), "empty stdin"),
            ClientMessage::Input(Input::Eof) | ClientMessage::InvalidClose => {
                assert!(p.v5, "a close signal outside v5")
            }
            ClientMessage::Input(Input::Resize(..)) | ClientMessage::Ignored => {}
        }
    }

    let _ = argoexec_node_server::spdy::describe_frames(body);
});

fn client(body: &[u8]) {
    let mut stderr = Vec::new();
    let mut stdout_len = 0usize;
    let mut status: Option<Option<Status>> = None;
    for rec in records(body) {
        match rec.split_first() {
            Some((1, d)) => stdout_len += d.len(),
            Some((2, d)) => stderr.extend_from_slice(d),
            Some((3, d)) if status.is_none() => status = Some(serde_json::from_slice(d).ok()),
            _ => {}
        }
    }
    let _ = stdout_len;
    let status = status.flatten();
    let success = status
        .as_ref()
        .is_some_and(|s| s.status.as_deref() == Some("Success"));
    let had_status = status.is_some();
    let code = status.as_ref().and_then(|s| {
        s.details
            .as_ref()?
            .causes
            .iter()
            .flatten()
            .find(|c| c.reason.as_deref() == Some("ExitCode"))?
            .message
            .as_deref()?
            .trim()
            .parse::<i32>()
            .ok()
    });
    match judge(status, &stderr) {
        Ok(()) => assert!(success, "success without a Success status"),
        Err(e) => {
            assert!(!success, "a Success status judged as {e:?}");
            let _ = e.to_string();
            let _ = e.is_not_runnable();
            match e {
                ExecFailure::NoStatus => assert!(!had_status),
                ExecFailure::NonZero { code: c, stderr } => {
                    assert_eq!(Some(c), code);
                    assert!(stderr.len() <= 4 * 1024, "stderr kept whole");
                }
                ExecFailure::Failed { .. } => assert!(had_status && code.is_none()),
                other => panic!("judge gave {other:?}"),
            }
        }
    }
}
