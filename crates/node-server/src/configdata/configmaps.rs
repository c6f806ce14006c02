//! `v1` `ConfigMap`s, checked as the API server checks them: a DNS-subdomain name, keys
//! that are file names in `data` and `binaryData` (not in both), `binaryData` in base64, at
//! most 1 MiB of data; `immutable` ones keep their data. The pod builder offloads templates
//! too large for `ARGO_TEMPLATE` to one.

use argoexec_node::ObjectData;
use serde_json::Value;

use super::{check_key, check_name, check_size, decode_base64, keep_immutable, string_map};
use crate::status::{ApiError, CONFIG_MAPS};

/// Check a ConfigMap about to be stored (create, update, patch).
///
/// # Errors
/// 422 `Invalid` naming the field; 400 for values the decoder refuses.
pub(crate) fn admit(obj: &mut Value) -> Result<(), ApiError> {
    let res = &CONFIG_MAPS;
    let name = check_name(res, obj)?;
    let mut size = 0;
    let data = string_map(res, obj, "data")?;
    for (k, v) in &data {
        check_key(res, &name, "data", k)?;
        size += v.len();
    }
    for (k, v) in string_map(res, obj, "binaryData")? {
        check_key(res, &name, "binaryData", k)?;
        if data.iter().any(|(d, _)| *d == k) {
            return Err(ApiError::invalid(
                res,
                &name,
                "binaryData",
                &format!("Invalid value: {k:?}: duplicate of key present in data"),
            ));
        }
        size += decode_base64(res, v)?.len();
    }
    check_size(res, &name, "[]", size)
}

/// Whether a stored ConfigMap may become `after`.
///
/// # Errors
/// 422 when an `immutable` one would change.
pub(crate) fn change(before: &Value, after: &Value) -> Result<(), ApiError> {
    keep_immutable(&CONFIG_MAPS, before, after, &["data", "binaryData"])
}

/// The data of a stored ConfigMap: `data` and `binaryData` (decoded) together.
pub(crate) fn data(o: &Value) -> ObjectData {
    let mut out = ObjectData::new();
    for (k, v) in o["data"].as_object().into_iter().flatten() {
        out.insert(k.clone(), v.as_str().unwrap_or("").as_bytes().to_vec());
    }
    for (k, v) in o["binaryData"].as_object().into_iter().flatten() {
        let bytes = decode_base64(&CONFIG_MAPS, v.as_str().unwrap_or("")).unwrap_or_default();
        out.insert(k.clone(), bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validation_follows_the_api_server() {
        admit(&mut json!({"metadata": {"name": "wf-1-template"}, "data": {"template": "{}"}})).unwrap();
        for (mut o, code, needle) in [
            (json!({"metadata": {"name": "Bad_Name"}}), 422, "metadata.name"),
            (
                json!({"metadata": {"name": "c"}, "data": {"../x": "v"}}),
                422,
                "data[../x]",
            ),
            (
                json!({"metadata": {"name": "c"}, "data": {"k": 1}}),
                400,
                "values must be strings",
            ),
            (
                json!({"metadata": {"name": "c"}, "binaryData": {"k": "%%"}}),
                400,
                "illegal base64 data",
            ),
            (
                json!({"metadata": {"name": "c"}, "data": {"k": "a"}, "binaryData": {"k": "YQ=="}}),
                422,
                "duplicate of key present in data",
            ),
            (
                json!({"metadata": {"name": "c"}, "data": {"k": "x".repeat(super::super::MAX_DATA + 1)}}),
                422,
                "[]: Too long: must have at most 1048576 bytes",
            ),
        ] {
            let e = admit(&mut o).unwrap_err();
            assert!(e.code == code && e.message.contains(needle), "{}", e.message);
        }
    }

    #[test]
    fn data_and_binary_data_together() {
        let o = json!({"metadata": {"name": "c"}, "data": {"a": "1"}, "binaryData": {"b": "AAE="}});
        let d = data(&o);
        assert_eq!((d["a"].as_slice(), d["b"].as_slice()), (&b"1"[..], &[0u8, 1][..]));
    }
}
