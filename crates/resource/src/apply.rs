//! `apply`: kubectl's client-side apply, or server-side apply with `--server-side`.
//!
//! Client-side: the object is created when absent, carrying the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (the manifest as compact
//! JSON, without that annotation). When it exists, a three-way patch is computed from the
//! last applied configuration (original), the manifest (modified) and the live object
//! (current): every field of the manifest that differs from the live object is set, every
//! field of the last applied configuration that the manifest dropped is deleted (`null`),
//! and the annotation is updated; nothing is sent when the patch is empty. The patch is a
//! JSON merge patch for every kind — kubectl sends a strategic three-way patch for built-in
//! kinds, which merges lists by key (containers by name) where a merge patch replaces a
//! changed list whole. The result is the same object whenever the manifest lists every
//! element, which an applied manifest does.
//!
//! Server-side (`--server-side`): `PATCH` with `application/apply-patch+yaml`, field manager
//! `--field-manager` or `argoexec`, `force` from `--force-conflicts`.

use kube::Client;
use kube::api::Patch;
use serde_json::{Map, Value};

use crate::ResourceError;
use crate::action::{api_err, patch_params, to_dynamic, to_value};
use crate::flags::Flags;
use crate::retry::{status, transient};
use crate::target::ObjectRef;

/// The annotation kubectl keeps the last applied configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The field manager of server-side apply when `--field-manager` is not given.
pub const FIELD_MANAGER: &str = "argoexec";

/// Set the last-applied annotation of `doc` to `doc` itself (compact JSON, sorted keys,
/// without the annotation).
pub fn annotate_last_applied(doc: &mut Value) {
    let mut clean = doc.clone();
    if let Some(ann) = clean
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        ann.remove(LAST_APPLIED);
        if ann.is_empty()
            && let Some(meta) = clean.pointer_mut("/metadata").and_then(Value::as_object_mut)
        {
            meta.remove("annotations");
        }
    }
    let text = crate::gojson::marshal(&clean);
    let meta = doc
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| Value::Object(Map::new())));
    if let Some(Value::Object(meta)) = meta {
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(ann) = ann {
            ann.insert(LAST_APPLIED.into(), Value::String(text));
        }
    }
}

/// Fields of `modified` that differ from `current` (objects compared recursively, anything
/// else replaced whole).
fn additions(current: &Value, modified: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let Value::Object(m) = modified else {
        return out;
    };
    for (k, mv) in m {
        match (current.get(k), mv) {
            (Some(cv @ Value::Object(_)), Value::Object(_)) => {
                let sub = additions(cv, mv);
                if !sub.is_empty() {
                    out.insert(k.clone(), Value::Object(sub));
                }
            }
            (Some(cv), _) if cv == mv => {}
            _ => {
                out.insert(k.clone(), mv.clone());
            }
        }
    }
    out
}

/// Deletions: fields of `original` that `modified` no longer has, as `null`.
fn deletions(original: &Value, modified: &Value, into: &mut Map<String, Value>) {
    let (Value::Object(o), Value::Object(m)) = (original, modified) else {
        return;
    };
    for (k, ov) in o {
        match m.get(k) {
            None => {
                into.insert(k.clone(), Value::Null);
            }
            Some(mv @ Value::Object(_)) if ov.is_object() => {
                let entry = into.entry(k.clone()).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(sub) = entry {
                    deletions(ov, mv, sub);
                }
                if entry.as_object().is_some_and(Map::is_empty) {
                    into.remove(k);
                }
            }
            Some(_) => {}
        }
    }
}

/// kubectl's three-way JSON merge patch.
pub fn three_way(original: &Value, modified: &Value, current: &Value) -> Value {
    let mut patch = additions(current, modified);
    deletions(original, modified, &mut patch);
    Value::Object(patch)
}

