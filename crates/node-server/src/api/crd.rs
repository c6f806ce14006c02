//! `apiextensions.k8s.io/v1` CustomResourceDefinitions: checked as the API server checks
//! the parts this node uses, and, once stored, the type they define is served at once —
//! registered with its served versions, scope, names and status subresource — and the CRD's
//! status says so (`NamesAccepted` and `Established` `True`, `acceptedNames`,
//! `storedVersions`), as the apiextensions controllers write it. Deleting a CRD deletes
//! every object of its type.

use serde_json::{Value, json};

use super::Api;
use crate::registry::{ALL_VERBS, CRDS, ResourceType};
use crate::status::{ApiError, Resource};
use crate::store::now_rfc3339;

fn invalid(name: &str, field: &str, detail: &str) -> ApiError {
    ApiError::invalid(&CRDS.resource, name, field, detail)
}

/// Check and default a CRD about to be stored.
///
/// # Errors
/// 422 naming the field, in the API server's words.
pub(super) fn admit(obj: &mut Value) -> Result<(), ApiError> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let spec = &obj["spec"];
    let text = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    let (group, plural, kind) = (text("/group"), text("/names/plural"), text("/names/kind"));
    for (field, v) in [
        ("spec.group", &group),
        ("spec.names.plural", &plural),
        ("spec.names.kind", &kind),
    ] {
        if v.is_empty() {
            return Err(invalid(&name, field, "Required value"));
        }
    }
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            &name,
            "metadata.name",
            &format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    match spec["scope"].as_str() {
        Some("Namespaced" | "Cluster") => {}
        Some(s) => {
            return Err(invalid(
                &name,
                "spec.scope",
                &format!("Unsupported value: {s:?}: supported values: \"Cluster\", \"Namespaced\""),
            ));
        }
        None => return Err(invalid(&name, "spec.scope", "Required value")),
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        return Err(invalid(
            &name,
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version",
        ));
    }
    let storage = versions.iter().filter(|v| v["storage"] == true).count();
    if storage != 1 {
        return Err(invalid(
            &name,
            "spec.versions",
            &format!(
                "Invalid value: []apiextensions.CustomResourceDefinitionVersion{{...}}: must have exactly one version marked as storage version (found {storage})"
            ),
        ));
    }
    let names = &mut obj["spec"]["names"];
    if names["singular"].as_str().is_none_or(str::is_empty) {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names["listKind"].as_str().is_none_or(str::is_empty) {
        names["listKind"] = json!(format!("{kind}List"));
    }
    Ok(())
}

/// A stored CRD keeps its group and names.
///
/// # Errors
/// 422 `field is immutable`.
pub(super) fn change(before: &Value, after: &Value) -> Result<(), ApiError> {
    let name = before["metadata"]["name"].as_str().unwrap_or("");
    if before["spec"]["group"] != after["spec"]["group"] {
        return Err(invalid(name, "spec.group", "Invalid value: field is immutable"));
    }
    Ok(())
}

