//! Running a command through an exec stream (kubelet `/exec` or the API's `pods/exec`) and
//! judging how it ended.
//!
//! The rule that matters (k8s-wire-protocols §3.4, GitHub hooks #331/#376): only a status
//! frame on the error channel says what happened. `Success` is success; `Failure` with
//! reason `NonZeroExitCode` carries the exit code in `details.causes[ExitCode]`; any other
//! `Failure` is the runtime's error (e.g. "executable file not found"). A stream that closes
//! **without** a status is a failure, never a success.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::AttachedProcess;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How an exec ended badly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecFailure {
    /// The command ran and exited non-zero.
    #[error("exited with code {code}{}", stderr_suffix(stderr))]
    NonZero {
        /// The exit code.
        code: i32,
        /// Its stderr (trimmed, at most 1 KiB).
        stderr: String,
    },
    /// The runtime could not run it (status `Failure` without an exit code).
    #[error("{message}")]
    Failed {
        /// The status message.
        message: String,
    },
    /// The stream closed without a status frame.
    #[error("the exec stream closed without a status (treated as a failure)")]
    NoStatus,
    /// No status within the time allowed.
    #[error("no status after {0:?}")]
    TimedOut(Duration),
    /// Reading the output failed.
    #[error("reading the output: {0}")]
    Io(String),
}

fn stderr_suffix(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(": {s}")
    }
}

impl ExecFailure {
    /// Whether the command itself could not be started (missing binary): worth trying
    /// another command. Exit codes 126/127 are the shell's "cannot execute"/"not found".
    pub fn is_not_runnable(&self) -> bool {
        match self {
            ExecFailure::Failed { .. } => true,
            ExecFailure::NonZero { code, .. } => *code == 126 || *code == 127,
            _ => false,
        }
    }
}

/// The exit code in a `NonZeroExitCode` status.
fn exit_code(s: &Status) -> Option<i32> {
    s.details
        .as_ref()?
        .causes
        .iter()
        .flatten()
        .find(|c| c.reason.as_deref() == Some("ExitCode"))
        .and_then(|c| c.message.as_deref())
        .and_then(|m| m.trim().parse().ok())
}

/// Judge a status frame (or its absence).
pub fn judge(status: Option<Status>, stderr: &[u8]) -> Result<(), ExecFailure> {
    let Some(s) = status else {
        return Err(ExecFailure::NoStatus);
    };
    if s.status.as_deref() == Some("Success") {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(1024)..])
        .trim()
        .to_string();
    match exit_code(&s) {
        Some(code) => Err(ExecFailure::NonZero { code, stderr: err }),
        None => Err(ExecFailure::Failed {
            message: s
                .message
                .unwrap_or_else(|| "exec failed without a message".into()),
        }),
    }
}

/// What a finished command printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// stdout.
    pub stdout: Vec<u8>,
    /// stderr.
    pub stderr: Vec<u8>,
}

