//! `output_stream`: a container's log (`GET /containers/{id}/logs`, not followed — the flows
//! ask once the container has exited), demultiplexed by bollard into stdout and stderr frames.
//!
//! [`StreamKind::Stdout`] keeps the stdout frames only; [`StreamKind::Combined`] keeps both in
//! the daemon's order. A container with a TTY has no separate streams: the daemon sends raw
//! (`Console`) frames, which are passed through for either kind (stderr is then part of the
//! "stdout", as with Argo's docker executor).

use argoexec_runtime::{OutputStream, RuntimeError, StreamKind};
use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use bytes::Bytes;
use futures::StreamExt;
use tokio_util::io::StreamReader;

use crate::DockerExecutor;
use crate::stream::idle_timeout;

const ACTION: &str = "read output of";

/// The bytes of a frame that belong to `kind`, if any.
fn select(frame: LogOutput, kind: StreamKind) -> Option<Bytes> {
    match (frame, kind) {
        (LogOutput::StdOut { message } | LogOutput::Console { message }, _) => Some(message),
        (LogOutput::StdErr { message }, StreamKind::Combined) => Some(message),
        (LogOutput::StdErr { .. } | LogOutput::StdIn { .. }, _) => None,
    }
}

impl DockerExecutor {
    /// See [`argoexec_runtime::RuntimeExecutor::output_stream`].
    pub(crate) async fn logs_of(
        &self,
        container: &str,
        kind: StreamKind,
    ) -> Result<OutputStream, RuntimeError> {
        let id = self.require_id(ACTION, container).await?;
        let opts = LogsOptionsBuilder::new()
            .follow(false)
            .stdout(true)
            .stderr(kind == StreamKind::Combined)
            .build();
        let mut body = idle_timeout(self.docker.logs(&id, Some(opts)), self.idle_timeout);
        // Pull the first frame now so that a missing container or a refused request is an
        // error of this call rather than of the first read.
        let first = match body.next().await {
            Some(Ok(frame)) => Some(frame),
            Some(Err(e)) => return Err(e.into_runtime(&self.socket, ACTION, container)),
            None => None,
        };
        let socket = self.socket.clone();
        let name = container.to_string();
        let frames = futures::stream::iter(first.map(Ok)).chain(body);
        let bytes = frames.filter_map(move |item| {
            let out = match item {
                Ok(frame) => select(frame, kind).map(Ok),
                Err(e) => Some(Err(std::io::Error::other(e.into_runtime(&socket, ACTION, &name)))),
            };
            futures::future::ready(out)
        });
        tracing::debug!(container, ?kind, "streaming container log");
        Ok(Box::pin(StreamReader::new(Box::pin(bytes))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection() {
        let m = || Bytes::from_static(b"x");
        assert!(select(LogOutput::StdOut { message: m() }, StreamKind::Stdout).is_some());
        assert!(select(LogOutput::StdErr { message: m() }, StreamKind::Stdout).is_none());
        assert!(select(LogOutput::StdErr { message: m() }, StreamKind::Combined).is_some());
        assert!(select(LogOutput::Console { message: m() }, StreamKind::Stdout).is_some());
    }
}
