//! Connecting to the daemon's unix socket and agreeing on an API version.
//!
//! bollard speaks API 1.53 by default and its `negotiate_version` asks `/v1.53/version`, which
//! an older daemon (Docker Engine 20.10 speaks 1.41) rejects with HTTP 400 "client version 1.53
//! is too new. Maximum supported API version is 1.41". So negotiation here is: try bollard's
//! negotiation; on that rejection, read the daemon's maximum from the message, reconnect at
//! that version and confirm with `/version`. A newer daemon is simply negotiated down by
//! bollard as usual.

use std::path::Path;
use std::time::Duration;

use argoexec_runtime::RuntimeError;
use bollard::{API_DEFAULT_VERSION, ClientVersion, Docker};

use crate::errors::{map_err, status_of};

/// Parse "… Maximum supported API version is 1.41" out of a daemon rejection.
pub(crate) fn max_version_from_message(message: &str) -> Option<ClientVersion> {
    let marker = "Maximum supported API version is ";
    let rest = &message[message.find(marker)? + marker.len()..];
    let ver: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let (major, minor) = ver.trim_end_matches('.').split_once('.')?;
    Some(ClientVersion {
        major_version: major.parse().ok()?,
        minor_version: minor.parse().ok()?,
    })
}

fn socket_str(socket: &Path) -> Result<&str, RuntimeError> {
    socket.to_str().ok_or_else(|| {
        crate::errors::error(
            argoexec_runtime::ErrorKind::Fatal,
            "connect to",
            "",
            format!("socket path {} is not UTF-8", socket.display()),
        )
    })
}

/// Connect to `socket` with a per-request (request → response headers) `timeout` and settle
/// on an API version both sides speak.
pub(crate) async fn connect(socket: &Path, timeout: Duration) -> Result<Docker, RuntimeError> {
    let path = socket_str(socket)?;
    let secs = timeout.as_secs().max(1);
    let fail = |e| map_err(e, socket, "connect to", "");
    let docker = Docker::connect_with_socket(path, secs, API_DEFAULT_VERSION).map_err(fail)?;
    match docker.negotiate_version().await {
        Ok(d) => {
            tracing::debug!(socket = %socket.display(), api = %d.client_version(), "connected to docker");
            Ok(d)
        }
        Err(e) => {
            let lower = match &e {
                bollard::errors::Error::DockerResponseServerError { message, .. }
                    if status_of(&e) == Some(400) =>
                {
                    max_version_from_message(message)
                }
                _ => None,
            };
            let Some(version) = lower else {
                return Err(fail(e));
            };
            let docker = Docker::connect_with_socket(path, secs, &version).map_err(fail)?;
            let v = docker.version().await.map_err(fail)?;
            tracing::debug!(
                socket = %socket.display(),
                api = %docker.client_version(),
                engine = v.version.as_deref().unwrap_or("?"),
                "connected to an older docker daemon"
            );
            Ok(docker)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_max_version() {
        let v =
            max_version_from_message("client version 1.53 is too new. Maximum supported API version is 1.41")
                .map(|v| (v.major_version, v.minor_version));
        assert_eq!(v, Some((1, 41)));
        assert!(max_version_from_message("something else").is_none());
        let v = max_version_from_message("Maximum supported API version is 1.43.").map(|v| v.minor_version);
        assert_eq!(v, Some(43));
    }
}
