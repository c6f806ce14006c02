//! ConfigMaps and Secrets: the two key → value kinds that pods read (volumes, env). Both are
//! checked as the API server checks them ([`configmaps::admit`], [`secrets::admit`]): a
//! DNS-subdomain name, keys that are file names (`[-._a-zA-Z0-9]+`), at most 1 MiB of
//! data, base64 where the wire format is bytes, `immutable` honoured. [`StoreObjects`] is how
//! the node reads them from the store, when a pod starts (volumes) and when each container
//! is created (env).

pub(crate) mod configmaps;
pub(crate) mod secrets;

use std::sync::Arc;

use argoexec_node::{ObjectData, ObjectSource};
use base64::Engine;
use serde_json::Value;

use crate::status::{ApiError, Resource};
use crate::store::Store;

/// Most bytes of data (decoded) one ConfigMap or Secret may hold.
pub(crate) const MAX_DATA: usize = 1024 * 1024;

/// The store as the node's source of ConfigMaps and Secrets.
pub(crate) struct StoreObjects(pub Arc<Store>);

impl ObjectSource for StoreObjects {
    fn config_map(&self, namespace: &str, name: &str) -> Option<ObjectData> {
        let o = self.0.get(&crate::registry::CONFIG_MAPS, namespace, name)?;
        Some(configmaps::data(&o))
    }

    fn secret(&self, namespace: &str, name: &str) -> Option<ObjectData> {
        let o = self.0.get(&crate::registry::SECRETS, namespace, name)?;
        Some(secrets::data(&o))
    }
}

/// Go's `encoding/json` decoding of `[]byte`: standard base64 with padding, line breaks
/// ignored, trailing bits allowed.
const GO_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// Decode a base64 value of `kind` as the API server's decoder does.
///
/// # Errors
/// 400 `BadRequest` in the decoder's words (`illegal base64 data at input byte N`); the
/// value itself is never quoted.
pub(crate) fn decode_base64(res: &Resource, s: &str) -> Result<Vec<u8>, ApiError> {
    let clean: String = s.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    GO_BASE64.decode(clean.as_bytes()).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(i, _) | base64::DecodeError::InvalidLastSymbol(i, _) => i,
            base64::DecodeError::InvalidLength(n) => n,
            base64::DecodeError::InvalidPadding => clean.len(),
        };
        ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: illegal base64 data at input byte {at}",
            kind = res.kind
        ))
    })
}

/// Standard base64, as the API server writes bytes.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The object's name, which must be a DNS subdomain.
///
/// # Errors
/// 422 on `metadata.name`.
pub(crate) fn check_name(res: &Resource, obj: &Value) -> Result<String, ApiError> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = name.as_bytes();
    let valid = !b.is_empty()
        && b.len() <= 253
        && ok(b[0])
        && ok(b[b.len() - 1])
        && b.iter().all(|c| ok(*c) || *c == b'-' || *c == b'.');
    if !valid {
        return Err(ApiError::invalid(
            res,
            &name,
            "metadata.name",
            &format!(
                "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                 characters, '-' or '.', and must start and end with an alphanumeric character"
            ),
        ));
    }
    Ok(name)
}

/// A key of `field` must be a file name of `[-._a-zA-Z0-9]` (not `.` or `..`).
///
/// # Errors
/// 422 on `field[key]`.
pub(crate) fn check_key(res: &Resource, name: &str, field: &str, key: &str) -> Result<(), ApiError> {
    let valid = !key.is_empty()
        && key.len() <= 253
        && key != "."
        && key != ".."
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if valid {
        return Ok(());
    }
    Err(ApiError::invalid(
        res,
        name,
        &format!("{field}[{key}]"),
        &format!(
            "Invalid value: {key:?}: a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        ),
    ))
}

/// `field` as a map of strings (absent: empty).
///
/// # Errors
/// 400 when it is not a map of strings, as the decoder refuses it.
pub(crate) fn string_map<'o>(
    res: &Resource,
    obj: &'o Value,
    field: &str,
) -> Result<Vec<(&'o String, &'o str)>, ApiError> {
    let undecodable = |what: &str| {
        ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: {field}: {what}",
            kind = res.kind
        ))
    };
    match &obj[field] {
        Value::Null => Ok(Vec::new()),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s.as_str())),
                Value::Null => Ok((k, "")),
                _ => Err(undecodable("values must be strings")),
            })
            .collect(),
        _ => Err(undecodable("must be a map of strings")),
    }
}

/// 422 `Too long` on `field` for more than [`MAX_DATA`] bytes.
///
/// # Errors
/// When `size` is over the limit.
pub(crate) fn check_size(res: &Resource, name: &str, field: &str, size: usize) -> Result<(), ApiError> {
    if size <= MAX_DATA {
        return Ok(());
    }
    Err(ApiError::invalid(
        res,
        name,
        field,
        &format!("Too long: must have at most {MAX_DATA} bytes"),
    ))
}

/// An object with `immutable: true` keeps `fields` and stays immutable.
///
/// # Errors
/// 422 `Forbidden` naming the first field that changed.
pub(crate) fn keep_immutable(
    res: &Resource,
    before: &Value,
    after: &Value,
    fields: &[&str],
) -> Result<(), ApiError> {
    if before["immutable"] != true {
        return Ok(());
    }
    let changed = fields
        .iter()
        .chain(&["immutable"])
        .find(|f| before[**f] != after[**f]);
    match changed {
        None => Ok(()),
        Some(field) => Err(ApiError::invalid(
            res,
            before["metadata"]["name"].as_str().unwrap_or(""),
            field,
            "Forbidden: field is immutable when `immutable` is set",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::SECRETS;
    use serde_json::json;

    #[test]
    fn base64_is_decoded_as_go_decodes_it() {
        assert_eq!(decode_base64(&SECRETS, "aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64(&SECRETS, "aG\nk=").unwrap(), b"hi");
        let e = decode_base64(&SECRETS, "a%Gk").unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 1"
        );
        assert_eq!(
            decode_base64(&SECRETS, "aGk").unwrap_err().code,
            400,
            "padding is required"
        );
    }

    #[test]
    fn names_keys_and_immutability() {
        assert_eq!(
            check_name(&SECRETS, &json!({"metadata": {"name": "a.b-1"}})).unwrap(),
            "a.b-1"
        );
        for bad in ["", "A", "-a", "a_b"] {
            let e = check_name(&SECRETS, &json!({"metadata": {"name": bad}})).unwrap_err();
            assert!(
                e.code == 422 && e.message.contains("metadata.name"),
                "{bad}: {}",
                e.message
            );
        }
        assert!(check_key(&SECRETS, "s", "data", "a.B_c-1").is_ok());
        for bad in ["", ".", "..", "a/b", "a b"] {
            assert!(check_key(&SECRETS, "s", "data", bad).is_err(), "{bad:?}");
        }
        let before = json!({"metadata": {"name": "s"}, "immutable": true, "data": {"a": "YQ=="}});
        let mut after = before.clone();
        assert!(keep_immutable(&SECRETS, &before, &after, &["data"]).is_ok());
        after["data"]["a"] = json!("Yg==");
        let e = keep_immutable(&SECRETS, &before, &after, &["data"]).unwrap_err();
        assert!(
            e.message.contains("data: Forbidden: field is immutable"),
            "{}",
            e.message
        );
        let mut unset = before.clone();
        unset["immutable"] = json!(false);
        assert!(keep_immutable(&SECRETS, &before, &unset, &["data"]).is_err());
    }
}
