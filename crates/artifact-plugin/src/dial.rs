//! Dialling a plugin's Unix socket until it accepts or the connection time-out passes.
//!
//! A socket file exists from the plugin's `bind(2)`, but connections are refused until its
//! `listen(2)`; a plugin that replaces a stale socket also removes the file for a moment.
//! A client that dials once, as soon as the file appears, loses that race now and then
//! on a busy node (CI saw `ECONNREFUSED` from a plugin started a few milliseconds
//! earlier). Argo's client does not fail there: grpc-go redials with back-off until the
//! connection is ready or `connectionTimeoutSeconds` passes (`NewDriver` in
//! `AW@v4.1.2:workflow/artifacts/plugin/plugin.go`). [`dial`] does the same for the
//! errors that mean "not listening yet" and fails at once on any other.

use std::io;
use std::path::Path;
use std::time::Duration;

use tokio::net::UnixStream;
use tokio::time::Instant;

/// The first pause after a refused dial; each next one doubles, up to [`REDIAL_MAX`].
pub const REDIAL_FIRST: Duration = Duration::from_millis(5);

/// The longest pause between two dials.
pub const REDIAL_MAX: Duration = Duration::from_millis(250);

/// Whether `e` means the plugin is not listening yet (refused, or its socket file is being
/// replaced), so dialling again may succeed.
pub fn not_listening_yet(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
    )
}

/// Dial `socket` until it accepts or `deadline` passes, calling `refused` after each dial
/// that [`not_listening_yet`] excuses (the tests' hook; the client logs there).
///
/// # Errors
/// The first error that is not excused; or, at the deadline, the last refusal (or
/// [`io::ErrorKind::TimedOut`] when a single dial outlasted it).
pub async fn dial(
    socket: &Path,
    deadline: Instant,
    mut refused: impl FnMut(&io::Error),
) -> io::Result<UnixStream> {
    let mut pause = REDIAL_FIRST;
    loop {
        let attempt = tokio::time::timeout_at(deadline, UnixStream::connect(socket)).await;
        let e = match attempt {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) if not_listening_yet(&e) => e,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the plugin accepted no connection within the connection time-out",
                ));
            }
        };
        refused(&e);
        let now = Instant::now();
        if now >= deadline {
            return Err(e);
        }
        tokio::time::sleep_until((now + pause).min(deadline)).await;
        pause = (pause * 2).min(REDIAL_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket file nobody listens on: bound, then closed.
    fn stale(socket: &Path) {
        drop(std::os::unix::net::UnixListener::bind(socket).unwrap());
    }

    #[tokio::test]
    async fn a_refused_dial_is_retried_until_the_plugin_listens() {
        let d = tempfile::tempdir().unwrap();
        let socket = d.path().join("socket");
        stale(&socket);
        let (first_refusal, refused_once) = tokio::sync::oneshot::channel::<()>();
        let mut first_refusal = Some(first_refusal);
        let mut refusals = 0;
        let dialling = {
            let socket = socket.clone();
            async move {
                let deadline = Instant::now() + Duration::from_secs(30);
                let r = dial(&socket, deadline, |e| {
                    assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
                    refusals += 1;
                    if let Some(tx) = first_refusal.take() {
                        let _ = tx.send(());
                    }
                })
                .await;
                (r, refusals)
            }
        };
        let listening = async {
            refused_once.await.unwrap();
            std::fs::remove_file(&socket).unwrap();
            let listener = tokio::net::UnixListener::bind(&socket).unwrap();
            listener.accept().await.unwrap()
        };
        let ((dialled, refusals), _accepted) = tokio::join!(dialling, listening);
        assert!(dialled.is_ok(), "{dialled:?}");
        assert!(refusals >= 1, "{refusals}");
    }

    #[tokio::test]
    async fn the_deadline_ends_the_retries_with_the_last_refusal() {
        let d = tempfile::tempdir().unwrap();
        let socket = d.path().join("socket");
        stale(&socket);
        let mut refusals = 0;
        let deadline = Instant::now() + Duration::from_millis(100);
        let e = dial(&socket, deadline, |_| refusals += 1).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
        assert!(refusals >= 2, "{refusals}");
        assert!(Instant::now() >= deadline);
    }

    #[tokio::test]
    async fn other_errors_end_the_dial_at_once() {
        let d = tempfile::tempdir().unwrap();
        // A path under a regular file (ENOTDIR): not a refusal, so no retry.
        let file = d.path().join("file");
        std::fs::write(&file, "").unwrap();
        let mut refusals = 0;
        let e = dial(
            &file.join("socket"),
            Instant::now() + Duration::from_secs(30),
            |_| {
                refusals += 1;
            },
        )
        .await
        .unwrap_err();
        assert!(!not_listening_yet(&e), "{e}");
        assert_eq!(refusals, 0);
    }
}
