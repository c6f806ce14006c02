//! The `ARGO_*` environment a controller of each version gives a pod's containers
//! (`createEnvVars` and the shared `envVars` of Argo's `workflowpod.go`, tag by tag; the
//! research notes are summarised in docs/compatibility.md).
//!
//! - [`executor_env`]: init and wait only (`createEnvVars`): the pod's name and UID from the
//!   downward API, `ARGO_CONTAINER_RUNTIME_EXECUTOR` (v3.3), `GODEBUG=x509ignoreCN=0`
//!   (≤ v3.5), `ARGO_WORKFLOW_NAME`, `ARGO_WORKFLOW_UID` (v3.5+), `ARGO_INSTANCE_ID`, then the
//!   config map's `executor.env`;
//! - [`container_env`]: every container: `ARGO_CONTAINER_NAME`, `ARGO_TEMPLATE` (every
//!   container ≤ v3.5, init only v3.6+), `ARGO_NODE_ID`, `ARGO_INCLUDE_SCRIPT_OUTPUT`,
//!   `ARGO_DEADLINE`, v4.1's `ARGO_WORKFLOW_NAME` and `TRACEPARENT`, then the progress
//!   variables (v3.3: the file always, the ticks when enabled; v3.5+: all three only when
//!   progress is enabled, which it is by default).

use argoexec_core::ArgoVersion;
use k8s_openapi::api::core::v1 as core;

use super::BuildCtx;

/// A plain `name=value` variable.
pub(crate) fn env(name: &str, value: impl Into<String>) -> core::EnvVar {
    core::EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

/// A downward-API variable (`fieldRef` with `apiVersion: v1`, as the API server defaults it).
pub(crate) fn field_env(name: &str, path: &str) -> core::EnvVar {
    core::EnvVar {
        name: name.into(),
        value_from: Some(core::EnvVarSource {
            field_ref: Some(core::ObjectFieldSelector {
                api_version: Some("v1".into()),
                field_path: path.into(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// What `ARGO_TEMPLATE` holds in this pod.
#[derive(Debug, Clone)]
pub(crate) enum TemplateEnv {
    /// The JSON itself.
    Inline(String),
    /// `offloaded`: the JSON is in the `<pod>` ConfigMap, mounted in init at `/argo/config`.
    Offloaded,
}

impl TemplateEnv {
    pub(crate) fn value(&self) -> &str {
        match self {
            Self::Inline(json) => json,
            Self::Offloaded => argoexec_core::argo_version::OFFLOADED,
        }
    }
}

/// `createEnvVars`: the variables of the executor containers (init, wait).
pub(crate) fn executor_env(ctx: &BuildCtx<'_>) -> Vec<core::EnvVar> {
    let v = ctx.version;
    let mut e = vec![
        field_env("ARGO_POD_NAME", "metadata.name"),
        field_env("ARGO_POD_UID", "metadata.uid"),
    ];
    if v == ArgoVersion::V3_3 {
        e.push(env("ARGO_CONTAINER_RUNTIME_EXECUTOR", ctx.executor.as_str()));
    }
    if v <= ArgoVersion::V3_5 {
        e.push(env("GODEBUG", "x509ignoreCN=0"));
    }
    e.push(env("ARGO_WORKFLOW_NAME", ctx.wf.name.clone()));
    if v.sets_workflow_uid() {
        e.push(env("ARGO_WORKFLOW_UID", ctx.wf.uid.clone()));
    }
    if let Some(id) = &ctx.opts.instance_id {
        e.push(env("ARGO_INSTANCE_ID", id.clone()));
    }
    e.extend(super::containers::kubelet_env(ctx));
    e.extend(ctx.exec_tpl.env.clone().unwrap_or_default());
    e
}

/// The variables every container gets, in Argo's order; `init` says whether it is an init
/// container (the only ones with `ARGO_TEMPLATE` since v3.6).
pub(crate) fn container_env(ctx: &BuildCtx<'_>, name: &str, init: bool) -> Vec<core::EnvVar> {
    let v = ctx.version;
    let mut e = vec![env("ARGO_CONTAINER_NAME", name)];
    // Right after the name in every version: v3.6+ puts it there on init containers, ≤ v3.5
    // at the head of the shared list. An offloaded template is on init only in both (≤ v3.5
    // never offloads; argoexec-rs does, as v3.6 does, instead of failing with E2BIG).
    if let Some(t) = &ctx.template_env
        && (init || (!v.template_on_init_only() && matches!(t, TemplateEnv::Inline(_))))
    {
        e.push(env("ARGO_TEMPLATE", t.value()));
    }
    e.push(env("ARGO_NODE_ID", ctx.node_id));
    e.push(env(
        "ARGO_INCLUDE_SCRIPT_OUTPUT",
        // Argo's executeResource never asks for the script output.
        (ctx.template.data.is_some() || (ctx.opts.include_script_output && ctx.template.resource.is_none()))
            .to_string(),
    ));
    e.push(env("ARGO_DEADLINE", ctx.opts.deadline.clone()));
    if v >= ArgoVersion::V4_1 {
        e.push(env("ARGO_WORKFLOW_NAME", ctx.wf.name.clone()));
        if let Some(tp) = &ctx.opts.trace_parent {
            e.push(env("TRACEPARENT", tp.clone()));
        }
    }
    e.extend(progress_env(ctx));
    e
}

/// The progress variables by version.
fn progress_env(ctx: &BuildCtx<'_>) -> Vec<core::EnvVar> {
    let mut e = Vec::new();
    let ticks = ctx.opts.progress.as_ref();
    if ticks.is_some() || !ctx.version.progress_env_only_when_enabled() {
        e.push(env("ARGO_PROGRESS_FILE", "/var/run/argo/progress"));
    }
    if let Some(t) = ticks {
        e.push(env("ARGO_PROGRESS_PATCH_TICK_DURATION", t.patch.clone()));
        e.push(env("ARGO_PROGRESS_FILE_TICK_DURATION", t.file.clone()));
    }
    e
}
