//! The pod's metadata: the workflow, completed and instance labels, the node-name, node-id,
//! default-container and (v4.1) trace annotations, the template's own `metadata`, and the
//! Workflow as the controlling owner.

use std::collections::BTreeMap;

use argoexec_core::ArgoVersion;
use argoexec_core::template::{Container, MAIN, Template};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{BuildCtx, BuildError, convert, workflow_owner};

/// Labels, annotations and owner of the pod.
pub(super) fn pod_metadata(ctx: &BuildCtx<'_>, mains: &[Container]) -> Result<ObjectMeta, BuildError> {
    let (wf, template) = (ctx.wf, ctx.template);
    let mut labels = BTreeMap::from([
        ("workflows.argoproj.io/workflow".to_string(), wf.name.clone()),
        ("workflows.argoproj.io/completed".to_string(), "false".to_string()),
    ]);
    if let Some(id) = &ctx.opts.instance_id {
        labels.insert("workflows.argoproj.io/controller-instanceid".into(), id.clone());
    }
    // Argo: main when there is one, else the last main container (a containerSet's).
    let default_container = if mains.iter().any(|c| c.name == MAIN) {
        MAIN.to_string()
    } else {
        mains.last().map(|c| c.name.clone()).unwrap_or_default()
    };
    let mut annotations = BTreeMap::from([
        (
            "workflows.argoproj.io/node-name".to_string(),
            format!("{}.{}", wf.name, template.name),
        ),
        (
            "workflows.argoproj.io/node-id".to_string(),
            ctx.node_id.to_string(),
        ),
        (
            "kubectl.kubernetes.io/default-container".to_string(),
            default_container,
        ),
    ]);
    if let Some(r) = &ctx.opts.executor_reason {
        annotations.insert("workflows.argoproj.io/executor-reason".to_string(), r.clone());
    }
    if ctx.version >= ArgoVersion::V4_1
        && let Some((trace, span)) = ctx.opts.trace_parent.as_deref().and_then(trace_ids)
    {
        annotations.insert("workflows.argoproj.io/trace-id".into(), trace.into());
        annotations.insert("workflows.argoproj.io/span-id".into(), span.into());
    }
    // The template's `metadata` (a `kill-cmd-<container>` annotation, …); the
    // controller's own keys win.
    let (tpl_labels, tpl_annotations) = template_metadata(template)?;
    for (k, v) in tpl_labels {
        labels.entry(k).or_insert(v);
    }
    for (k, v) in tpl_annotations {
        annotations.entry(k).or_insert(v);
    }
    Ok(ObjectMeta {
        name: Some(ctx.node_id.to_string()),
        namespace: Some(wf.namespace.clone()),
        labels: Some(labels),
        annotations: Some(annotations),
        owner_references: Some(vec![workflow_owner(wf)]),
        ..Default::default()
    })
}

/// The trace and span IDs of a W3C `traceparent` (`00-<trace>-<span>-<flags>`).
fn trace_ids(tp: &str) -> Option<(&str, &str)> {
    let mut parts = tp.split('-');
    let (_, trace, span) = (parts.next()?, parts.next()?, parts.next()?);
    (trace.len() == 32 && span.len() == 16).then_some((trace, span))
}

/// A string map of pod metadata (labels or annotations).
type StringMap = BTreeMap<String, String>;

/// `metadata.labels` and `metadata.annotations` of the template.
fn template_metadata(template: &Template) -> Result<(StringMap, StringMap), BuildError> {
    let Some(meta) = template.extra.get("metadata") else {
        return Ok(Default::default());
    };
    let map = |field: &str| -> Result<StringMap, BuildError> {
        match meta.get(field) {
            None | Some(serde_json::Value::Null) => Ok(BTreeMap::new()),
            Some(v) => convert(&format!("template metadata.{field}"), v),
        }
    };
    Ok((map("labels")?, map("annotations")?))
}
