//! Data templates (`template.data`): the pod Argo's `executeData` asks for
//! (AW@v4.1.2 `workflow/controller/operator.go`, `workflowpod.go`).
//!
//! - `main` is an executor-image container running
//!   `argoexec data '<json of template.data>' <log options>`; the per-container pass wraps it
//!   in the emissary like any main. The JSON argument is informational: `argoexec data` reads
//!   the template from `/var/run/argo/template` / `ARGO_TEMPLATE`, as Argo's does.
//! - No `wait` container (main reports `outputs.result` itself) and no lockdown (Argo locks
//!   down resource pods only); `ARGO_INCLUDE_SCRIPT_OUTPUT=true` (the controller creates the
//!   pod with `includeScriptOutput`).
//! - Main mounts the secret volumes of the archive location and of `artifactPaths`, which it
//!   lists with its own credentials (in other pods only init and wait get them).

use argoexec_core::template::{DataTemplate, MAIN};
use k8s_openapi::api::core::v1 as core;

use super::containers::executor_container;
use super::{BuildCtx, BuildError};

/// Check a data template: a source Argo can process (`artifactPaths`, the only kind).
///
/// # Errors
/// [`BuildError::BadData`] naming what to change.
pub(crate) fn validate(template: &argoexec_core::Template) -> Result<(), BuildError> {
    let Some(d) = &template.data else {
        return Ok(());
    };
    let bad = |problem: &str| BuildError::BadData {
        template: template.name.clone(),
        problem: problem.into(),
    };
    let Some(a) = &d.source.artifact_paths else {
        return Err(bad(
            "data.source.artifactPaths is required (the only data source Argo has)",
        ));
    };
    if a.location.kind_name().is_none() {
        return Err(bad(
            "data.source.artifactPaths names no location (s3, gcs, azure, …)",
        ));
    }
    Ok(())
}

/// The `main` container of a data template, with the credentials `mounts`.
pub(crate) fn main(ctx: &BuildCtx<'_>, d: &DataTemplate, mounts: &[core::VolumeMount]) -> core::Container {
    // Plain data with string keys: serialising cannot fail.
    let json = serde_json::to_string(d).unwrap_or_else(|_| "{}".into());
    let mut c = executor_container(ctx, MAIN, "data", false);
    if let Some(cmd) = c.command.as_mut() {
        cmd.insert(2, json);
    }
    c.volume_mounts = (!mounts.is_empty()).then(|| mounts.to_vec());
    c
}