/// Apply `doc` to `obj`.
///
/// # Errors
/// [`ResourceError::Api`].
pub async fn apply(
    client: &Client,
    obj: &ObjectRef,
    doc: &Value,
    flags: &Flags,
) -> Result<Value, ResourceError> {
    let api = obj.api(client);
    if flags.server_side {
        let mut pp = patch_params(flags);
        pp.field_manager = Some(
            flags
                .field_manager
                .clone()
                .unwrap_or_else(|| FIELD_MANAGER.into()),
        );
        pp.force = flags.force_conflicts;
        let p = Patch::Apply(doc);
        let applied = transient(|| api.patch(&obj.name, &pp, &p))
            .await
            .map_err(api_err("apply", obj))?;
        return Ok(to_value(&applied));
    }
    let mut modified = doc.clone();
    annotate_last_applied(&mut modified);
    let current = match transient(|| api.get(&obj.name)).await {
        Ok(c) => to_value(&c),
        Err(e) if status(&e) == Some(404) => {
            let body = to_dynamic(&modified, obj)?;
            let pp = kube::api::PostParams {
                dry_run: flags.dry_run == crate::flags::DryRun::Server,
                field_manager: flags.field_manager.clone(),
            };
            let created = transient(|| api.create(&pp, &body))
                .await
                .map_err(api_err("create", obj))?;
            tracing::info!(object = %obj.describe(), "created");
            return Ok(to_value(&created));
        }
        Err(e) => return Err(api_err("get", obj)(e)),
    };
    let original = current
        .pointer(&format!(
            "/metadata/annotations/{}",
            LAST_APPLIED.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Null);
    let patch = three_way(&original, &modified, &current);
    if patch.as_object().is_some_and(Map::is_empty) {
        tracing::info!(object = %obj.describe(), "unchanged");
        return Ok(current);
    }
    let pp = patch_params(flags);
    let p = Patch::Merge(&patch);
    let patched = transient(|| api.patch(&obj.name, &pp, &p))
        .await
        .map_err(api_err("apply", obj))?;
    tracing::info!(object = %obj.describe(), "configured");
    Ok(to_value(&patched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_applied_is_the_manifest_without_itself() {
        let mut d = json!({"kind": "ConfigMap", "metadata": {"name": "a", "annotations": {LAST_APPLIED: "old"}}, "data": {"k": "<v>"}});
        annotate_last_applied(&mut d);
        let text = d["metadata"]["annotations"][LAST_APPLIED].as_str().unwrap();
        assert_eq!(
            text,
            r#"{"data":{"k":"\u003cv\u003e"},"kind":"ConfigMap","metadata":{"name":"a"}}"#
        );
        let mut bare = json!({"kind": "X"});
        annotate_last_applied(&mut bare);
        assert_eq!(bare["metadata"]["annotations"][LAST_APPLIED], r#"{"kind":"X"}"#);
    }

    #[test]
    fn three_way_sets_changes_and_deletes_dropped_fields() {
        let original = json!({"data": {"a": "1", "b": "2"}, "metadata": {"labels": {"x": "1"}}});
        let modified = json!({"data": {"a": "1", "c": "3"}, "metadata": {"labels": {"x": "1"}}});
        let current = json!({"data": {"a": "9", "b": "2", "own": "kept"}, "metadata": {"labels": {"x": "1"}, "uid": "u"}});
        let p = three_way(&original, &modified, &current);
        assert_eq!(p, json!({"data": {"a": "1", "b": null, "c": "3"}}));
        // Nothing changed: an empty patch.
        assert_eq!(
            three_way(&modified, &modified, &current_with(&modified)),
            json!({})
        );
        // Lists are replaced whole when they differ.
        let p = three_way(&Value::Null, &json!({"l": [1, 2]}), &json!({"l": [1]}));
        assert_eq!(p, json!({"l": [1, 2]}));
    }

    fn current_with(m: &Value) -> Value {
        let mut c = m.clone();
        c["status"] = json!({"x": 1});
        c
    }
}
