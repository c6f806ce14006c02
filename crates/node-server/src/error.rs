//! [`ServerError`]: why the node's endpoints could not start or stopped.

/// A node-server failure.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The local node (Docker) failed.
    #[error(transparent)]
    Node(#[from] argoexec_node::NodeError),
    /// Certificate generation failed.
    #[error("node server: generate certificates: {0}")]
    Cert(String),
    /// TLS setup failed.
    #[error("node server: TLS configuration: {0}")]
    Tls(String),
    /// Binding or serving a listener failed.
    #[error("node server: {action}: {source}")]
    Io {
        /// What was being done.
        action: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// An RBAC document could not be read.
    #[error("node server: RBAC {path}: {message}")]
    Rbac {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl ServerError {
    pub(crate) fn cert(e: impl std::fmt::Display) -> Self {
        Self::Cert(e.to_string())
    }

    pub(crate) fn tls(e: impl std::fmt::Display) -> Self {
        Self::Tls(e.to_string())
    }

    pub(crate) fn io(action: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            action: action.into(),
            source,
        }
    }
}
