//! Path lookup in a JSON object with the gjson syntax Argo's conditions use (Argo evaluates
//! `successCondition`/`failureCondition` keys with `github.com/tidwall/gjson`).
//!
//! Supported: dotted keys (`status.phase`), numeric components indexing arrays
//! (`status.conditions.0.type`), `\` escaping a `.` inside a key (`metadata.labels.app\.kubernetes\.io/name`),
//! `#` for an array's length (`items.#`) and `#.rest` mapping the rest of the path over an
//! array's elements (`items.#.name`, elements without it left out). gjson's wildcards,
//! queries (`#(…)`) and modifiers (`@…`) are not: a condition key cannot spell them anyway
//! (Kubernetes label-key syntax, [`crate::condition`]).
//!
//! [`to_gjson_string`] is gjson's `Result.String()`: strings raw, integers as written, other
//! numbers in Go's shortest `'f'` form, `true`/`false`, `null` as the empty string, arrays
//! and objects as compact JSON.

use serde_json::Value;

/// Look `path` up in `root`. `None` when it does not exist; a JSON `null` exists.
pub fn get(root: &Value, path: &str) -> Option<Value> {
    let parts = split(path);
    lookup(root, &parts)
}

fn lookup(cur: &Value, parts: &[String]) -> Option<Value> {
    let Some((first, rest)) = parts.split_first() else {
        return Some(cur.clone());
    };
    match cur {
        Value::Object(map) => lookup(map.get(first.as_str())?, rest),
        Value::Array(items) if first == "#" => {
            if rest.is_empty() {
                return Some(Value::from(items.len()));
            }
            let mapped: Vec<Value> = items.iter().filter_map(|i| lookup(i, rest)).collect();
            Some(Value::Array(mapped))
        }
        Value::Array(items) => {
            let index: usize = first.parse().ok()?;
            lookup(items.get(index)?, rest)
        }
        _ => None,
    }
}

/// Split a path on unescaped dots; `\x` stands for `x`.
fn split(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '.' => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    parts
}

/// gjson's `Result.String()` of a found value.
pub fn to_gjson_string(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (_, Some(u)) => u.to_string(),
            // Rust's `Display` of an f64 is Go's `FormatFloat(f, 'f', -1, 64)`: the shortest
            // digits, never an exponent.
            _ => n.as_f64().map(|f| f.to_string()).unwrap_or_default(),
        },
        Value::Array(_) | Value::Object(_) => serde_json::to_string(v).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "metadata": {"name": "j", "labels": {"app.kubernetes.io/name": "x"}, "deletionTimestamp": null},
            "status": {"succeeded": 3, "ratio": 2.5, "big": 1e21, "ready": true,
                "conditions": [{"type": "Complete", "status": "True"}, {"type": "Failed"}]},
            "items": [{"name": "a"}, {"other": 1}, {"name": "c"}],
        })
    }

    #[test]
    fn dotted_keys_and_indexes() {
        let d = doc();
        assert_eq!(get(&d, "metadata.name"), Some(json!("j")));
        assert_eq!(get(&d, "status.conditions.0.type"), Some(json!("Complete")));
        assert_eq!(get(&d, "status.conditions.1.status"), None);
        assert_eq!(get(&d, "status.conditions.5.type"), None);
        assert_eq!(get(&d, "status.conditions.x"), None);
        assert_eq!(get(&d, "status.missing"), None);
        assert_eq!(get(&d, "metadata.name.deeper"), None);
        assert_eq!(
            get(&d, r"metadata.labels.app\.kubernetes\.io/name"),
            Some(json!("x"))
        );
    }

    #[test]
    fn null_exists_and_is_the_empty_string() {
        let d = doc();
        let v = get(&d, "metadata.deletionTimestamp").expect("a null exists");
        assert_eq!(to_gjson_string(&v), "");
    }

    #[test]
    fn hash_is_length_and_maps() {
        let d = doc();
        assert_eq!(get(&d, "items.#"), Some(json!(3)));
        assert_eq!(get(&d, "status.conditions.#"), Some(json!(2)));
        assert_eq!(get(&d, "items.#.name"), Some(json!(["a", "c"])));
        assert_eq!(get(&d, "metadata.#"), None, "# only on arrays");
    }

    #[test]
    fn strings_as_gjson_prints_them() {
        let d = doc();
        let s = |p: &str| to_gjson_string(&get(&d, p).unwrap());
        assert_eq!(s("status.succeeded"), "3");
        assert_eq!(s("status.ratio"), "2.5");
        assert_eq!(s("status.big"), "1000000000000000000000");
        assert_eq!(s("status.ready"), "true");
        assert_eq!(s("items.0"), r#"{"name":"a"}"#);
        assert_eq!(s("items.#.name"), r#"["a","c"]"#);
    }
}
