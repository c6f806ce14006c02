//! `v1` `Secret`s, checked and normalised as the API server does it: `data` values are
//! base64 (refused with the decoder's 400 otherwise) and stored re-encoded; `stringData` is
//! write-only, merged into `data` (taking precedence) and never stored or returned; `type`
//! defaults to `Opaque` and never changes; the built-in types' required keys are checked
//! (`kubernetes.io/tls`: `tls.crt`, `tls.key`, …); keys are file names, at most 1 MiB of
//! data; `immutable` ones keep their data. Error messages name fields and keys, never values.

use std::collections::BTreeMap;

use argoexec_node::ObjectData;
use serde_json::{Value, json};

use super::{check_key, check_name, check_size, decode_base64, encode_base64, keep_immutable, string_map};
use crate::status::{ApiError, SECRETS};

/// `type` when none is given.
const OPAQUE: &str = "Opaque";

/// Keys a built-in type must have.
const REQUIRED: &[(&str, &[&str])] = &[
    ("kubernetes.io/tls", &["tls.crt", "tls.key"]),
    ("kubernetes.io/dockercfg", &[".dockercfg"]),
    ("kubernetes.io/dockerconfigjson", &[".dockerconfigjson"]),
    ("kubernetes.io/ssh-auth", &["ssh-privatekey"]),
];

/// Check a Secret about to be stored (create, update, patch) and normalise it: `stringData`
/// merged into `data`, `data` re-encoded, `type` defaulted.
///
/// # Errors
/// 400 for values the decoder refuses (not base64, not strings); 422 `Invalid` naming the
/// field.
pub(crate) fn admit(obj: &mut Value) -> Result<(), ApiError> {
    let res = &SECRETS;
    let name = check_name(res, obj)?;
    let mut data: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (k, v) in string_map(res, obj, "data")? {
        data.insert(k.clone(), decode_base64(res, v)?);
    }
    for (k, v) in string_map(res, obj, "stringData")? {
        data.insert(k.clone(), v.as_bytes().to_vec());
    }
    for k in data.keys() {
        check_key(res, &name, "data", k)?;
    }
    check_size(res, &name, "data", data.values().map(Vec::len).sum())?;
    let kind = match obj["type"].as_str().filter(|t| !t.is_empty()) {
        Some(t) => t.to_string(),
        None => OPAQUE.to_string(),
    };
    check_type(obj, &name, &kind, &data)?;
    let o = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the body must be an object"))?;
    o.remove("stringData");
    o.remove("data");
    if !data.is_empty() {
        let encoded: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| (k.clone(), json!(encode_base64(v))))
            .collect();
        o.insert("data".into(), Value::Object(encoded));
    }
    o.insert("type".into(), json!(kind));
    Ok(())
}

