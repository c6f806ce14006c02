//! Log archival (`archiveLocation.archiveLogs`): one `<container>-logs` artifact per main
//! container, holding its combined stdout and stderr, uploaded to `<key>/<container>.log`.

use argoexec_artifacts::{AnyDriver, ArtifactDriver};
use argoexec_core::template::{ArchiveStrategy, Artifact};
use argoexec_runtime::{RuntimeExecutor, StreamKind};

use crate::{FlowError, StepContext};

/// Save the logs when archival is on. Returns the reported artifacts and the errors.
pub async fn save<R: RuntimeExecutor>(ctx: &StepContext, runtime: &R) -> (Vec<Artifact>, Vec<FlowError>) {
    let mut saved = Vec::new();
    let mut errors = Vec::new();
    if !ctx.template.archive_logs() {
        return (saved, errors);
    }
    for name in ctx.template.main_container_names() {
        match save_one(ctx, runtime, &name).await {
            Ok(a) => saved.push(a),
            Err(e) => errors.push(e),
        }
    }
    (saved, errors)
}

async fn save_one<R: RuntimeExecutor>(
    ctx: &StepContext,
    runtime: &R,
    ctr: &str,
) -> Result<Artifact, FlowError> {
    let art_name = format!("{ctr}-logs");
    let fail = |message: String| FlowError::OutputArtifact {
        name: art_name.clone(),
        message,
    };
    let dir = ctx.paths.output_log_staging();
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| FlowError::io("create", &dir, e))?;
    let file_name = format!("{ctr}.log");
    let arch = ctx
        .template
        .archive_location
        .as_ref()
        .ok_or_else(|| fail("no archive location".into()))?;
    let location = arch
        .location
        .child(&file_name)
        .ok_or_else(|| fail("cannot derive a key for the logs".into()))?;
    let reported_at = location.key_only();
    let as_plugin_sees_it = Artifact {
        name: art_name.clone(),
        ..Default::default()
    };
    let driver = AnyDriver::for_artifact(&as_plugin_sees_it, &location, &ctx.artifacts)
        .map_err(|e| fail(e.to_string()))?;
    // The log streams from the runtime straight into the upload.
    let stream = runtime.output_stream(ctr, StreamKind::Combined).await?;
    let body = tokio_util::io::ReaderStream::with_capacity(stream, 1 << 20);
    driver
        .save_stream(Box::pin(body))
        .await
        .map_err(|e| fail(format!("upload: {e}")))?;
    Ok(Artifact {
        name: art_name,
        archive: Some(ArchiveStrategy {
            none: Some(serde_json::json!({})),
            ..Default::default()
        }),
        location: reported_at,
        ..Default::default()
    })
}
