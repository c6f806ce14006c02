//! JSON ↔ expr values. JSON integers (signed or unsigned up to `i64::MAX`) become expr
//! integers, other numbers floats (as Go's `encoding/json` gives `float64` to an `any`
//! field, and expr then compares `1 == 1.0` as true either way); objects become maps in
//! their key order. Back: integers stay integers, finite floats stay floats, bytes become
//! base64 text (Go's `json.Marshal` of a `[]byte`), maps with only string keys objects.

use base64::Engine as _;
use expr::Value as X;
use serde_json::{Map, Number, Value};

/// A value JSON cannot hold.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotJson {
    /// NaN or ±infinity (Go: `json: unsupported value`).
    #[error("unsupported value {0} (JSON has no NaN or infinity)")]
    Float(f64),
    /// A map key that is not a string (Go: `json: unsupported type`).
    #[error("a map key {0} that is not a string")]
    Key(String),
    /// A kind this build has no JSON form for (time values).
    #[error("a {0} value")]
    Kind(String),
}

/// A JSON value as an expr value.
pub fn to_expr(v: &Value) -> X {
    match v {
        Value::Null => X::Nil,
        Value::Bool(b) => X::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => X::Integer(i),
            None => X::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => X::String(s.clone()),
        Value::Array(items) => X::Array(items.iter().map(to_expr).collect()),
        Value::Object(map) => X::Map(map.iter().map(|(k, v)| (k.clone(), to_expr(v))).collect()),
    }
}

/// An expr value as JSON.
///
/// # Errors
/// [`NotJson`] for NaN, infinities, non-string map keys and time values.
pub fn to_json(v: &X) -> Result<Value, NotJson> {
    Ok(match v {
        X::Nil => Value::Null,
        X::Bool(b) => Value::Bool(*b),
        X::Integer(i) => Value::Number((*i).into()),
        X::Float(f) => Value::Number(Number::from_f64(*f).ok_or(NotJson::Float(*f))?),
        X::String(s) => Value::String(s.clone()),
        X::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        X::Array(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        X::Map(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(k.clone(), to_json(v)?);
            }
            Value::Object(out)
        }
        X::KeyedMap(pairs) => {
            let mut out = Map::new();
            for (k, v) in pairs {
                let X::String(key) = k else {
                    return Err(NotJson::Key(k.to_string()));
                };
                out.insert(key.clone(), to_json(v)?);
            }
            Value::Object(out)
        }
        #[allow(unreachable_patterns)]
        other => return Err(NotJson::Kind(format!("{other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_keeps_integers_floats_nulls_and_nesting() {
        let v = json!({"i": 3, "neg": -7, "f": 1.5, "whole": 2.0, "n": null, "b": true,
                       "s": "x", "a": [1, [2.5, "y"], {"k": null}], "big": 18446744073709551615u64});
        let x = to_expr(&v);
        let X::Map(m) = &x else { panic!("a map: {x:?}") };
        assert_eq!(m["i"], X::Integer(3));
        assert_eq!(m["whole"], X::Float(2.0));
        assert_eq!(m["big"], X::Float(18446744073709551615u64 as f64));
        let back = to_json(&x).unwrap();
        assert_eq!(back["i"], json!(3));
        assert!(back["i"].is_i64() && back["whole"].is_f64());
        assert_eq!(back["a"], v["a"]);
        assert_eq!(back["n"], Value::Null);
    }

    #[test]
    fn no_json_for_nan_or_non_string_keys() {
        let nan = to_json(&X::Float(f64::NAN)).unwrap_err();
        assert!(nan.to_string().contains("NaN"), "{nan}");
        let keyed = X::KeyedMap(vec![(X::Integer(1), X::Nil)]);
        assert_eq!(to_json(&keyed).unwrap_err(), NotJson::Key("1".into()));
        assert_eq!(to_json(&X::Bytes(b"hi".to_vec())).unwrap(), json!("aGk="));
    }
}
