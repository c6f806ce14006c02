//! Server-side apply, simplified: the applied configuration is merged into the live object
//! (maps key by key, lists replaced whole), and the fields this field manager applied last
//! time but no longer applies are removed. What each manager applied is recorded, as the
//! API server does, in `metadata.managedFields` (an `Apply` entry with `fieldsV1`). There is
//! no conflict detection between managers (`force` is accepted and changes nothing), no
//! per-element ownership inside lists, and other writes are not recorded as `Update`
//! entries.

use serde_json::{Map, Value, json};

/// Fields of an applied configuration that are the server's, never owned.
const SERVER_FIELDS: [&str; 7] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
];

/// The field set (`fieldsV1`) of an applied configuration: `f:<key>` per map key, `{}` for
/// a leaf (a scalar or a whole list).
pub fn field_set(applied: &Value) -> Value {
    fn walk(v: &Value, top: bool) -> Value {
        let Value::Object(m) = v else {
            return json!({});
        };
        let mut out = Map::new();
        for (k, child) in m {
            if top && (k == "apiVersion" || k == "kind") {
                continue;
            }
            let child = if top && k == "metadata" {
                let mut meta = child.clone();
                if let Some(mm) = meta.as_object_mut() {
                    mm.retain(|k, _| !SERVER_FIELDS.contains(&k.as_str()));
                }
                if meta.as_object().is_some_and(Map::is_empty) {
                    continue;
                }
                walk(&meta, false)
            } else {
                walk(child, false)
            };
            out.insert(format!("f:{k}"), child);
        }
        Value::Object(out)
    }
    walk(applied, true)
}

/// Remove from `live` what `before` (a field set) owns and `now` does not.
fn remove_dropped(live: &mut Value, before: &Value, now: &Value) {
    let (Some(b), Some(l)) = (before.as_object(), live.as_object_mut()) else {
        return;
    };
    for (fk, child) in b {
        let Some(k) = fk.strip_prefix("f:") else {
            continue;
        };
        let kept = now.get(fk);
        let leaf = child.as_object().is_none_or(Map::is_empty);
        match (kept, leaf) {
            (None, true) => {
                l.remove(k);
            }
            (None, false) => {
                if let Some(sub) = l.get_mut(k) {
                    remove_dropped(sub, child, &json!({}));
                    if sub.as_object().is_some_and(Map::is_empty) {
                        l.remove(k);
                    }
                }
            }
            (Some(n), false) => {
                if let Some(sub) = l.get_mut(k) {
                    remove_dropped(sub, child, n);
                }
            }
            (Some(_), true) => {}
        }
    }
}

/// Merge `applied` into `live`: maps key by key, anything else replaced.
fn merge(live: &mut Value, applied: &Value) {
    match (live.as_object_mut(), applied) {
        (Some(l), Value::Object(a)) => {
            for (k, v) in a {
                match l.get_mut(k) {
                    Some(cur) if cur.is_object() && v.is_object() => merge(cur, v),
                    _ => {
                        l.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        _ => *live = applied.clone(),
    }
}

/// Apply `applied` to `live` as field manager `manager` (`time`: now, RFC 3339).
pub fn apply(live: &mut Value, applied: &Value, manager: &str, time: &str) {
    let mut applied = applied.clone();
    if let Some(meta) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| !SERVER_FIELDS.contains(&k.as_str()));
    }
    let now = field_set(&applied);
    let mut entries: Vec<Value> = live["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mine = |e: &Value| e["manager"] == manager && e["operation"] == "Apply";
    if let Some(before) = entries.iter().find(|e| mine(e)).map(|e| e["fieldsV1"].clone()) {
        remove_dropped(live, &before, &now);
    }
    if let Some(m) = applied.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    merge(live, &applied);
    entries.retain(|e| !mine(e));
    entries.push(json!({
        "manager": manager,
        "operation": "Apply",
        "apiVersion": live["apiVersion"],
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": now,
    }));
    live["metadata"]["managedFields"] = Value::Array(entries);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_name_map_keys_and_leave_out_server_fields() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"x": "1"}}, "data": {"a": "1"}, "list": [1, 2]});
        assert_eq!(
            field_set(&a),
            json!({"f:metadata": {"f:labels": {"f:x": {}}}, "f:data": {"f:a": {}}, "f:list": {}})
        );
    }

    #[test]
    fn reapplying_removes_what_the_manager_dropped_and_keeps_the_rest() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"other": "o"}}, "data": {"mine": "1"}});
        apply(
            &mut live,
            &json!({"metadata": {"name": "c", "labels": {"x": "1"}}, "data": {"a": "1", "b": "2"}, "l": [1, 2]}),
            "m",
            "t1",
        );
        assert_eq!(live["data"], json!({"mine": "1", "a": "1", "b": "2"}));
        assert_eq!(live["metadata"]["labels"], json!({"other": "o", "x": "1"}));
        apply(&mut live, &json!({"data": {"a": "9"}, "l": [3]}), "m", "t2");
        // b and the label x were this manager's and are gone; the others' fields stay.
        assert_eq!(live["data"], json!({"mine": "1", "a": "9"}));
        assert_eq!(live["metadata"]["labels"], json!({"other": "o"}));
        assert_eq!(live["l"], json!([3]));
        let mf = live["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf.len(), 1);
        assert_eq!(mf[0]["manager"], "m");
        assert_eq!(mf[0]["time"], "t2");
        assert_eq!(mf[0]["fieldsV1"], json!({"f:data": {"f:a": {}}, "f:l": {}}));
        // Another manager's apply leaves this one's entry and fields alone.
        apply(&mut live, &json!({"data": {"z": "1"}}), "n", "t3");
        assert_eq!(live["data"], json!({"mine": "1", "a": "9", "z": "1"}));
        assert_eq!(live["metadata"]["managedFields"].as_array().unwrap().len(), 2);
    }
}
