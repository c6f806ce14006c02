//! `valueFrom.jqFilter`: jq over the object's JSON, with jaq (jaq-core, jaq-std, jaq-json)
//! standing in for the gojq Argo links. As Argo prints the results: each output on its own
//! line, strings raw, everything else as Go's `json.Marshal` writes it (sorted keys, see
//! [`crate::gojson`]), the whole trimmed of surrounding white space; the first error ends
//! the evaluation.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde_json::Value;

use crate::gojson;

/// Why a filter failed: it does not parse or compile, or it raised an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JqError(pub String);

/// Run `filter` over `input` and print its outputs as Argo does.
///
/// # Errors
/// [`JqError`] for a filter that does not compile or that raises an error.
pub fn run(filter: &str, input: &Value) -> Result<String, JqError> {
    let bytes = serde_json::to_vec(input).map_err(|e| JqError(e.to_string()))?;
    let input = jaq_json::read::parse_single(&bytes).map_err(|e| JqError(format!("{e:?}")))?;
    let program = File {
        code: filter,
        path: (),
    };
    let defs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
    let funs = jaq_core::funs().chain(jaq_std::funs()).chain(jaq_json::funs());
    let arena = Arena::default();
    let modules = Loader::new(defs).load(&arena, program).map_err(|errs| {
        JqError(format!(
            "cannot parse jq filter {filter:?}: {:?}",
            errs.into_iter().map(|(_, e)| e).collect::<Vec<_>>()
        ))
    })?;
    let compiled = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| {
            JqError(format!(
                "cannot compile jq filter {filter:?}: {:?}",
                errs.into_iter().map(|(_, e)| e).collect::<Vec<_>>()
            ))
        })?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&compiled.lut, Vars::new([]));
    let mut out = String::new();
    for v in compiled.id.run((ctx, input)).map(unwrap_valr) {
        let v = v.map_err(|e| JqError(format!("jq filter {filter:?}: {e}")))?;
        out.push_str(&print(&v));
        out.push('\n');
    }
    Ok(out.trim().to_string())
}

fn print(v: &Val) -> String {
    match v {
        Val::TStr(s) => String::from_utf8_lossy(s).into_owned(),
        other => {
            let text = other.to_string();
            match serde_json::from_str::<Value>(&text) {
                Ok(json) => gojson::marshal(&json),
                Err(_) => text,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj() -> Value {
        json!({"metadata": {"name": "cm", "labels": {"b": "2", "a": "<1>"}},
               "data": {"k": "v", "n": "3"}, "items": [1, 2.5, 3]})
    }

    #[test]
    fn strings_raw_others_as_go_json() {
        let o = obj();
        assert_eq!(run(".metadata.name", &o).unwrap(), "cm");
        assert_eq!(
            run(".metadata.labels", &o).unwrap(),
            r#"{"a":"\u003c1\u003e","b":"2"}"#
        );
        assert_eq!(run(".items", &o).unwrap(), "[1,2.5,3]");
        assert_eq!(run(".items[]", &o).unwrap(), "1\n2.5\n3");
        assert_eq!(run(".missing", &o).unwrap(), "null");
        assert_eq!(run("empty", &o).unwrap(), "");
        assert_eq!(run(".items | length", &o).unwrap(), "3");
        assert_eq!(run(".data | keys", &o).unwrap(), r#"["k","n"]"#);
        assert_eq!(run(r#".data.n | tonumber + 1"#, &o).unwrap(), "4");
        assert_eq!(
            run(r#"[.data | to_entries[] | "\(.key)=\(.value)"] | join(",")"#, &o).unwrap(),
            "k=v,n=3"
        );
        assert_eq!(run(r#".metadata.name | test("^c")"#, &o).unwrap(), "true");
    }

    #[test]
    fn errors_name_the_filter() {
        let o = obj();
        let e = run(".metadata.name | .x", &o).unwrap_err();
        assert!(e.0.contains(".metadata.name | .x"), "{e}");
        let e = run(".[", &o).unwrap_err();
        assert!(e.0.contains("cannot parse"), "{e}");
        let e = run("nosuchfunction", &o).unwrap_err();
        assert!(e.0.contains("cannot compile"), "{e}");
    }
}
