//! Output parameters from `valueFrom.path`.
//!
//! Base-layer paths are read through the seam, volume paths through `/mainctrfs`. When the
//! read fails the parameter's `valueFrom.default` is used (it may be `""`); without one the
//! step fails with an error naming the parameter and the path. One trailing newline is
//! trimmed. Parameters without `valueFrom.path` are left as they are.

use std::path::Path;

use argoexec_core::template::{MAIN, Parameter};
use argoexec_runtime::RuntimeExecutor;

use crate::{FlowError, StepContext};

/// Resolve every output parameter. Returns the resolved parameters and the errors of those
/// that could not be resolved (those are left out).
pub async fn capture<R: RuntimeExecutor>(ctx: &StepContext, runtime: &R) -> (Vec<Parameter>, Vec<FlowError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in &ctx.template.outputs.parameters {
        let Some(path) = p.value_from.as_ref().and_then(|v| v.path.clone()) else {
            out.push(p.clone());
            continue;
        };
        match read(ctx, runtime, Path::new(&path)).await {
            Ok(bytes) => {
                let mut p = p.clone();
                p.value = Some(super::trim_one_newline(
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
                out.push(p);
            }
            Err(message) => match p.value_from.as_ref().and_then(|v| v.default.clone()) {
                Some(default) => {
                    tracing::info!(parameter = %p.name, %path, reason = %message, "using the parameter's default");
                    let mut p = p.clone();
                    p.value = Some(default);
                    out.push(p);
                }
                None => errors.push(FlowError::OutputParameter {
                    name: p.name.clone(),
                    message,
                }),
            },
        }
    }
    (out, errors)
}

async fn read<R: RuntimeExecutor>(ctx: &StepContext, runtime: &R, path: &Path) -> Result<Vec<u8>, String> {
    if ctx.template.is_base_layer_path(path) {
        runtime
            .get_file_contents(MAIN, path)
            .await
            .map_err(|e| e.to_string())
    } else {
        let mirrored = ctx.paths.mainctrfs(path);
        let meta = tokio::fs::metadata(&mirrored)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        tokio::fs::read(&mirrored)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}
