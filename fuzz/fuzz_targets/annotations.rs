//! `annotations`: the ≤ v3.1 downward-API annotations file (`/argo/podmetadata/annotations`,
//! Kubernetes' `FormatMap` lines `key="Go-quoted value"`) read by `argoexec_core::annotations`.
//!
//! Checks, on any input: no panic in `lookup` (the template annotation, and the first
//! line's own key) or `go_unquote`, and the template found is handed to `Template::from_json`
//! as `load_template` does. Round trip: the input text quoted the way Go may write it
//! (mixing raw characters with `\n`-style, `\xHH`, octal, `\u` and `\U` escapes, chosen
//! from the input) unquotes back to exactly the text, both directly and through `lookup` in
//! a file with other annotations around it.

#![no_main]

use argoexec_core::Template;
use argoexec_core::annotations::{TEMPLATE_ANNOTATION, go_unquote, lookup};
use libfuzzer_sys::fuzz_target;
use std::fmt::Write;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(json) = lookup(text, TEMPLATE_ANNOTATION) {
        let _ = Template::from_json(&json);
    }
    if let Some((key, _)) = text.lines().next().and_then(|l| l.split_once('=')) {
        let _ = lookup(text, key);
    }
    for line in text.lines().take(16) {
        let _ = go_unquote(line.split_once('=').map_or(line, |(_, v)| v));
    }

    let quoted = quote(text, data.len());
    assert_eq!(go_unquote(&quoted).as_deref(), Ok(text), "quoted as {quoted}");
    let file = format!("kubernetes.io/config.source=\"api\"\n{TEMPLATE_ANNOTATION}={quoted}\nz=\"\\n\"\n");
    assert_eq!(lookup(&file, TEMPLATE_ANNOTATION).ok().as_deref(), Some(text));
});

/// A valid Go double-quoted literal of `s` (the escapes `strconv.Unquote` accepts), the
/// spelling of each character picked from `seed` and its position.
fn quote(s: &str, seed: usize) -> String {
    let mut q = String::from("\"");
    for (i, c) in s.chars().enumerate() {
        let pick = (seed.wrapping_mul(31).wrapping_add(i * 7)) % 5;
        let u = c as u32;
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' if pick == 0 => q.push_str("\\t"),
            '\u{7}' => q.push_str("\\a"),
            '\u{8}' => q.push_str("\\b"),
            '\u{c}' => q.push_str("\\f"),
            '\u{b}' => q.push_str("\\v"),
            '\'' if pick == 1 => q.push_str("\\'"),
            c if c.is_ascii() && (c.is_ascii_control() || pick == 2) => {
                let _ = write!(q, "\\x{u:02x}");
            }
            c if c.is_ascii() && pick == 3 => {
                let _ = write!(q, "\\{u:03o}");
            }
            c if !c.is_ascii() && pick == 2 => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(q, "\\x{b:02X}");
                }
            }
            _ if pick == 4 && u <= 0xffff => {
                let _ = write!(q, "\\u{u:04x}");
            }
            c if pick == 4 || (pick == 3 && !c.is_ascii()) => {
                let _ = write!(q, "\\U{u:08X}");
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}
