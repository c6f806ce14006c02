//! Request bodies in the API server's protobuf encoding (`application/vnd.kubernetes.protobuf`),
//! which client-go's typed clients send from kubectl 1.32 on (`kubectl create secret`,
//! `kubectl create configmap`): the `k8s\0` envelope (`runtime.Unknown`: `typeMeta`, `raw`)
//! around a `v1.Secret` or `v1.ConfigMap`, decoded into the JSON the handlers take. Bytes
//! fields become base64 strings, as in JSON. Fields of `ObjectMeta` other than name,
//! generateName, namespace, resourceVersion, labels, annotations and finalizers are dropped;
//! other kinds are refused (415), so their clients learn it at once.

use base64::Engine;
use serde_json::{Value, json};

use crate::status::ApiError;

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\0";

/// Decode a protobuf request body into its JSON form.
///
/// # Errors
/// 400 for a malformed body; 415 for a kind this server takes only as JSON.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let unknown = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("no k8s envelope"))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for f in fields(unknown) {
        match f.map_err(malformed)? {
            (1, Field::Bytes(tm)) => {
                for f in fields(tm) {
                    match f.map_err(malformed)? {
                        (1, Field::Bytes(v)) => api_version = text(v)?,
                        (2, Field::Bytes(k)) => kind = text(k)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    let mut obj = match kind.as_str() {
        "Secret" => object(
            raw,
            &[(2, Map::Bytes, "data"), (4, Map::Text, "stringData")],
            3,
            5,
        )?,
        "ConfigMap" => object(
            raw,
            &[(2, Map::Text, "data"), (3, Map::Bytes, "binaryData")],
            0,
            4,
        )?,
        _ => {
            return Err(ApiError::unsupported_media(&[
                "application/json",
                "application/yaml",
            ]));
        }
    };
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

/// How a map field's values are encoded.
#[derive(Clone, Copy)]
enum Map {
    /// `map<string, string>`.
    Text,
    /// `map<string, bytes>` (base64 in JSON).
    Bytes,
}

/// A Secret or ConfigMap: `metadata` = 1, the map fields given, `type` (string) and
/// `immutable` (bool) at their numbers (0: none).
fn object(
    raw: &[u8],
    maps: &[(u64, Map, &str)],
    type_field: u64,
    immutable_field: u64,
) -> Result<Value, ApiError> {
    let mut obj = json!({});
    for f in fields(raw) {
        match f.map_err(malformed)? {
            (1, Field::Bytes(m)) => obj["metadata"] = metadata(m)?,
            (n, Field::Bytes(v)) if n == type_field => obj["type"] = json!(text(v)?),
            (n, Field::Varint(v)) if n == immutable_field => obj["immutable"] = json!(v != 0),
            (n, Field::Bytes(entry)) => {
                if let Some((_, how, name)) = maps.iter().find(|(m, _, _)| *m == n) {
                    let (k, v) = map_entry(entry, *how)?;
                    obj[*name][k] = v;
                }
            }
            _ => {}
        }
    }
    Ok(obj)
}

fn metadata(m: &[u8]) -> Result<Value, ApiError> {
    let mut meta = json!({});
    let names = [
        (1, "name"),
        (2, "generateName"),
        (3, "namespace"),
        (6, "resourceVersion"),
    ];
    for f in fields(m) {
        match f.map_err(malformed)? {
            // Generated Go code writes empty strings too; JSON leaves them out.
            (n, Field::Bytes(v)) if !v.is_empty() && names.iter().any(|(i, _)| *i == n) => {
                let key = names.iter().find(|(i, _)| *i == n).map_or("", |(_, k)| *k);
                meta[key] = json!(text(v)?);
            }
            (11, Field::Bytes(e)) => {
                let (k, v) = map_entry(e, Map::Text)?;
                meta["labels"][k] = v;
            }
            (12, Field::Bytes(e)) => {
                let (k, v) = map_entry(e, Map::Text)?;
                meta["annotations"][k] = v;
            }
            (14, Field::Bytes(v)) => match meta["finalizers"].as_array_mut() {
                Some(list) => list.push(json!(text(v)?)),
                None => meta["finalizers"] = json!([text(v)?]),
            },
            _ => {}
        }
    }
    Ok(meta)
}

/// A map entry: key = 1, value = 2.
fn map_entry(e: &[u8], how: Map) -> Result<(String, Value), ApiError> {
    let (mut k, mut v) = (String::new(), &[][..]);
    for f in fields(e) {
        match f.map_err(malformed)? {
            (1, Field::Bytes(b)) => k = text(b)?,
            (2, Field::Bytes(b)) => v = b,
            _ => {}
        }
    }
    let value = match how {
        Map::Text => json!(text(v)?),
        Map::Bytes => json!(base64::engine::general_purpose::STANDARD.encode(v)),
    };
    Ok((k, value))
}

fn text(b: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(b.to_vec()).map_err(|_| malformed("a string is not UTF-8"))
}

fn malformed(what: &str) -> ApiError {
    ApiError::bad_request(format!("error decoding protobuf: {what}"))
}

/// One field's value.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of a message, in order.
fn fields(mut b: &[u8]) -> impl Iterator<Item = Result<(u64, Field<'_>), &'static str>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let r = (|| {
            let key = varint(&mut b)?;
            let field = match key & 7 {
                0 => Field::Varint(varint(&mut b)?),
                2 => {
                    let len = usize::try_from(varint(&mut b)?).map_err(|_| "length too large")?;
                    let (v, rest) = b.split_at_checked(len).ok_or("truncated field")?;
                    b = rest;
                    Field::Bytes(v)
                }
                1 | 5 => {
                    let n = if key & 7 == 1 { 8 } else { 4 };
                    b = b.get(n..).ok_or("truncated field")?;
                    Field::Fixed
                }
                _ => return Err("unsupported wire type"),
            };
            Ok((key >> 3, field))
        })();
        if r.is_err() {
            b = &[];
        }
        Some(r)
    })
}

fn varint(b: &mut &[u8]) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first().ok_or("truncated varint")?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len_field(n: u64, v: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::try_from(n << 3 | 2).unwrap()];
        let mut len = v.len();
        loop {
            let b = u8::try_from(len & 0x7f).unwrap();
            len >>= 7;
            out.push(if len > 0 { b | 0x80 } else { b });
            if len == 0 {
                break;
            }
        }
        out.extend_from_slice(v);
        out
    }

    fn entry(n: u64, k: &str, v: &[u8]) -> Vec<u8> {
        len_field(n, &[len_field(1, k.as_bytes()), len_field(2, v)].concat())
    }

    fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
        let tm = [len_field(1, b"v1"), len_field(2, kind.as_bytes())].concat();
        [
            MAGIC.to_vec(),
            len_field(1, &tm),
            len_field(2, raw),
            len_field(4, b"application/vnd.kubernetes.protobuf"),
        ]
        .concat()
    }

    #[test]
    fn secrets_and_config_maps_decode_to_their_json() {
        let meta = [
            len_field(1, b"x"),
            len_field(3, b"default"),
            entry(11, "app", b"a"),
        ]
        .concat();
        let secret = [
            len_field(1, &meta),
            entry(2, "a", b"b\x00"),
            entry(4, "s", b"text"),
            len_field(3, b"Opaque"),
            vec![5 << 3, 1],
        ]
        .concat();
        assert_eq!(
            decode(&envelope("Secret", &secret)).unwrap(),
            json!({"apiVersion": "v1", "kind": "Secret", "immutable": true, "type": "Opaque",
                   "metadata": {"name": "x", "namespace": "default", "labels": {"app": "a"}},
                   "data": {"a": "YgA="}, "stringData": {"s": "text"}})
        );
        let cm = [
            len_field(1, &len_field(1, b"c")),
            entry(2, "k", b"v"),
            entry(3, "b", b"\x01"),
        ]
        .concat();
        assert_eq!(
            decode(&envelope("ConfigMap", &cm)).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "data": {"k": "v"}, "binaryData": {"b": "AQ=="}})
        );
    }

    #[test]
    fn other_kinds_and_broken_bodies_are_refused() {
        assert_eq!(decode(&envelope("Pod", &[])).unwrap_err().code, 415);
        assert_eq!(decode(b"{}").unwrap_err().code, 400);
        let mut cut = envelope("Secret", &len_field(1, &len_field(1, b"x")));
        cut.truncate(cut.len() - 1);
        assert_eq!(decode(&cut).unwrap_err().code, 400);
    }
}
