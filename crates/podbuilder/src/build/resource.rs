//! Resource templates (`template.resource`): the pod Argo's `executeResource` asks for.
//!
//! - `main` is an executor-image container running `argoexec resource <action>` with the
//!   controller's log options; the per-container pass wraps it in the emissary like any main
//!   (`/var/run/argo/argoexec emissary -- argoexec resource …`, AW@v4.1.2
//!   `workflow/controller/operator.go`).
//! - There is an `init` (it writes `/var/run/argo/template` in v3.6+, where `main` reads the
//!   template), and a `wait` only from v3.7 and only when the template archives its logs
//!   (AW#13933); before v3.7 resource pods never had one.
//! - The executor-image containers are locked down when the config map's `executor` sets no
//!   `securityContext` (v3.4+, `newExecContainer`): v3.4/v3.5 drop every capability, run as
//!   UID 8737 non-root without privilege escalation; v3.6+ use `MinimalCtrSC`, which adds
//!   `privileged: false` and the `RuntimeDefault` seccomp profile. The read-only root file
//!   system applies to `main` only (`/tmp` is the `tmp-dir-argo` volume there).
//! - `setOwnerReference`: the controller, not the executor, appends the Workflow as the
//!   controlling owner of the manifest's object. Argo re-marshals only the first YAML
//!   document; argoexec-rs adds the reference to every document of the manifest, so a
//!   multi-document manifest does not silently lose its other objects. The manifest is
//!   written back as JSON, one document per line (valid YAML).

use argoexec_core::ArgoVersion;
use argoexec_core::template::{MAIN, ResourceTemplate};
use k8s_openapi::api::core::v1 as core;
use serde_json::{Value, json};

use super::containers::executor_container;
use super::{BuildCtx, BuildError, WorkflowMeta, workflow_owner};

/// The actions Argo accepts (`validate.go`).
pub const ACTIONS: [&str; 6] = ["get", "create", "apply", "delete", "replace", "patch"];

/// Check a resource template as Argo's validator does (`validate.go`), and more: an
/// action Argo accepts, a manifest from exactly one place for actions that need one, a
/// `manifestFrom` artifact among the inputs, a manifest that is YAML, a known merge
/// strategy, and no conditions or outputs on `delete` (Argo's executor refuses those only
/// when the pod runs; here they fail before any pod exists).
///
/// # Errors
/// [`BuildError::BadResource`] naming what to change.
pub(crate) fn validate(template: &argoexec_core::Template) -> Result<(), BuildError> {
    let Some(r) = &template.resource else {
        return Ok(());
    };
    let bad = |problem: String| BuildError::BadResource {
        template: template.name.clone(),
        problem,
    };
    if !ACTIONS.contains(&r.action.as_str()) {
        return Err(bad(format!(
            "resource.action {:?} must be one of: {}",
            r.action,
            ACTIONS.join(", ")
        )));
    }
    let manifest = r.manifest.as_deref().filter(|m| !m.is_empty());
    if !matches!(r.action.as_str(), "get" | "delete") {
        match (manifest, &r.manifest_from) {
            (None, None) => {
                return Err(bad(
                    "either resource.manifest or resource.manifestFrom must be specified".into(),
                ));
            }
            (Some(_), Some(_)) => {
                return Err(bad(
                    "resource.manifest and resource.manifestFrom are both specified; keep one".into(),
                ));
            }
            _ => {}
        }
    }
    if let Some(from) = &r.manifest_from
        && !template
            .inputs
            .artifacts
            .iter()
            .any(|a| a.name == from.artifact.name)
    {
        return Err(bad(format!(
            "artifact {:?} in resource.manifestFrom is not among the template's input artifacts",
            from.artifact.name
        )));
    }
    if let Some(m) = manifest
        && let Err(e) = serde_saphyr::from_multiple::<Value>(m)
    {
        return Err(bad(format!("resource.manifest must be valid YAML: {e}")));
    }
    if !matches!(r.merge_strategy(), "strategic" | "merge" | "json") {
        return Err(bad(format!(
            "resource.mergeStrategy {:?} must be one of: strategic, merge, json",
            r.merge_strategy()
        )));
    }
    let has_outputs = !template.outputs.parameters.is_empty();
    if r.action == "delete" && (r.success_condition.is_some() || r.failure_condition.is_some() || has_outputs)
    {
        return Err(bad(
            "successCondition, failureCondition and outputs are not supported for the delete action".into(),
        ));
    }
    Ok(())
}

/// Whether the pod has a `wait` container: every template but data templates (never) and
/// resource templates, which have one only in v3.7+ when they archive logs.
pub(crate) fn needs_wait(ctx: &BuildCtx<'_>) -> bool {
    if ctx.template.data.is_some() {
        return false;
    }
    ctx.template.resource.is_none() || (ctx.version >= ArgoVersion::V3_7 && ctx.template.archive_logs())
}

