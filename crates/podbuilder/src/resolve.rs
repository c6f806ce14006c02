//! Resolving a template the way the controller does before it builds the pod: bind the
//! entrypoint's inputs from the workflow arguments (overridden by `-p name=value`), apply
//! defaults, check enums, then substitute `{{…}}` references everywhere in the template.
//!
//! Supported references: `inputs.parameters.X`, `workflow.parameters.X`, `workflow.name`,
//! `pod.name`, `inputs.artifacts.X.path`, `outputs.parameters.X.path`,
//! `outputs.artifacts.X.path`. Anything else left in braces is an error naming it, so a typo
//! never reaches the pod as literal text.

use std::collections::BTreeMap;

use argoexec_core::Template;
use serde_json::Value;

/// Why a template could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// An input parameter has no value, argument or default.
    #[error("input parameter {0:?} has no value: pass -p {0}=VALUE or give it a default")]
    MissingInput(String),
    /// A value is not in the parameter's enum.
    #[error("input parameter {name:?} value {value:?} is not one of {allowed:?}")]
    NotInEnum {
        /// Parameter.
        name: String,
        /// Given value.
        value: String,
        /// Allowed values.
        allowed: Vec<String>,
    },
    /// A `{{…}}` reference that cannot be resolved.
    #[error("unresolved reference {{{{{0}}}}} in the template")]
    Unresolved(String),
    /// A `-p` argument is not `name=value`.
    #[error("bad parameter {0:?}: expected name=value")]
    BadArgument(String),
}

/// Parse `-p name=value` arguments.
///
/// # Errors
/// [`ResolveError::BadArgument`].
pub fn parse_overrides(args: &[String]) -> Result<BTreeMap<String, String>, ResolveError> {
    args.iter()
        .map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| ResolveError::BadArgument(a.clone()))
        })
        .collect()
}

/// Resolve `template` for workflow `wf_name` / pod `pod_name`.
///
/// # Errors
/// [`ResolveError`] naming the parameter or reference.
pub fn resolve(
    template: &Template,
    workflow_arguments: &Value,
    overrides: &BTreeMap<String, String>,
    wf_name: &str,
    pod_name: &str,
) -> Result<Template, ResolveError> {
    let mut wf_params: BTreeMap<String, String> = BTreeMap::new();
    for p in workflow_arguments
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(n), Some(v)) = (
            p.get("name").and_then(Value::as_str),
            p.get("value").and_then(Value::as_str),
        ) {
            wf_params.insert(n.into(), v.into());
        }
    }
    wf_params.extend(overrides.clone());
    let mut t = template.clone();
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    for p in &mut t.inputs.parameters {
        let value = wf_params
            .get(&p.name)
            .cloned()
            .or_else(|| p.value.clone())
            .or_else(|| p.default.clone())
            .ok_or_else(|| ResolveError::MissingInput(p.name.clone()))?;
        if !p.enum_values.is_empty() && !p.enum_values.contains(&value) {
            return Err(ResolveError::NotInEnum {
                name: p.name.clone(),
                value,
                allowed: p.enum_values.clone(),
            });
        }
        vars.insert(format!("inputs.parameters.{}", p.name), value.clone());
        p.value = Some(value);
    }
    for (k, v) in &wf_params {
        vars.insert(format!("workflow.parameters.{k}"), v.clone());
    }
    vars.insert("workflow.name".into(), wf_name.into());
    vars.insert("pod.name".into(), pod_name.into());
    for a in &t.inputs.artifacts {
        if let Some(p) = &a.path {
            vars.insert(format!("inputs.artifacts.{}.path", a.name), p.clone());
        }
    }
    for p in &t.outputs.parameters {
        if let Some(path) = p.value_from.as_ref().and_then(|v| v.path.clone()) {
            vars.insert(format!("outputs.parameters.{}.path", p.name), path);
        }
    }
    for a in &t.outputs.artifacts {
        if let Some(p) = &a.path {
            vars.insert(format!("outputs.artifacts.{}.path", a.name), p.clone());
        }
    }
    let mut json = serde_json::to_value(&t).map_err(|e| ResolveError::Unresolved(e.to_string()))?;
    substitute(&mut json, &vars)?;
    serde_json::from_value(json).map_err(|e| ResolveError::Unresolved(e.to_string()))
}

fn substitute(v: &mut Value, vars: &BTreeMap<String, String>) -> Result<(), ResolveError> {
    match v {
        Value::String(s) if s.contains("{{") => *s = substitute_str(s, vars)?,
        Value::Array(a) => a.iter_mut().try_for_each(|x| substitute(x, vars))?,
        Value::Object(m) => m.values_mut().try_for_each(|x| substitute(x, vars))?,
        _ => {}
    }
    Ok(())
}

fn substitute_str(s: &str, vars: &BTreeMap<String, String>) -> Result<String, ResolveError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| ResolveError::Unresolved(after.to_string()))?;
        let key = after[..end].trim();
        out.push_str(
            vars.get(key)
                .ok_or_else(|| ResolveError::Unresolved(key.to_string()))?,
        );
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = r#"{"name": "t",
      "inputs": {"parameters": [{"name": "msg"}, {"name": "n", "default": "1"}, {"name": "color", "enum": ["red", "blue"], "default": "red"}],
                 "artifacts": [{"name": "in", "path": "/in/x"}]},
      "outputs": {"parameters": [{"name": "o", "valueFrom": {"path": "/tmp/o"}}]},
      "container": {"image": "busybox", "command": ["sh", "-c"],
        "args": ["echo {{inputs.parameters.msg}} {{ inputs.parameters.n }} {{workflow.parameters.msg}} {{workflow.name}}/{{pod.name}} {{inputs.artifacts.in.path}} > {{outputs.parameters.o.path}}"]}}"#;

    fn args(msg: &str) -> Value {
        serde_json::json!({"parameters": [{"name": "msg", "value": msg}]})
    }

    #[test]
    fn binds_and_substitutes() {
        let t = Template::from_json(T).unwrap();
        let r = resolve(&t, &args("hi"), &BTreeMap::new(), "wf", "pod-1").unwrap();
        assert_eq!(
            r.container.as_ref().unwrap().args.as_ref().unwrap()[0],
            "echo hi 1 hi wf/pod-1 /in/x > /tmp/o"
        );
        assert_eq!(r.inputs.parameters[0].value.as_deref(), Some("hi"));
        let over = parse_overrides(&["msg=yo".into()]).unwrap();
        let r = resolve(&t, &args("hi"), &over, "wf", "p").unwrap();
        assert!(
            r.container.unwrap().args.unwrap()[0].starts_with("echo yo 1 yo"),
            "-p overrides the workflow argument"
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let t = Template::from_json(T).unwrap();
        let e = resolve(&t, &Value::Null, &BTreeMap::new(), "wf", "p").unwrap_err();
        assert_eq!(e, ResolveError::MissingInput("msg".into()));
        let over = parse_overrides(&["color=green".into()]).unwrap();
        assert!(matches!(
            resolve(&t, &args("x"), &over, "wf", "p"),
            Err(ResolveError::NotInEnum { .. })
        ));
        let bad =
            Template::from_json(r#"{"container": {"image": "x", "args": ["{{inputs.parameters.nope}}"]}}"#)
                .unwrap();
        let e = resolve(&bad, &Value::Null, &BTreeMap::new(), "wf", "p").unwrap_err();
        assert!(e.to_string().contains("{{inputs.parameters.nope}}"), "{e}");
        assert!(parse_overrides(&["novalue".into()]).is_err());
    }
}