async fn read_all(r: Option<impl AsyncRead + Unpin>, limit: usize) -> Result<Vec<u8>, ExecFailure> {
    let Some(mut r) = r else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r
            .read(&mut buf)
            .await
            .map_err(|e| ExecFailure::Io(e.to_string()))?;
        if n == 0 {
            return Ok(out);
        }
        // Past the limit keep draining (the stream must not stall) but stop storing.
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// The end of an exec's message loop, shared with its output readers: kube-rs shuts the
/// output pipes only when the loop ends cleanly, so after an error (a connection dropped
/// without the closing handshake) a reader would wait forever. Once the loop has ended no
/// more output can arrive, so an empty pipe then means end of output.
#[derive(Default)]
struct Ended {
    done: std::sync::atomic::AtomicBool,
    waker: futures::task::AtomicWaker,
}

impl Ended {
    fn set(&self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        self.waker.wake();
    }

    fn is_set(&self) -> bool {
        self.done.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// An output pipe that ends when it is empty and the message loop has ended.
struct UntilEnded<R> {
    inner: R,
    ended: std::sync::Arc<Ended>,
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilEnded<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        self.ended.waker.register(cx.waker());
        match std::pin::Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Pending if self.ended.is_set() => {
                // Check once more: data written just before the end is still in the pipe.
                match std::pin::Pin::new(&mut self.inner).poll_read(cx, buf) {
                    Poll::Pending => Poll::Ready(Ok(())),
                    other => other,
                }
            }
            other => other,
        }
    }
}

/// Take the status future of `proc` and watch for the end of its message loop: returns the
/// status (resolving when the loop ends: `None` without a status frame) and the flag.
fn watch_end(proc: &mut AttachedProcess) -> (tokio::task::JoinHandle<Option<Status>>, std::sync::Arc<Ended>) {
    let ended = std::sync::Arc::new(Ended::default());
    let status = proc.take_status();
    let flag = ended.clone();
    let task = tokio::spawn(async move {
        let s = match status {
            Some(s) => s.await,
            None => None,
        };
        flag.set();
        s
    });
    (task, ended)
}

fn until_ended<R: AsyncRead + Unpin>(r: Option<R>, ended: &std::sync::Arc<Ended>) -> Option<UntilEnded<R>> {
    r.map(|inner| UntilEnded {
        inner,
        ended: ended.clone(),
    })
}

/// Collect stdout (up to `limit` bytes kept) and stderr, then judge the status; the whole
/// exchange must end within `timeout`. A stream that ends without a status is judged
/// [`ExecFailure::NoStatus`] as soon as it ends.
///
/// # Errors
/// [`ExecFailure`].
pub async fn collect(
    mut proc: AttachedProcess,
    limit: usize,
    timeout: Duration,
) -> Result<ExecOutput, ExecFailure> {
    let (status, ended) = watch_end(&mut proc);
    let out = until_ended(proc.stdout(), &ended);
    let err = until_ended(proc.stderr(), &ended);
    let work = async move {
        let (stdout, stderr) = tokio::try_join!(read_all(out, limit), read_all(err, 64 * 1024))?;
        judge(status.await.ok().flatten(), &stderr)?;
        Ok(ExecOutput { stdout, stderr })
    };
    let r = tokio::time::timeout(timeout, work).await;
    proc.abort();
    r.unwrap_or(Err(ExecFailure::TimedOut(timeout)))
}

/// A command's stdout as a stream, and a future with its verdict (resolve it after the
/// stream ended). stderr is drained in the background and included in a failure. The
/// stream ends when the exec does, even when it ends without its closing handshake.
pub fn stream(
    mut proc: AttachedProcess,
) -> (
    impl AsyncRead + Send + Unpin + use<>,
    impl Future<Output = Result<(), ExecFailure>> + Send + use<>,
) {
    let (status, ended) = watch_end(&mut proc);
    let out = until_ended(proc.stdout(), &ended);
    let err = until_ended(proc.stderr(), &ended);
    let stderr = tokio::spawn(read_all(err, 64 * 1024));
    let verdict = async move {
        let s = status.await.ok().flatten();
        let stderr = stderr.await.ok().and_then(Result::ok).unwrap_or_default();
        drop(proc);
        judge(s, &stderr)
    };
    let reader: Box<dyn AsyncRead + Send + Unpin> = match out {
        Some(o) => Box::new(o),
        None => Box::new(tokio::io::empty()),
    };
    (reader, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn st(v: serde_json::Value) -> Status {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_a_status_frame_decides() {
        assert_eq!(judge(None, b""), Err(ExecFailure::NoStatus));
        assert_eq!(judge(Some(st(json!({"status": "Success"}))), b""), Ok(()));
        let nz = st(json!({"status": "Failure", "reason": "NonZeroExitCode",
            "message": "command terminated with non-zero exit code: error executing command [false], exit code 3",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}));
        let e = judge(Some(nz), b"oops\n").unwrap_err();
        assert_eq!(
            e,
            ExecFailure::NonZero {
                code: 3,
                stderr: "oops".into()
            }
        );
        assert_eq!(e.to_string(), "exited with code 3: oops");
        assert!(!e.is_not_runnable());
        let nf =
            st(json!({"status": "Failure", "message": "exec: \"/x\": executable file not found in $PATH"}));
        let e = judge(Some(nf), b"").unwrap_err();
        assert!(e.is_not_runnable() && e.to_string().contains("executable file not found"));
        assert!(
            ExecFailure::NonZero {
                code: 127,
                stderr: String::new()
            }
            .is_not_runnable()
        );
    }
}
