//! Values printed as Argo's Go code prints them, so output parameters are byte-for-byte
//! what an Argo executor reports:
//!
//! - [`marshal`]: Go's `encoding/json.Marshal` of a decoded value (what kubectl's JSONPath
//!   printer and gojq's caller use for objects and arrays): object keys sorted, `<`, `>`,
//!   `&`, U+2028 and U+2029 escaped as `\u003c` …, floats in the shortest form with an
//!   exponent only below 1e-6 or from 1e21 (`1e+21`, `1e-7`);
//! - [`text`]: `fmt.Fprint` of a scalar (kubectl's JSONPath for strings, numbers and
//!   booleans): strings raw, integers in decimal, floats as `%v` (shortest, exponent from
//!   1e+06 or below 1e-04), `null` as `null`.

use serde_json::Value;

/// Go's `json.Marshal` of `v`.
pub fn marshal(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&json_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, &map[k]);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The shortest digits and decimal exponent of `f` (`1.5e-7` → `("15", -7)`).
fn digits(f: f64) -> (String, i32) {
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// Go's `%e` with the shortest digits: `1.5e-07`, `1e+21`; `min_exp_digits` is 2 for
/// `strconv`, and JSON then strips a leading zero of a negative exponent.
fn exp_form(f: f64, json: bool) -> String {
    let (d, exp) = digits(f);
    let sign = if f < 0.0 { "-" } else { "" };
    let mantissa = if d.len() > 1 {
        format!("{}.{}", &d[..1], &d[1..])
    } else {
        d.clone()
    };
    let esign = if exp < 0 { '-' } else { '+' };
    let e = exp.unsigned_abs();
    if json && exp < 0 && e < 10 {
        format!("{sign}{mantissa}e{esign}{e}")
    } else {
        format!("{sign}{mantissa}e{esign}{e:02}")
    }
}

/// `encoding/json`'s float: `'f'` unless |f| < 1e-6 or ≥ 1e21.
fn json_float(f: f64) -> String {
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        exp_form(f, true)
    } else {
        f.to_string()
    }
}

/// `fmt`'s `%v` of a float64: `strconv.FormatFloat(f, 'g', -1, 64)`.
fn go_g(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return match f {
            x if x.is_nan() => "NaN".into(),
            x if x == f64::INFINITY => "+Inf".into(),
            x if x == f64::NEG_INFINITY => "-Inf".into(),
            _ => "0".into(),
        };
    }
    let (_, exp) = digits(f);
    if !(-4..6).contains(&exp) {
        exp_form(f, false)
    } else {
        f.to_string()
    }
}

/// `fmt.Fprint` of a scalar; arrays and objects as [`marshal`].
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => go_g(f),
            _ => n.to_string(),
        },
        Value::Array(_) | Value::Object(_) => marshal(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marshal_sorts_keys_and_escapes_html() {
        let v = json!({"z": 1, "a": {"y": [true, null], "b": "<a&b>\n\"\u{1}"}});
        assert_eq!(
            marshal(&v),
            r#"{"a":{"b":"\u003ca\u0026b\u003e\n\"\u0001","y":[true,null]},"z":1}"#
        );
    }

    #[test]
    fn floats_as_go_prints_them() {
        assert_eq!(marshal(&json!(1.5)), "1.5");
        assert_eq!(marshal(&json!(1e21)), "1e+21");
        assert_eq!(marshal(&json!(1.5e-7)), "1.5e-7");
        assert_eq!(marshal(&json!(123456789.0)), "123456789");
        assert_eq!(marshal(&json!(-2.5e22)), "-2.5e+22");
        assert_eq!(text(&json!(1.5)), "1.5");
        assert_eq!(text(&json!(1e6)), "1e+06");
        assert_eq!(text(&json!(123456.0)), "123456");
        assert_eq!(text(&json!(1234567.5)), "1.2345675e+06");
        assert_eq!(text(&json!(0.00001)), "1e-05");
        assert_eq!(text(&json!(0.0001)), "0.0001");
        assert_eq!(text(&json!(0.0)), "0");
        assert_eq!(text(&json!(-3)), "-3");
    }

    #[test]
    fn text_is_raw_for_strings() {
        assert_eq!(text(&json!("a <b>")), "a <b>");
        assert_eq!(text(&json!(true)), "true");
        assert_eq!(text(&json!(null)), "null");
        assert_eq!(text(&json!({"b": 1, "a": 2})), r#"{"a":2,"b":1}"#);
    }
}
