//! An idle time-out for daemon response bodies.
//!
//! bollard's request time-out ends when the response headers arrive; a body (an archive
//! download, a log) can then stall forever. [`idle_timeout`] ends such a stream with an error
//! when no item arrives for the given duration.

use std::time::Duration;

use futures::{Stream, StreamExt};

/// What ended a stream early.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The daemon reported an error (or the connection failed).
    #[error(transparent)]
    Docker(#[from] bollard::errors::Error),
    /// Nothing arrived for this long.
    #[error("the Docker daemon sent nothing for {0:?}; giving up (stalled response body)")]
    Idle(Duration),
}

impl BodyError {
    /// The seam error for a failed body read: a stall is `Transient`, a daemon error is mapped
    /// as usual.
    pub(crate) fn into_runtime(
        self,
        socket: &std::path::Path,
        action: &'static str,
        container: &str,
    ) -> argoexec_runtime::RuntimeError {
        match self {
            Self::Docker(e) => crate::errors::map_err(e, socket, action, container),
            e @ Self::Idle(_) => crate::errors::error(
                argoexec_runtime::ErrorKind::Transient,
                action,
                container,
                e.to_string(),
            ),
        }
    }
}

/// Wrap `inner` so that a gap of `idle` between items ends it with [`BodyError::Idle`].
/// After an error the stream ends.
pub(crate) fn idle_timeout<S, T>(
    inner: S,
    idle: Duration,
) -> impl Stream<Item = Result<T, BodyError>> + Send + Unpin + 'static
where
    S: Stream<Item = Result<T, bollard::errors::Error>> + Send + Unpin + 'static,
    T: Send + 'static,
{
    Box::pin(
        futures::stream::unfold(Some(inner), move |state| async move {
            let mut s = state?;
            match tokio::time::timeout(idle, s.next()).await {
                Ok(Some(Ok(item))) => Some((Ok(item), Some(s))),
                Ok(Some(Err(e))) => Some((Err(BodyError::Docker(e)), None)),
                Ok(None) => None,
                Err(_) => Some((Err(BodyError::Idle(idle)), None)),
            }
        })
        // Readers (StreamReader, tar) may poll again after the end; unfold panics then.
        .fuse(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stalls_become_errors() {
        let pending = futures::stream::pending::<Result<u8, bollard::errors::Error>>();
        let mut s = idle_timeout(pending, Duration::from_millis(20));
        assert!(matches!(s.next().await, Some(Err(BodyError::Idle(_)))));
        assert!(s.next().await.is_none());
    }

    #[tokio::test]
    async fn items_pass() {
        let items = futures::stream::iter(vec![Ok(1u8), Ok(2)]);
        let got: Vec<u8> = idle_timeout(items, Duration::from_secs(1))
            .map(|r| r.unwrap_or(0))
            .collect()
            .await;
        assert_eq!(got, vec![1, 2]);
    }
}