/// The built-in types' rules.
fn check_type(obj: &Value, name: &str, kind: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<(), ApiError> {
    let required = |field: &str| ApiError::invalid(&SECRETS, name, field, "Required value");
    let keys: &[&str] = REQUIRED.iter().find(|(t, _)| *t == kind).map_or(&[], |(_, k)| k);
    if let Some(k) = keys.iter().find(|k| !data.contains_key(**k)) {
        return Err(required(&format!("data[{k}]")));
    }
    match kind {
        "kubernetes.io/basic-auth" if !data.contains_key("username") && !data.contains_key("password") => {
            Err(required("data[username]"))
        }
        "kubernetes.io/service-account-token"
            if obj["metadata"]["annotations"]["kubernetes.io/service-account.name"]
                .as_str()
                .is_none() =>
        {
            Err(required(
                "metadata.annotations[kubernetes.io/service-account.name]",
            ))
        }
        "kubernetes.io/dockerconfigjson" => {
            let cfg = data
                .get(".dockerconfigjson")
                .map(Vec::as_slice)
                .unwrap_or_default();
            match serde_json::from_slice::<Value>(cfg) {
                Ok(_) => Ok(()),
                Err(e) => Err(ApiError::invalid(
                    &SECRETS,
                    name,
                    "data[.dockerconfigjson]",
                    &format!("Invalid value: \"<secret contents redacted>\": {e}"),
                )),
            }
        }
        _ => Ok(()),
    }
}

/// Whether a stored Secret may become `after`.
///
/// # Errors
/// 422 when `type` changes, or the data of an `immutable` one.
pub(crate) fn change(before: &Value, after: &Value) -> Result<(), ApiError> {
    if before["type"] != after["type"] {
        return Err(ApiError::invalid(
            &SECRETS,
            before["metadata"]["name"].as_str().unwrap_or(""),
            "type",
            &format!("Invalid value: {}: field is immutable", after["type"]),
        ));
    }
    keep_immutable(&SECRETS, before, after, &["data"])
}

/// The decoded data of a stored Secret.
pub(crate) fn data(o: &Value) -> ObjectData {
    o["data"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let bytes = decode_base64(&SECRETS, v.as_str().unwrap_or("")).unwrap_or_default();
            (k.clone(), bytes)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_data_is_merged_and_type_defaulted() {
        let mut o = json!({"metadata": {"name": "s"}, "data": {"a": "YQ==", "b": "Yg=="},
                           "stringData": {"b": "B", "c": "sea"}});
        admit(&mut o).unwrap();
        assert_eq!(
            o,
            json!({"metadata": {"name": "s"}, "type": "Opaque",
                   "data": {"a": "YQ==", "b": "Qg==", "c": "c2Vh"}})
        );
        let d = data(&o);
        assert_eq!(d["c"], b"sea");
        let mut empty = json!({"metadata": {"name": "e"}, "data": {}, "type": "kubernetes.io/basic-auth",
                               "stringData": {"password": ""}});
        admit(&mut empty).unwrap();
        assert_eq!(empty["data"], json!({"password": ""}));
    }

    #[test]
    fn bad_secrets_are_refused_without_their_values() {
        for (mut o, code, needle) in [
            (
                json!({"metadata": {"name": "s"}, "data": {"k": "not base64!"}}),
                400,
                "illegal base64 data at input byte 3",
            ),
            (
                json!({"metadata": {"name": "s"}, "stringData": {"a/b": "x"}}),
                422,
                "data[a/b]",
            ),
            (
                json!({"metadata": {"name": "s"}, "stringData": {"k": 7}}),
                400,
                "values must be strings",
            ),
            (
                json!({"metadata": {"name": "s"}, "stringData": {"k": "x".repeat(super::super::MAX_DATA + 1)}}),
                422,
                "data: Too long: must have at most 1048576 bytes",
            ),
            (
                json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "stringData": {"tls.crt": "c"}}),
                422,
                "data[tls.key]: Required value",
            ),
            (
                json!({"metadata": {"name": "s"}, "type": "kubernetes.io/dockerconfigjson",
                       "stringData": {".dockerconfigjson": "{hunter2"}}),
                422,
                "<secret contents redacted>",
            ),
        ] {
            let e = admit(&mut o).unwrap_err();
            assert!(e.code == code && e.message.contains(needle), "{}", e.message);
            assert!(
                !e.message.contains("hunter2") && !e.message.contains("not base64!"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn type_never_changes_and_immutable_data_stays() {
        let before = json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "YQ=="}});
        let mut after = before.clone();
        after["type"] = json!("kubernetes.io/tls");
        let e = change(&before, &after).unwrap_err();
        assert!(
            e.message
                .contains("type: Invalid value: \"kubernetes.io/tls\": field is immutable"),
            "{}",
            e.message
        );
        let mut frozen = before.clone();
        frozen["immutable"] = json!(true);
        let mut changed = frozen.clone();
        changed["data"]["a"] = json!("Yg==");
        assert!(change(&frozen, &changed).is_err());
        assert!(change(&frozen, &frozen.clone()).is_ok());
    }
}
