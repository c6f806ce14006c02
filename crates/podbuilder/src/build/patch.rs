//! `podSpecPatch`: a workflow's or template's patch of the pod spec, applied after the pod
//! is built and before the per-container pass (so `terminationGracePeriodSeconds` set here
//! reaches `ARGO_TERMINATION_GRACE_PERIOD_SECONDS`), the workflow's first, then the
//! template's, as Argo does.
//!
//! Argo applies a Kubernetes *strategic* merge patch. We apply its two rules that matter for
//! pod specs without the API schema: objects merge recursively with `null` deleting a field
//! (RFC 7386), and the `containers` and `initContainers` lists merge element by element on
//! `name` (their `patchMergeKey`), a patch entry whose name matches no container being
//! appended. Every other list is replaced whole, where the strategic patch would merge a few
//! more (volumes by name, tolerations): a patch of those must give the whole list.

use serde_json::{Map, Value};

use super::BuildError;

/// Lists merged by `name`.
const BY_NAME: &[&str] = &["containers", "initContainers"];

/// Apply `patch_text` (YAML or JSON text of a PodSpec fragment) to `spec`.
///
/// # Errors
/// [`BuildError::BadValue`] when the text is not a mapping.
pub(crate) fn apply(spec: &mut Value, patch_text: &str, what: &str) -> Result<(), BuildError> {
    let patch: Value = crate::parse_manifest(patch_text).map_err(|e| BuildError::BadValue {
        what: what.to_string(),
        message: e.to_string(),
    })?;
    if !patch.is_object() {
        return Err(BuildError::BadValue {
            what: what.to_string(),
            message: "must be a mapping of pod spec fields".into(),
        });
    }
    merge(spec, &patch, None);
    Ok(())
}

/// Merge `patch` into `target`; `field` is the key `target` sits under.
fn merge(target: &mut Value, patch: &Value, field: Option<&str>) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => merge_object(t, p),
        (Value::Array(t), Value::Array(p)) if field.is_some_and(|f| BY_NAME.contains(&f)) => {
            for entry in p {
                let name = entry.get("name").and_then(Value::as_str);
                match t
                    .iter_mut()
                    .find(|c| name.is_some() && c.get("name").and_then(Value::as_str) == name)
                {
                    Some(existing) => merge(existing, entry, None),
                    None => t.push(entry.clone()),
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn merge_object(t: &mut Map<String, Value>, p: &Map<String, Value>) {
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
            continue;
        }
        match t.get_mut(k) {
            Some(existing) if existing.is_object() || existing.is_array() => merge(existing, v, Some(k)),
            _ => {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_rules_for_pod_specs() {
        let mut spec = json!({
            "containers": [{"name": "wait", "image": "e"}, {"name": "main", "image": "b", "resources": {"limits": {"cpu": "1"}}}],
            "restartPolicy": "Never",
            "volumes": [{"name": "a"}]
        });
        apply(
            &mut spec,
            "terminationGracePeriodSeconds: 60\ncontainers:\n- name: main\n  resources: {limits: {memory: 1Gi}}\n- name: extra\n  image: x\nvolumes: [{name: b}]\nrestartPolicy: null\n",
            "podSpecPatch",
        )
        .unwrap();
        assert_eq!(spec["terminationGracePeriodSeconds"], 60);
        assert_eq!(
            spec["containers"][1]["resources"]["limits"],
            json!({"cpu": "1", "memory": "1Gi"})
        );
        assert_eq!(spec["containers"][2]["name"], "extra");
        assert_eq!(
            spec["volumes"],
            json!([{"name": "b"}]),
            "other lists are replaced"
        );
        assert!(spec.get("restartPolicy").is_none(), "null deletes");
        let e = apply(&mut spec, "[1, 2]", "podSpecPatch").unwrap_err();
        assert!(e.to_string().contains("podSpecPatch"), "{e}");
    }
}
