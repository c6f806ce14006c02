//! The downward API: `fieldRef` values for env vars and downwardAPI volume files, resolved
//! from the pod object the way the kubelet does (maps rendered as sorted `key="value"` lines
//! with Go-quoted values).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

/// The IP the local node reports as `status.hostIP` and `status.podIP` (host networking).
pub const NODE_IP: &str = "127.0.0.1";

/// The value of `field_path` for `pod` on node `node_name`, or `None` when the path is not
/// one the kubelet supports.
pub fn field_value(pod: &Pod, node_name: &str, field_path: &str) -> Option<String> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    if let Some(key) = subscript(field_path, "metadata.labels") {
        return Some(
            meta.labels
                .as_ref()
                .and_then(|m| m.get(key))
                .cloned()
                .unwrap_or_default(),
        );
    }
    if let Some(key) = subscript(field_path, "metadata.annotations") {
        return Some(
            meta.annotations
                .as_ref()
                .and_then(|m| m.get(key))
                .cloned()
                .unwrap_or_default(),
        );
    }
    Some(match field_path {
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_else(|| "default".into()),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "metadata.labels" => render_map(meta.labels.as_ref()),
        "metadata.annotations" => render_map(meta.annotations.as_ref()),
        "spec.nodeName" => node_name.to_string(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_else(|| "default".into()),
        "status.hostIP" | "status.podIP" | "status.hostIPs" | "status.podIPs" => NODE_IP.to_string(),
        _ => return None,
    })
}

/// `metadata.labels['key']` → `key`.
fn subscript<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(prefix)?.strip_prefix("['")?;
    rest.strip_suffix("']")
}

/// A label or annotation map as the kubelet writes it into a downwardAPI file: sorted
/// `key="value"` lines joined by newlines, without a trailing one (`fieldpath.FormatMap`).
pub fn render_map(map: Option<&BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Go's `strconv.Quote`: double quotes, with `"`, `\` and non-printable characters escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod() -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                uid: Some("u-1".into()),
                annotations: Some(BTreeMap::from([
                    ("b".to_string(), "two\nlines \"q\"".to_string()),
                    ("a".to_string(), "x".to_string()),
                ])),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn fields_resolve() {
        let p = pod();
        assert_eq!(field_value(&p, "n", "metadata.name").as_deref(), Some("p"));
        assert_eq!(
            field_value(&p, "n", "metadata.namespace").as_deref(),
            Some("default")
        );
        assert_eq!(field_value(&p, "n", "metadata.uid").as_deref(), Some("u-1"));
        assert_eq!(field_value(&p, "n", "status.hostIP").as_deref(), Some(NODE_IP));
        assert_eq!(field_value(&p, "n", "spec.nodeName").as_deref(), Some("n"));
        assert_eq!(
            field_value(&p, "n", "metadata.annotations['a']").as_deref(),
            Some("x")
        );
        assert_eq!(
            field_value(&p, "n", "metadata.annotations['zz']").as_deref(),
            Some("")
        );
        assert_eq!(field_value(&p, "n", "spec.bogus"), None);
    }

    #[test]
    fn maps_render_sorted_and_quoted() {
        let p = pod();
        assert_eq!(
            field_value(&p, "n", "metadata.annotations").unwrap(),
            "a=\"x\"\nb=\"two\\nlines \\\"q\\\"\""
        );
        assert_eq!(go_quote("é\u{1}"), "\"é\\x01\"");
    }
}