/// The `main` container of a resource template.
pub(crate) fn main(ctx: &BuildCtx<'_>, r: &ResourceTemplate) -> core::Container {
    let mut c = executor_container(ctx, MAIN, "resource", false);
    if let Some(cmd) = c.command.as_mut() {
        cmd.insert(2, r.action.clone());
    }
    // `manifestFrom.artifact`: the input artifact at its path, as any main sees it.
    c.volume_mounts = Some(super::initless::input_mounts(ctx, MAIN));
    c
}

/// Lock the executor-image containers of a resource pod down, as `newExecContainer` does
/// when the config map's executor has no security context.
pub(crate) fn lock_down(ctx: &BuildCtx<'_>, c: &mut core::Container) {
    if ctx.template.resource.is_none()
        || ctx.version == ArgoVersion::V3_3
        || ctx.exec_tpl.security_context.is_some()
        || c.image.as_deref() != Some(ctx.exec_image.as_str())
    {
        return;
    }
    c.security_context = Some(minimal_sc(ctx.version, c.name == MAIN));
}

/// The locked-down security context of `version`; `read_only` for `main`.
pub fn minimal_sc(version: ArgoVersion, read_only: bool) -> core::SecurityContext {
    // v3.6 introduced MinimalCtrSC; the builder's lines after v3.5 are v3.7, v4.0, v4.1.
    let minimal = version >= ArgoVersion::V3_7;
    core::SecurityContext {
        capabilities: Some(core::Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        privileged: minimal.then_some(false),
        run_as_non_root: Some(true),
        run_as_user: Some(8737),
        read_only_root_filesystem: read_only.then_some(true),
        allow_privilege_escalation: Some(false),
        seccomp_profile: minimal.then(|| core::SeccompProfile {
            type_: "RuntimeDefault".into(),
            localhost_profile: None,
        }),
        ..Default::default()
    }
}

/// The template with the Workflow added as controlling owner of every object of its
/// manifest, when `setOwnerReference` asks for it (else unchanged).
///
/// # Errors
/// The manifest is not YAML, or a document is not an object.
pub fn with_owner_reference(
    template: &argoexec_core::Template,
    wf: &WorkflowMeta,
) -> Result<Option<String>, BuildError> {
    let Some(r) = template.resource.as_ref().filter(|r| r.set_owner_reference) else {
        return Ok(None);
    };
    let Some(manifest) = r.manifest.as_deref() else {
        return Ok(None);
    };
    let bad = |message: String| BuildError::BadValue {
        what: format!("template {:?} resource.manifest", template.name),
        message,
    };
    let docs: Vec<Value> = serde_saphyr::from_multiple(manifest).map_err(|e| bad(e.to_string()))?;
    let owner = serde_json::to_value(workflow_owner(wf)).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    for mut d in docs.into_iter().filter(|d| !d.is_null()) {
        let Some(obj) = d.as_object_mut() else {
            return Err(bad("a document is not a mapping".into()));
        };
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        let refs = meta
            .as_object_mut()
            .map(|m| m.entry("ownerReferences").or_insert_with(|| json!([])));
        match refs {
            Some(Value::Array(a)) => a.push(owner.clone()),
            Some(other) => *other = json!([owner.clone()]),
            None => {}
        }
        out.push(d.to_string());
    }
    Ok(Some(out.join("\n---\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_references_go_into_every_document() {
        let t = argoexec_core::Template::from_json(
            r#"{"name":"r","resource":{"action":"create","setOwnerReference":true,
              "manifest":"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u}]\n"}}"#,
        )
        .unwrap();
        let wf = WorkflowMeta {
            name: "wf".into(),
            uid: "uid-1".into(),
            ..Default::default()
        };
        let m = with_owner_reference(&t, &wf).unwrap().unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&m).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(docs[0]["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(docs[1]["metadata"]["ownerReferences"][0]["kind"], "X");
        assert_eq!(docs[1]["metadata"]["ownerReferences"][1]["kind"], "Workflow");
        let mut off = t.clone();
        off.resource.as_mut().unwrap().set_owner_reference = false;
        assert!(with_owner_reference(&off, &wf).unwrap().is_none());
        let mut bad = t;
        bad.resource.as_mut().unwrap().manifest = Some("a: [".into());
        assert!(with_owner_reference(&bad, &wf).is_err());
    }

    #[test]
    fn security_contexts_per_version() {
        let old = minimal_sc(ArgoVersion::V3_5, true);
        assert_eq!(old.run_as_user, Some(8737));
        assert_eq!(old.read_only_root_filesystem, Some(true));
        assert!(old.seccomp_profile.is_none() && old.privileged.is_none());
        let new = minimal_sc(ArgoVersion::V4_1, false);
        assert_eq!(new.privileged, Some(false));
        assert_eq!(new.read_only_root_filesystem, None);
        assert_eq!(new.seccomp_profile.unwrap().type_, "RuntimeDefault");
    }
}
