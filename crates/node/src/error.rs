//! [`NodeError`]: everything the local node can refuse or fail at, each naming the pod part
//! it concerns and, where there is one, what to do about it.

/// A local-node failure.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The container runtime did not answer.
    #[error(
        "local node: cannot reach {runtime} at {socket}: {source}; start it with `bash scripts/setup.sh`"
    )]
    Connect {
        /// The runtime, e.g. "the Docker Engine".
        runtime: &'static str,
        /// The socket tried.
        socket: String,
        /// Why.
        #[source]
        source: crate::runtime::RuntimeError,
    },
    /// An image a container needs is not present (no registry is reachable from the node).
    #[error(
        "container {container:?}: image {image:?} is not present in the local node's container runtime and no registry is reachable; build it (scripts/images.sh builds busybox:latest and argoexec:dev) or use a local image"
    )]
    ImageMissing {
        /// The container.
        container: String,
        /// The image reference.
        image: String,
    },
    /// The pod spec uses something the local node does not implement.
    #[error("pod {pod:?}: {what} is not supported by the local node")]
    Unsupported {
        /// The pod.
        pod: String,
        /// What, e.g. `volume "x" of type secret`.
        what: String,
    },
    /// The pod spec is invalid.
    #[error("pod {pod:?}: {message}")]
    Invalid {
        /// The pod.
        pod: String,
        /// What is wrong.
        message: String,
    },
    /// A `configMap` or `secret` volume cannot be made: the object or a key it lists is
    /// missing (the kubelet's `MountVolume.SetUp failed` event).
    #[error("pod {pod:?}: MountVolume.SetUp failed for volume {volume:?} : {source}")]
    Mount {
        /// The pod.
        pod: String,
        /// The volume.
        volume: String,
        /// What is missing.
        #[source]
        source: Box<crate::objects::ConfigError>,
    },
    /// A container's env refers to a ConfigMap or Secret (or a key of one) that is missing:
    /// the kubelet's `CreateContainerConfigError`.
    #[error("container {container:?}: {source}")]
    ContainerConfig {
        /// The container.
        container: String,
        /// What is missing.
        #[source]
        source: Box<crate::objects::ConfigError>,
    },
    /// `runAsNonRoot` is set and the container would run as root (or as a user that
    /// cannot be verified): the kubelet's `CreateContainerConfigError`.
    #[error(transparent)]
    NonRoot(#[from] crate::nonroot::NonRootError),
    /// A container runtime call failed.
    #[error("local node: {0}")]
    Runtime(#[from] crate::runtime::RuntimeError),
    /// A host filesystem operation (volumes, termination logs) failed.
    #[error("local node: {action} {path}: {source}")]
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

impl NodeError {
    /// Wrap an I/O error.
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.display().to_string(),
            source,
        }
    }
}
