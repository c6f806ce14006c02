//! Strategic merge patch (built-in types only), as the API server applies the patches
//! kubectl computes:
//!
//! - maps merge key by key; `null` deletes a key;
//! - lists follow their field's strategy ([`super::strategy`]): merged element by element
//!   by a merge key, merged as a set of primitives, or replaced whole;
//! - directives: `$patch: replace` (this map, or as a list element: this whole list, is the
//!   patch's content), `$patch: delete` (this map; as a list element: the element with that
//!   key), `$patch: merge` (the default), `$deleteFromPrimitiveList/<field>` (values taken
//!   out of a set list), `$setElementOrder/<field>` (the order of a merged list),
//!   `$retainKeys` (keys of this map not listed are cleared).

use serde_json::{Map, Value};

use super::strategy::{ListStrategy, list_strategy};

/// Apply a strategic merge patch to an object of `kind`.
///
/// # Errors
/// A message for a malformed patch (an unknown `$patch`, a list element without its merge
/// key, a directive of the wrong shape).
pub fn strategic(target: &mut Value, patch: &Value, kind: &str) -> Result<(), String> {
    let mut path = Vec::new();
    if directive(patch) == Some("delete") {
        *target = Value::Object(Map::new());
        return Ok(());
    }
    merge_map(target, patch, kind, &mut path)
}

fn directive(v: &Value) -> Option<&str> {
    v.get("$patch").and_then(Value::as_str)
}

/// A patch map without its own `$patch` directive.
fn without_directive(p: &Map<String, Value>) -> Value {
    let mut p = p.clone();
    p.remove("$patch");
    Value::Object(p)
}

fn merge_map(target: &mut Value, patch: &Value, kind: &str, path: &mut Vec<String>) -> Result<(), String> {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    match directive(patch) {
        None | Some("merge") => {}
        Some("replace") => {
            *target = without_directive(p);
            return Ok(());
        }
        Some(other) => return Err(format!("unknown patch type: {other:?}")),
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let mut orders = Vec::new();
    let mut removals = Vec::new();
    for (k, v) in p {
        if let Some(field) = k.strip_prefix("$setElementOrder/") {
            orders.push((field, v));
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            removals.push((field, v));
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        let Some(t) = target.as_object_mut() else {
            continue;
        };
        path.push(k.clone());
        let r = merge_field(t, k, v, kind, path);
        path.pop();
        r?;
    }
    let Some(t) = target.as_object_mut() else {
        return Ok(());
    };
    for (field, values) in removals {
        let values = values
            .as_array()
            .ok_or_else(|| format!("$deleteFromPrimitiveList/{field} must be a list"))?;
        if let Some(Value::Array(cur)) = t.get_mut(field) {
            cur.retain(|x| !values.contains(x));
        }
    }
    for (field, order) in orders {
        let order = order
            .as_array()
            .ok_or_else(|| format!("$setElementOrder/{field} must be a list"))?;
        path.push(field.to_string());
        let strategy = list_strategy(kind, &path.iter().map(String::as_str).collect::<Vec<_>>());
        path.pop();
        if let Some(Value::Array(cur)) = t.get_mut(field) {
            set_order(cur, order, strategy);
        }
    }
    if let Some(keep) = p.get("$retainKeys") {
        let keep = keep.as_array().ok_or("$retainKeys must be a list")?;
        t.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k)));
    }
    Ok(())
}

fn merge_field(
    t: &mut Map<String, Value>,
    k: &str,
    v: &Value,
    kind: &str,
    path: &mut Vec<String>,
) -> Result<(), String> {
    match v {
        Value::Null => {
            t.remove(k);
        }
        Value::Object(_) if directive(v) == Some("delete") => {
            t.remove(k);
        }
        Value::Object(_) => {
            let slot = t.entry(k.to_string()).or_insert(Value::Null);
            merge_map(slot, v, kind, path)?;
        }
        Value::Array(items) => {
            let strategy = list_strategy(kind, &path.iter().map(String::as_str).collect::<Vec<_>>());
            let slot = t.entry(k.to_string()).or_insert(Value::Array(Vec::new()));
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            if let Value::Array(cur) = slot {
                merge_list(cur, items, strategy, kind, path)?;
            }
        }
        other => {
            t.insert(k.to_string(), other.clone());
        }
    }
    Ok(())
}

fn merge_list(
    cur: &mut Vec<Value>,
    items: &[Value],
    strategy: ListStrategy,
    kind: &str,
    path: &mut Vec<String>,
) -> Result<(), String> {
    // A `{"$patch": "replace"}` element: the other elements are the whole list.
    if items.iter().any(|i| directive(i) == Some("replace")) {
        let mut out = Vec::new();
        for i in items.iter().filter(|i| directive(i) != Some("replace")) {
            out.push(fresh(i, kind, path)?);
        }
        *cur = out;
        return Ok(());
    }
    match strategy {
        ListStrategy::Atomic => *cur = items.to_vec(),
        ListStrategy::Set => {
            for i in items {
                if !cur.contains(i) {
                    cur.push(i.clone());
                }
            }
        }
        ListStrategy::MergeKey(key) => {
            for item in items {
                let Some(id) = item.get(key) else {
                    return Err(format!("map: {item} does not contain declared merge key: {key}"));
                };
                let pos = cur.iter().position(|c| c.get(key) == Some(id));
                match (pos, directive(item) == Some("delete")) {
                    (Some(i), true) => {
                        cur.remove(i);
                    }
                    (None, true) => {}
                    (Some(i), false) => merge_map(&mut cur[i], item, kind, path)?,
                    (None, false) => cur.push(fresh(item, kind, path)?),
                }
            }
        }
    }
    Ok(())
}

/// A new list element: the patch element with its directives applied to nothing.
fn fresh(item: &Value, kind: &str, path: &mut Vec<String>) -> Result<Value, String> {
    if !item.is_object() {
        return Ok(item.clone());
    }
    let mut v = Value::Object(Map::new());
    merge_map(&mut v, item, kind, path)?;
    Ok(v)
}

/// Reorder `cur` as `order` says: the elements it names take, in its order, the places
/// such elements held; elements it does not name keep their places.
fn set_order(cur: &mut [Value], order: &[Value], strategy: ListStrategy) {
    let id = |v: &Value| -> Option<Value> {
        match strategy {
            ListStrategy::MergeKey(k) => v.get(k).cloned(),
            ListStrategy::Set => Some(v.clone()),
            ListStrategy::Atomic => None,
        }
    };
    let wanted: Vec<Value> = order.iter().filter_map(id).collect();
    let slots: Vec<usize> = (0..cur.len())
        .filter(|&i| id(&cur[i]).is_some_and(|x| wanted.contains(&x)))
        .collect();
    let mut named: Vec<Value> = slots.iter().map(|&i| cur[i].clone()).collect();
    named.sort_by_key(|v| {
        id(v)
            .and_then(|x| wanted.iter().position(|w| *w == x))
            .unwrap_or(usize::MAX)
    });
    for (slot, v) in slots.into_iter().zip(named) {
        cur[slot] = v;
    }
}

#[cfg(test)]
mod tests;
