//! PATCH bodies: JSON merge patch (RFC 7386), strategic merge patch (built-in types only:
//! maps merge like a merge patch, lists of the pod spec that have a merge key — containers,
//! env, volumes, volumeMounts, ports… — merge element by key, `$patch: delete|replace`
//! directives honoured, other lists replaced), and JSON patch (RFC 6902).

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
    /// `application/apply-patch+yaml` (server-side apply; treated as a merge).
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

/// Merge keys of lists in the pod spec (the `patchMergeKey` of the Go types).
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers" | "initContainers" | "ephemeralContainers" | "volumes" | "env" | "imagePullSecrets" => {
            "name"
        }
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ports" => "containerPort",
        "ownerReferences" => "uid",
        "tolerations" | "finalizers" => return None,
        _ => return None,
    })
}

/// Strategic merge patch for built-in types.
pub fn strategic(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut clean = p.clone();
        clean.remove("$patch");
        *target = Value::Object(clean);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Array(items) => match (merge_key(k), t.get_mut(k)) {
                (Some(key), Some(Value::Array(cur))) => merge_list(cur, items, key),
                _ => {
                    t.insert(k.clone(), Value::Array(items.clone()));
                }
            },
            Value::Object(_) => strategic(t.entry(k.clone()).or_insert(Value::Null), v),
            other => {
                t.insert(k.clone(), other.clone());
            }
        }
    }
}

fn merge_list(cur: &mut Vec<Value>, items: &[Value], key: &str) {
    for item in items {
        let id = item.get(key).cloned();
        let pos = id
            .as_ref()
            .and_then(|id| cur.iter().position(|c| c.get(key) == Some(id)));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                cur.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic(&mut cur[i], item),
            (None, false) => cur.push(item.clone()),
        }
    }
}

/// RFC 6902.
///
/// # Errors
/// A message naming the failing operation.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops
        .as_array()
        .ok_or("a JSON patch must be an array of operations")?;
    for (i, op) in ops.iter().enumerate() {
        let kind = op["op"].as_str().ok_or(format!("operation {i}: missing op"))?;
        let path = op["path"]
            .as_str()
            .ok_or(format!("operation {i}: missing path"))?;
        let err = |m: &str| format!("operation {i} ({kind} {path}): {m}");
        match kind {
            "add" => add(target, path, op["value"].clone()).map_err(|m| err(&m))?,
            "remove" => {
                remove(target, path).map_err(|m| err(&m))?;
            }
            "replace" => {
                remove(target, path).map_err(|m| err(&m))?;
                add(target, path, op["value"].clone()).map_err(|m| err(&m))?;
            }
            "test" => {
                if target.pointer(path) != Some(&op["value"]) {
                    return Err(err("test failed"));
                }
            }
            "move" | "copy" => {
                let from = op["from"].as_str().ok_or_else(|| err("missing from"))?;
                let v = if kind == "move" {
                    remove(target, from).map_err(|m| err(&m))?
                } else {
                    target
                        .pointer(from)
                        .cloned()
                        .ok_or_else(|| err("from does not exist"))?
                };
                add(target, path, v).map_err(|m| err(&m))?;
            }
            other => return Err(format!("operation {i}: unknown op {other:?}")),
        }
    }
    Ok(())
}

fn split(path: &str) -> Result<(String, String), String> {
    let (parent, last) = path.rsplit_once('/').ok_or("the path must start with /")?;
    let unescape = |s: &str| s.replace("~1", "/").replace("~0", "~");
    Ok((parent.to_string(), unescape(last)))
}

fn add(target: &mut Value, path: &str, v: Value) -> Result<(), String> {
    if path.is_empty() {
        *target = v;
        return Ok(());
    }
    let (parent, last) = split(path)?;
    let p = target.pointer_mut(&parent).ok_or("the parent does not exist")?;
    match p {
        Value::Object(m) => {
            m.insert(last, v);
        }
        Value::Array(a) if last == "-" => a.push(v),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| "bad array index")?;
            if i > a.len() {
                return Err("array index out of range".into());
            }
            a.insert(i, v);
        }
        _ => return Err("the parent is not a container".into()),
    }
    Ok(())
}

fn remove(target: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split(path)?;
    let p = target.pointer_mut(&parent).ok_or("the parent does not exist")?;
    match p {
        Value::Object(m) => m.remove(&last).ok_or_else(|| "the path does not exist".into()),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| "bad array index")?;
            (i < a.len())
                .then(|| a.remove(i))
                .ok_or_else(|| "array index out of range".into())
        }
        _ => Err("the parent is not a container".into()),
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
    fn strategic_merges_lists_by_key() {
        let mut t =
            json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        strategic(
            &mut t,
            &json!({"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "a", "$patch": "delete"}, {"name": "c"}]}}),
        );
        assert_eq!(
            t,
            json!({"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "c"}]}})
        );
    }

    #[test]
    fn json_patch_operations() {
        let mut t = json!({"metadata": {"labels": {"a/b": "1"}}, "l": [1]});
        json_patch(
            &mut t,
            &json!([
                {"op": "add", "path": "/metadata/labels/x", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a~1b"},
                {"op": "add", "path": "/l/-", "value": 2},
                {"op": "test", "path": "/l/0", "value": 1},
            ]),
        )
        .unwrap();
        assert_eq!(t, json!({"metadata": {"labels": {"x": "2"}}, "l": [1, 2]}));
        assert!(json_patch(&mut t, &json!([{"op": "remove", "path": "/nope"}])).is_err());
        assert!(json_patch(&mut t, &json!([{"op": "add", "path": "/missing/x", "value": 1}])).is_err());
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
