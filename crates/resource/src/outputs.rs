//! Output parameters of a resource step (Argo's `SaveResourceParameters`): each parameter
//! with `valueFrom.jsonPath` (kubectl's template, [`crate::jsonpath`]) or
//! `valueFrom.jqFilter` ([`crate::jq`]) is evaluated over the object read after the action
//! and the wait. When there is no object (`get` with `--ignore-not-found` on a missing
//! one), every such parameter takes `valueFrom.default`, or the empty string — as Argo,
//! which uses the default only then: a JSONPath naming a missing field gives the empty
//! string (kubectl allows missing keys), a failing jq filter fails the step.

use argoexec_core::template::Parameter;
use serde_json::Value;

use crate::ResourceError;

/// Whether any parameter needs the object.
pub fn needs_object(params: &[Parameter]) -> bool {
    params
        .iter()
        .filter_map(|p| p.value_from.as_ref())
        .any(|v| v.json_path.is_some() || v.jq_filter.is_some())
}

/// The parameters with their values filled in (others as declared).
///
/// # Errors
/// [`ResourceError::JsonPath`], [`ResourceError::Jq`].
pub fn evaluate(params: &[Parameter], obj: Option<&Value>) -> Result<Vec<Parameter>, ResourceError> {
    let mut out = params.to_vec();
    for p in &mut out {
        let Some(from) = &p.value_from else { continue };
        let Some(obj) = obj else {
            p.value = Some(from.default.clone().unwrap_or_default());
            continue;
        };
        let value = if let Some(t) = from.json_path.as_deref().filter(|t| !t.is_empty()) {
            let err = |source| ResourceError::JsonPath {
                name: p.name.clone(),
                template: t.to_string(),
                source,
            };
            crate::jsonpath::Template::parse(t)
                .and_then(|tpl| tpl.execute(obj))
                .map_err(err)?
        } else if let Some(f) = from.jq_filter.as_deref().filter(|f| !f.is_empty()) {
            crate::jq::run(f, obj).map_err(|source| ResourceError::Jq {
                name: p.name.clone(),
                source,
            })?
        } else {
            continue;
        };
        tracing::info!(name = %p.name, value = %value, "saved output parameter");
        p.value = Some(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use argoexec_core::template::ValueFrom;
    use serde_json::json;

    fn param(name: &str, json_path: Option<&str>, jq: Option<&str>, default: Option<&str>) -> Parameter {
        Parameter {
            name: name.into(),
            value_from: Some(ValueFrom {
                json_path: json_path.map(Into::into),
                jq_filter: jq.map(Into::into),
                default: default.map(Into::into),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn json_path_jq_and_default() {
        let params = vec![
            param("name", Some("{.metadata.name}"), None, Some("d")),
            param("data", None, Some(".data"), None),
            param("missing", Some("{.status.x}"), None, Some("d")),
            Parameter {
                name: "plain".into(),
                value: Some("v".into()),
                ..Default::default()
            },
        ];
        assert!(needs_object(&params));
        let obj = json!({"metadata": {"name": "cm"}, "data": {"b": "2", "a": "1"}});
        let out = evaluate(&params, Some(&obj)).unwrap();
        let values: Vec<Option<&str>> = out.iter().map(|p| p.value.as_deref()).collect();
        assert_eq!(
            values,
            [Some("cm"), Some(r#"{"a":"1","b":"2"}"#), Some(""), Some("v")]
        );
        let out = evaluate(&params, None).unwrap();
        let values: Vec<Option<&str>> = out.iter().map(|p| p.value.as_deref()).collect();
        assert_eq!(values, [Some("d"), Some(""), Some("d"), Some("v")]);
        let bad = vec![param("x", None, Some(".a | error(\"boom\")"), None)];
        let e = evaluate(&bad, Some(&obj)).unwrap_err().to_string();
        assert!(e.contains("output parameter x") && e.contains("boom"), "{e}");
        let bad = vec![param("y", Some("{.a"), None, None)];
        let e = evaluate(&bad, Some(&obj)).unwrap_err().to_string();
        assert!(e.contains("unclosed action"), "{e}");
    }
}
