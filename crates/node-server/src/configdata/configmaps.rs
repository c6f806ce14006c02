//! `v1` `ConfigMap`s: stored like the other kinds, validated as the API server validates
//! them (a DNS-subdomain name, keys that are file names, `binaryData` in base64, at most
//! 1 MiB of data), and handed to the node when a pod with `configMap` volumes starts
//! ([`for_pod`]). The pod builder offloads templates too large for `ARGO_TEMPLATE` to one.

use std::collections::BTreeMap;

use argoexec_node::ConfigMaps;
use base64::Engine;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

use crate::status::{ApiError, Resource};
use crate::store::{Kind, Store};

/// Core `configmaps`.
pub const CONFIG_MAPS: Resource = Resource {
    group: "",
    plural: "configmaps",
    kind: "ConfigMap",
};

/// Most bytes of `data` and `binaryData` together.
pub const MAX_DATA: usize = 1024 * 1024;

/// Check a ConfigMap body as the API server would; returns its name.
///
/// # Errors
/// 422 `Invalid` naming the field.
pub fn validate(obj: &Value) -> Result<String, ApiError> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let invalid = |field: &str, detail: &str| ApiError::invalid(&CONFIG_MAPS, &name, field, detail);
    if !is_subdomain(&name) {
        return Err(invalid(
            "metadata.name",
            &format!(
                "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                 characters, '-' or '.', and must start and end with an alphanumeric character"
            ),
        ));
    }
    let mut size = 0;
    for (field, binary) in [("data", false), ("binaryData", true)] {
        let map = match &obj[field] {
            Value::Null => continue,
            Value::Object(m) => m,
            _ => return Err(invalid(field, "Invalid value: must be a map of strings")),
        };
        for (k, v) in map {
            if !is_config_key(k) {
                return Err(invalid(
                    &format!("{field}[{k}]"),
                    "Invalid value: a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                ));
            }
            let s = v
                .as_str()
                .ok_or_else(|| invalid(&format!("{field}[{k}]"), "Invalid value: must be a string"))?;
            size += if binary {
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|_| invalid(&format!("{field}[{k}]"), "Invalid value: not base64"))?
                    .len()
            } else {
                s.len()
            };
        }
    }
    if size > MAX_DATA {
        return Err(invalid(
            "[]",
            &format!("Too long: must have at most {MAX_DATA} bytes"),
        ));
    }
    Ok(name)
}

/// The stored ConfigMaps that `pod`'s `configMap` volumes name (in `ns`), with `data` and
/// `binaryData` merged; names not found are left out (the node then fails the pod, or
/// mounts an empty directory for an optional volume).
pub fn for_pod(store: &Store, ns: &str, pod: &Pod) -> ConfigMaps {
    let mut out = ConfigMaps::new();
    let names = pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.config_map.as_ref().map(|c| c.name.clone()));
    for name in names {
        let Some(o) = store.get(Kind::ConfigMap, ns, &name) else {
            continue;
        };
        let mut data = BTreeMap::new();
        for (k, v) in o["data"].as_object().into_iter().flatten() {
            data.insert(k.clone(), v.as_str().unwrap_or("").as_bytes().to_vec());
        }
        for (k, v) in o["binaryData"].as_object().into_iter().flatten() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or(""))
                .unwrap_or_default();
            data.insert(k.clone(), bytes);
        }
        out.insert(name, data);
    }
    out
}

fn is_subdomain(n: &str) -> bool {
    let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = n.as_bytes();
    !b.is_empty()
        && b.len() <= 253
        && ok(b[0])
        && ok(b[b.len() - 1])
        && b.iter().all(|c| ok(*c) || *c == b'-' || *c == b'.')
}

fn is_config_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 253
        && k != "."
        && k != ".."
        && k.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validation_follows_the_api_server() {
        assert_eq!(
            validate(&json!({"metadata": {"name": "wf-1-template"}, "data": {"template": "{}"}})).unwrap(),
            "wf-1-template"
        );
        for (o, needle) in [
            (json!({"metadata": {"name": "Bad_Name"}}), "metadata.name"),
            (
                json!({"metadata": {"name": "c"}, "data": {"../x": "v"}}),
                "data[../x]",
            ),
            (
                json!({"metadata": {"name": "c"}, "data": {"k": 1}}),
                "must be a string",
            ),
            (
                json!({"metadata": {"name": "c"}, "binaryData": {"k": "%%"}}),
                "not base64",
            ),
            (
                json!({"metadata": {"name": "c"}, "data": {"k": "x".repeat(MAX_DATA + 1)}}),
                "at most 1048576 bytes",
            ),
        ] {
            let e = validate(&o).unwrap_err();
            assert!(e.code == 422 && e.message.contains(needle), "{}", e.message);
        }
    }

    #[test]
    fn pods_get_the_maps_their_volumes_name() {
        let store = Store::new(10);
        store
            .create(
                Kind::ConfigMap,
                "ns",
                json!({"metadata": {"name": "c"}, "data": {"a": "1"}, "binaryData": {"b": "AAE="}}),
            )
            .unwrap();
        let pod: Pod = serde_json::from_value(json!({"spec": {"containers": [], "volumes": [
            {"name": "v", "configMap": {"name": "c"}}, {"name": "w", "configMap": {"name": "gone"}}]}}))
        .unwrap();
        let maps = for_pod(&store, "ns", &pod);
        assert_eq!(maps.len(), 1);
        assert_eq!(maps["c"]["a"], b"1");
        assert_eq!(maps["c"]["b"], [0, 1]);
        assert!(for_pod(&store, "other", &pod).is_empty());
    }
}
