//! Stopping containers through their pidfds: SIGTERM, the grace period watched on the pidfd,
//! then SIGKILL — per container, concurrently, every error returned (Argo's pns swallowed
//! them, and some versions slept 30 minutes before the SIGKILL). A pidfd cannot signal a
//! recycled pid, and no shell is needed in the target image.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::Signal;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// How long to wait for the exit after SIGKILL.
pub const AFTER_KILL: Duration = Duration::from_secs(10);

/// Wait until the process behind `pidfd` exits, or `timeout` passes (`false`).
///
/// # Errors
/// When the pidfd cannot be registered with the reactor.
pub async fn exit_within(pidfd: &Arc<OwnedFd>, timeout: Option<Duration>) -> std::io::Result<bool> {
    // Deprecated because an arbitrary `AsRawFd` may close or swap its descriptor while
    // registered; an `OwnedFd` cannot, so the safe constructor is sound here (the
    // replacement is an `unsafe fn`, and this workspace denies unsafe code).
    #[allow(deprecated)]
    let afd = AsyncFd::with_interest(pidfd.try_clone()?, Interest::READABLE)?;
    let exited = async {
        let _ = afd.readable().await?;
        Ok::<_, std::io::Error>(())
    };
    match timeout {
        None => exited.await.map(|()| true),
        Some(t) => match tokio::time::timeout(t, exited).await {
            Ok(r) => r.map(|()| true),
            Err(_) => Ok(false),
        },
    }
}

fn signal(pidfd: &OwnedFd, sig: Signal, what: &str) -> Result<bool, String> {
    match rustix::process::pidfd_send_signal(pidfd, sig) {
        Ok(()) => Ok(true),
        Err(Errno::SRCH) => Ok(false),
        Err(Errno::PERM) => Err(format!(
            "not permitted to send {what}: the process runs as another user and the wait container lacks CAP_KILL"
        )),
        Err(e) => Err(format!("send {what}: {e}")),
    }
}

/// TERM, wait `grace`, KILL, wait [`AFTER_KILL`]. `Ok` once the process is gone.
///
/// # Errors
/// A message saying which step failed.
pub async fn stop(pidfd: &Arc<OwnedFd>, grace: Duration) -> Result<&'static str, String> {
    if crate::tracker::exited(pidfd) || !signal(pidfd, Signal::TERM, "SIGTERM")? {
        return Ok("already exited");
    }
    if exit_within(pidfd, Some(grace)).await.map_err(|e| e.to_string())? {
        return Ok("exited after SIGTERM");
    }
    tracing::info!(?grace, "still running after the grace period; sending SIGKILL");
    if !signal(pidfd, Signal::KILL, "SIGKILL")? {
        return Ok("exited after SIGTERM");
    }
    if exit_within(pidfd, Some(AFTER_KILL))
        .await
        .map_err(|e| e.to_string())?
    {
        return Ok("killed");
    }
    Err(format!(
        "still running {AFTER_KILL:?} after SIGKILL (uninterruptible sleep?)"
    ))
}
