//! `meta.k8s.io/v1` `Table` responses, which kubectl asks for to print `get` output
//! (`NAME READY STATUS RESTARTS AGE` for pods, `NAME TYPE DATA AGE` for secrets,
//! `NAME DATA AGE` for config maps, `NAME AGE` for every other type).

use serde_json::{Value, json};

use crate::registry::ResourceType;

/// The types with columns of their own.
#[derive(Clone, Copy)]
enum Shape {
    Pod,
    Secret,
    ConfigMap,
    Plain,
}

fn shape(kind: &ResourceType) -> Shape {
    match (kind.resource.group.as_ref(), kind.resource.plural.as_ref()) {
        ("", "pods") => Shape::Pod,
        ("", "secrets") => Shape::Secret,
        ("", "configmaps") => Shape::ConfigMap,
        _ => Shape::Plain,
    }
}

/// A table of `items` (rows carry the objects' metadata as `PartialObjectMetadata`).
pub(super) fn table(kind: &ResourceType, items: &[Value], rv: Option<u64>) -> Value {
    let kind = shape(kind);
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            json!({"cells": cells(kind, o), "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}})
        })
        .collect();
    let mut meta = json!({});
    if let Some(rv) = rv {
        meta["resourceVersion"] = json!(rv.to_string());
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": columns(kind), "rows": rows})
}

/// The columns of `kind`, as the API server defines them.
fn columns(kind: Shape) -> Vec<Value> {
    let col = |name: &str, format: &str, desc: &str| json!({"name": name, "type": "string", "format": format, "description": desc, "priority": 0});
    let name = col("Name", "name", "Name must be unique within a namespace.");
    let age = col(
        "Age",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    );
    let data = col("Data", "", "Number of keys.");
    match kind {
        Shape::Pod => vec![
            name,
            col(
                "Ready",
                "",
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            col(
                "Status",
                "",
                "The aggregate status of the containers in this pod.",
            ),
            col(
                "Restarts",
                "",
                "The number of times the containers in this pod have been restarted.",
            ),
            age,
        ],
        Shape::Secret => vec![name, col("Type", "", "The type of the secret."), data, age],
        Shape::ConfigMap => vec![name, data, age],
        Shape::Plain => vec![name, age],
    }
}

/// One row's cells.
fn cells(kind: Shape, o: &Value) -> Value {
    let name = o["metadata"]["name"].clone();
    let age = age(o["metadata"]["creationTimestamp"].as_str().unwrap_or(""));
    let keys = |field: &str| o[field].as_object().map_or(0, serde_json::Map::len);
    match kind {
        Shape::Pod => {
            let cs = o["status"]["containerStatuses"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let total = o["spec"]["containers"].as_array().map_or(0, Vec::len);
            let ready = cs.iter().filter(|c| c["ready"] == true).count();
            json!([name, format!("{ready}/{total}"), pod_status(o), "0", age])
        }
        Shape::Secret => json!([name, o["type"], keys("data"), age]),
        Shape::ConfigMap => json!([name, keys("data") + keys("binaryData"), age]),
        Shape::Plain => json!([name, age]),
    }
}

/// kubectl's STATUS column: a waiting or terminated reason, `Terminating`, or the phase.
fn pod_status(o: &Value) -> String {
    if o["metadata"]["deletionTimestamp"].is_string() {
        return "Terminating".into();
    }
    if let Some(r) = o["status"]["reason"].as_str() {
        return r.into();
    }
    let cs = o["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in cs.iter().rev() {
        if let Some(r) = c["state"]["waiting"]["reason"].as_str() {
            return r.into();
        }
        if let Some(r) = c["state"]["terminated"]["reason"].as_str()
            && o["status"]["phase"] != "Running"
        {
            return r.into();
        }
    }
    o["status"]["phase"].as_str().unwrap_or("Unknown").into()
}

/// `5s`, `3m`, `2h`, `4d` since an RFC 3339 time.
fn age(ts: &str) -> String {
    let Ok(t) = ts.parse::<k8s_openapi::jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let s = (now - t.as_second()).max(0);
    match s {
        0..120 => format!("{s}s"),
        120..7200 => format!("{}m", s / 60),
        7200..172_800 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}
