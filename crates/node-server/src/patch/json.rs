//! JSON patch (RFC 6902): `add`, `remove`, `replace`, `move`, `copy`, `test`, with JSON
//! pointers (`~0`, `~1` escapes, `-` for the end of an array).

use serde_json::Value;

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
    fn replace_move_copy_and_failed_tests() {
        let mut t = json!({"a": {"b": 1}, "l": [1, 2, 3]});
        json_patch(
            &mut t,
            &json!([
                {"op": "replace", "path": "/a/b", "value": 2},
                {"op": "copy", "from": "/a", "path": "/c"},
                {"op": "move", "from": "/l/0", "path": "/l/2"},
                {"op": "add", "path": "/l/0", "value": 0},
            ]),
        )
        .unwrap();
        assert_eq!(t, json!({"a": {"b": 2}, "c": {"b": 2}, "l": [0, 2, 3, 1]}));
        let e = json_patch(&mut t, &json!([{"op": "test", "path": "/a/b", "value": 3}])).unwrap_err();
        assert!(e.contains("test failed"), "{e}");
        assert!(json_patch(&mut t, &json!([{"op": "replace", "path": "/nope", "value": 1}])).is_err());
        assert!(json_patch(&mut t, &json!([{"op": "frob", "path": "/a"}])).is_err());
        assert!(json_patch(&mut t, &json!({"op": "add"})).is_err());
    }
}
