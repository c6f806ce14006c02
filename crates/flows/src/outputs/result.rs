//! The script result: main's stdout, the last 256 KiB, minus one trailing newline.
//!
//! Captured only when `ARGO_INCLUDE_SCRIPT_OUTPUT` is set and the template has a capturable
//! main. The stream is read in full but only a 256 KiB tail is kept in memory, so a huge
//! output costs no memory; truncation is logged as a warning.

use argoexec_runtime::{RuntimeExecutor, StreamKind};
use tokio::io::AsyncReadExt;

use crate::{FlowError, StepContext};

/// Maximum result size kept (the tail).
pub const MAX_RESULT: usize = 256 * 1024;

/// Capture the result, or `None` when it is not wanted.
///
/// # Errors
/// The stream could not be opened or read.
pub async fn capture<R: RuntimeExecutor>(
    ctx: &StepContext,
    runtime: &R,
) -> Result<Option<String>, FlowError> {
    if !ctx.env.include_script_output || !ctx.template.has_capturable_result() {
        return Ok(None);
    }
    if !runtime.capabilities().stdout_only_stream {
        tracing::warn!(executor = %runtime.kind(), "this executor cannot separate stdout from stderr: the result includes stderr");
    }
    let mut stream = match runtime
        .output_stream(argoexec_core::template::MAIN, StreamKind::Stdout)
        .await
    {
        Ok(s) => s,
        Err(e) if e.is_not_found() => {
            // The main command never ran (e.g. its executable is missing); main's own exit
            // says why, so there is no result rather than a second error.
            tracing::warn!(error = %e, "main produced no output stream; no result");
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0usize;
    loop {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|e| FlowError::io("read the output of", "main", e))?;
        if n == 0 {
            break;
        }
        total += n;
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * MAX_RESULT {
            tail.drain(..tail.len() - MAX_RESULT);
        }
    }
    if tail.len() > MAX_RESULT {
        tail.drain(..tail.len() - MAX_RESULT);
    }
    if total > MAX_RESULT {
        tracing::warn!(
            bytes = total,
            kept = MAX_RESULT,
            "script result is larger than 256 KiB; keeping the last 256 KiB"
        );
    }
    Ok(Some(super::trim_one_newline(
        String::from_utf8_lossy(&tail).into_owned(),
    )))
}
