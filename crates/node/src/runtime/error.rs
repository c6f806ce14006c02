//! [`RuntimeError`]: a container engine's refusal or failure, naming the call and what it
//! concerned, with the engine's own error kept as the source.

/// A failed runtime call.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A Docker Engine call failed.
    #[error("docker {action} {subject}: {source}")]
    Docker {
        /// The call, e.g. "create container".
        action: &'static str,
        /// The container, image or pod concerned.
        subject: String,
        /// The Engine's error (boxed: bollard's error is large).
        #[source]
        source: Box<bollard::errors::Error>,
    },
    /// A containerd call failed.
    #[error("containerd {action} {subject}: {}", source.message())]
    Containerd {
        /// The call, e.g. "create container".
        action: &'static str,
        /// The container, image or pod concerned.
        subject: String,
        /// containerd's status.
        #[source]
        source: Box<containerd_client::tonic::Status>,
    },
    /// containerd's socket did not answer.
    #[error("cannot connect to containerd at {socket}: {source}")]
    Connect {
        /// The socket.
        socket: String,
        /// Why.
        #[source]
        source: Box<containerd_client::tonic::transport::Error>,
    },
    /// A request the runtime cannot carry out as asked: an image without a manifest for
    /// this platform or with a configuration that is not JSON, a user name to resolve, a
    /// sandbox that is not running, an unknown signal or capability.
    #[error("{subject}: {message}")]
    Invalid {
        /// The image or container concerned.
        subject: String,
        /// What is wrong.
        message: String,
    },
    /// A host file operation of the runtime (exported image layers) failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The host path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl RuntimeError {
    /// Wrap a Docker error.
    pub(crate) fn docker(
        action: &'static str,
        subject: impl Into<String>,
        source: bollard::errors::Error,
    ) -> Self {
        Self::Docker {
            action,
            subject: subject.into(),
            source: Box::new(source),
        }
    }

    /// Wrap a containerd status.
    pub(crate) fn containerd(
        action: &'static str,
        subject: impl Into<String>,
        source: containerd_client::tonic::Status,
    ) -> Self {
        Self::Containerd {
            action,
            subject: subject.into(),
            source: Box::new(source),
        }
    }

    /// Wrap an I/O error.
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.display().to_string(),
            source,
        }
    }

    /// Whether the engine said the container or image does not exist.
    pub fn is_not_found(&self) -> bool {
        match self {
            Self::Docker { source, .. } => is_docker_not_found(source),
            Self::Containerd { source, .. } => source.code() == containerd_client::tonic::Code::NotFound,
            Self::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            Self::Connect { .. } | Self::Invalid { .. } => false,
        }
    }

    /// The engine's own message, as a pod status shows it (`ContainerCannotRun`), without
    /// the client library's framing.
    pub fn engine_message(&self) -> String {
        match self {
            Self::Docker { source, .. } => match source.as_ref() {
                bollard::errors::Error::DockerResponseServerError { message, .. } => message.clone(),
                other => other.to_string(),
            },
            Self::Containerd { source, .. } => source.message().to_string(),
            Self::Invalid { message, .. } => message.clone(),
            Self::Io { .. } | Self::Connect { .. } => self.to_string(),
        }
    }
}

/// Whether a Docker error is an HTTP 404 (no such container or image).
pub(crate) fn is_docker_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }
    )
}
