//! Mapping of bollard errors to the seam's [`RuntimeError`] / [`ErrorKind`].
//!
//! HTTP 404 → `NotFound`, 401/403 → `Denied`, request time-outs and connection failures →
//! `Transient` (with a hint about the socket mount), everything else → `Fatal`. Messages name
//! the container (through [`RuntimeError`]) and say what to check.

use std::path::Path;

use argoexec_core::ExecutorKind;
use argoexec_runtime::{ErrorKind, RuntimeError};
use bollard::errors::Error as BollardError;

/// The backend tag every error of this crate carries.
pub(crate) const KIND: ExecutorKind = ExecutorKind::Docker;

/// The HTTP status of a daemon error response, if `e` is one.
pub(crate) fn status_of(e: &BollardError) -> Option<u16> {
    match e {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// True when `e` is a transport-level failure (socket missing, refused, reset, timed out).
fn is_connection_error(e: &BollardError) -> bool {
    matches!(
        e,
        BollardError::SocketNotFoundError(_)
            | BollardError::RequestTimeoutError
            | BollardError::HyperResponseError { .. }
            | BollardError::HyperLegacyError { .. }
            | BollardError::IOError { .. }
    )
}

/// Classify a bollard error.
pub(crate) fn kind_of(e: &BollardError) -> ErrorKind {
    match status_of(e) {
        Some(404) => ErrorKind::NotFound,
        Some(401 | 403) => ErrorKind::Denied,
        Some(_) => ErrorKind::Fatal,
        None if is_connection_error(e) => ErrorKind::Transient,
        None => ErrorKind::Fatal,
    }
}

/// A [`RuntimeError`] for a failed daemon call, with a hint matching the failure.
pub(crate) fn map_err(e: BollardError, socket: &Path, action: &'static str, container: &str) -> RuntimeError {
    let kind = kind_of(&e);
    let hint = match kind {
        ErrorKind::Transient => socket_hint(socket),
        ErrorKind::Denied => format!(
            "; the daemon at {} refused the request — check the socket's permissions and any \
             authorization plugin",
            socket.display()
        ),
        _ => String::new(),
    };
    RuntimeError::new(kind, KIND, action, container, format!("{e}{hint}")).with_source(e)
}

/// Why the socket cannot be reached, as far as the file tells: absent (not mounted), not
/// writable by this user (a non-root wait: Argo's docker executor never supported
/// `runAsNonRoot`), or present and writable (the daemon is down or restarting).
fn socket_hint(socket: &Path) -> String {
    let s = socket.display();
    match std::fs::metadata(socket) {
        Err(_) => format!(
            "; cannot talk to the Docker daemon: {s} does not exist here (the pod builder mounts it only for the docker executor)"
        ),
        Ok(_) if rustix::fs::access(socket, rustix::fs::Access::WRITE_OK).is_err() => format!(
            "; cannot talk to the Docker daemon: {s} is not writable by uid {} (the docker executor's wait container must run as root or in the socket's group; use the emissary executor for non-root pods)",
            rustix::process::geteuid().as_raw()
        ),
        Ok(_) => format!(
            "; cannot talk to the Docker daemon at {s}: it is mounted but nothing answers (is dockerd running, or restarting?)"
        ),
    }
}

/// A [`RuntimeError`] without an underlying bollard error.
pub(crate) fn error(
    kind: ErrorKind,
    action: &'static str,
    container: &str,
    message: impl Into<String>,
) -> RuntimeError {
    RuntimeError::new(kind, KIND, action, container, message)
}

/// A [`RuntimeError`] for a local I/O failure (writing the destination file, etc.).
pub(crate) fn io_err(action: &'static str, container: &str, what: &str, e: std::io::Error) -> RuntimeError {
    let kind = match e.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied => ErrorKind::Denied,
        std::io::ErrorKind::TimedOut => ErrorKind::Transient,
        _ => ErrorKind::Fatal,
    };
    RuntimeError::new(kind, KIND, action, container, format!("{what}: {e}")).with_source(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: u16) -> BollardError {
        BollardError::DockerResponseServerError {
            status_code: code,
            message: "x".into(),
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(kind_of(&server(404)), ErrorKind::NotFound);
        assert_eq!(kind_of(&server(403)), ErrorKind::Denied);
        assert_eq!(kind_of(&server(401)), ErrorKind::Denied);
        assert_eq!(kind_of(&server(500)), ErrorKind::Fatal);
        assert_eq!(kind_of(&BollardError::RequestTimeoutError), ErrorKind::Transient);
        assert_eq!(
            kind_of(&BollardError::SocketNotFoundError("/x".into())),
            ErrorKind::Transient
        );
    }

    #[test]
    fn transient_hint_names_socket() {
        let e = map_err(
            BollardError::SocketNotFoundError("/s".into()),
            Path::new("/var/run/docker.sock"),
            "wait for",
            "main",
        );
        assert!(e.message.contains("/var/run/docker.sock"), "{}", e.message);
        assert_eq!(e.container, "main");
    }
}
