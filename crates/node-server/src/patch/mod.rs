//! PATCH bodies: JSON merge patch (RFC 7386, here), JSON patch (RFC 6902, [`json`]),
//! strategic merge patch for built-in types ([`strategic`], with the fields' patch
//! strategies in [`strategy`]) and server-side apply ([`apply`]).

pub mod apply;
pub mod json;
pub mod strategic;
pub mod strategy;

pub use json::json_patch;
pub use strategic::strategic;

use serde_json::{Map, Value};

/// The patch formats, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/json-patch+json`.
    Json,
    /// `application/apply-patch+yaml` (server-side apply, [`apply`]).
    Apply,
}

impl PatchType {
    /// The type of a `Content-Type` header value.
    pub fn of(content_type: &str) -> Option<Self> {
        match content_type.split(';').next().unwrap_or("").trim() {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/json-patch+json" => Some(Self::Json),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// RFC 7386: `null` removes, objects merge recursively, anything else replaces.
pub fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_adds_replaces_and_deletes() {
        let mut t = json!({"metadata": {"annotations": {"a": "1", "b": "2"}}, "spec": {"x": [1, 2]}});
        merge(
            &mut t,
            &json!({"metadata": {"annotations": {"a": null, "c": "3"}}, "spec": {"x": [3]}}),
        );
        assert_eq!(
            t,
            json!({"metadata": {"annotations": {"b": "2", "c": "3"}}, "spec": {"x": [3]}})
        );
    }

    #[test]
    fn content_types() {
        assert_eq!(
            PatchType::of("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(PatchType::of("application/json"), None);
    }
}