/// The type a stored CRD defines.
pub(crate) fn type_of(crd: &Value) -> Option<ResourceType> {
    let spec = &crd["spec"];
    let s = |p: &str| spec.pointer(p).and_then(Value::as_str).map(str::to_string);
    let strings = |p: &str| -> Vec<String> {
        spec.pointer(p)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let versions = spec["versions"].as_array()?;
    let storage = versions.iter().find(|v| v["storage"] == true)?;
    let mut served: Vec<String> = versions
        .iter()
        .filter(|v| v["served"] == true)
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect();
    let storage_name = storage["name"].as_str()?.to_string();
    // The storage version is the one objects carry; list it first when served.
    if let Some(i) = served.iter().position(|v| *v == storage_name) {
        let v = served.remove(i);
        served.insert(0, v);
    }
    if served.is_empty() {
        return None;
    }
    let (group, plural, kind) = (s("/group")?, s("/names/plural")?, s("/names/kind")?);
    Some(ResourceType {
        resource: Resource::owned(&group, &plural, &kind),
        singular: s("/names/singular").unwrap_or_else(|| kind.to_lowercase()),
        versions: served,
        namespaced: s("/scope").as_deref() != Some("Cluster"),
        short_names: strings("/names/shortNames"),
        categories: strings("/names/categories"),
        status: storage["subresources"]["status"].is_object(),
        built_in: false,
        generation: true,
        verbs: ALL_VERBS.to_vec(),
        delete_returns_object: false,
        crd: crd["metadata"]["name"].as_str().map(str::to_string),
    })
}

/// After a CRD was written: serve its type and say so in its status.
pub(super) fn established(api: &Api, crd: &Value) {
    let Some(name) = crd["metadata"]["name"].as_str() else {
        return;
    };
    let (accepted, reason, message) = match type_of(crd).map(|t| api.registry.register(t)) {
        Some(Ok(t)) => {
            tracing::info!(crd = name, versions = ?t.versions, "custom resource type served");
            (true, "NoConflicts", "no conflicts found".to_string())
        }
        Some(Err(e)) => (false, "NameConflict", e),
        None => (false, "NoServedVersions", "no version is served".to_string()),
    };
    let status = |b: bool| if b { "True" } else { "False" };
    let conditions = [
        ("NamesAccepted", accepted, reason, message.as_str()),
        (
            "Established",
            accepted,
            if accepted {
                "InitialNamesAccepted"
            } else {
                "NotAccepted"
            },
            if accepted {
                "the initial names have been accepted"
            } else {
                "not all names are accepted"
            },
        ),
    ];
    let r = api.store.update(&CRDS, "", name, |o| {
        let old = o["status"]["conditions"].as_array().cloned().unwrap_or_default();
        let conds: Vec<Value> = conditions
            .iter()
            .map(|(ty, ok, reason, message)| {
                let since = old
                    .iter()
                    .find(|c| c["type"] == *ty && c["status"] == status(*ok))
                    .map_or_else(|| json!(now_rfc3339()), |c| c["lastTransitionTime"].clone());
                json!({"type": ty, "status": status(*ok), "lastTransitionTime": since, "reason": reason, "message": message})
            })
            .collect();
        let storage = o["spec"]["versions"]
            .as_array()
            .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
            .map(|v| v["name"].clone())
            .unwrap_or(Value::Null);
        let mut stored = o["status"]["storedVersions"].as_array().cloned().unwrap_or_default();
        if !stored.contains(&storage) {
            stored.push(storage);
        }
        o["status"] = json!({
            "conditions": conds,
            "acceptedNames": if accepted { o["spec"]["names"].clone() } else { json!({"plural": "", "kind": ""}) },
            "storedVersions": stored,
        });
        Ok(())
    });
    if let Err(e) = r {
        tracing::warn!(crd = name, error = %e, "could not write the CRD's status");
    }
}

/// After a CRD was deleted: stop serving its type and delete its objects.
pub(super) fn removed(api: &Api, crd: &Value) {
    let Some(name) = crd["metadata"]["name"].as_str() else {
        return;
    };
    let Some(t) = api.registry.unregister(name) else {
        return;
    };
    let (items, _) = api.store.list(&t, None);
    for o in &items {
        let ns = o["metadata"]["namespace"].as_str().unwrap_or("");
        if let Some(n) = o["metadata"]["name"].as_str() {
            api.store.delete(&t, ns, n);
        }
    }
    tracing::info!(
        crd = name,
        deleted = items.len(),
        "custom resource type removed with its objects"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false},
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                {"name": "v0", "served": false, "storage": false}]}})
    }

    #[test]
    fn a_crd_defines_its_type() {
        let mut c = crd();
        admit(&mut c).unwrap();
        assert_eq!(c["spec"]["names"]["singular"], "widget");
        assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
        let t = type_of(&c).unwrap();
        assert_eq!(t.versions, vec!["v1", "v1beta1"]);
        assert!(t.namespaced && t.status && !t.built_in && t.generation);
        assert_eq!(t.short_names, vec!["wd"]);
        assert_eq!(t.crd.as_deref(), Some("widgets.example.com"));
        c["spec"]["scope"] = json!("Cluster");
        c["spec"]["versions"][1]["subresources"] = json!({});
        let t = type_of(&c).unwrap();
        assert!(!t.namespaced && !t.status);
    }

    #[test]
    fn bad_crds_are_refused_with_the_field() {
        let mut c = crd();
        c["metadata"]["name"] = json!("w.example.com");
        assert!(
            admit(&mut c)
                .unwrap_err()
                .message
                .contains("metadata.name: Invalid value")
        );
        let mut c = crd();
        c["spec"]["versions"][0]["storage"] = json!(true);
        let e = admit(&mut c).unwrap_err();
        assert!(
            e.message
                .contains("exactly one version marked as storage version"),
            "{}",
            e.message
        );
        let mut c = crd();
        c["spec"]["scope"] = json!("Global");
        assert!(
            admit(&mut c)
                .unwrap_err()
                .message
                .contains("spec.scope: Unsupported value")
        );
        let mut c = crd();
        c["spec"]["names"]["kind"] = json!("");
        assert!(
            admit(&mut c)
                .unwrap_err()
                .message
                .contains("spec.names.kind: Required value")
        );
        let mut after = crd();
        after["spec"]["group"] = json!("other.com");
        assert_eq!(change(&crd(), &after).unwrap_err().code, 422);
    }
}
