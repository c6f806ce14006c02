//! The five container-runtime executor names.

use std::fmt;
use std::str::FromStr;

/// A container-runtime executor (backend) name, as in `ARGO_CONTAINER_RUNTIME_EXECUTOR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutorKind {
    /// Docker Engine API over the node's socket.
    Docker,
    /// The kubelet's HTTPS API.
    Kubelet,
    /// The Kubernetes API server.
    K8sApi,
    /// Process namespace sharing.
    Pns,
    /// The command wrapper with its file protocol (Argo's default since v3.3).
    Emissary,
}

impl ExecutorKind {
    /// All kinds, in the order Argo introduced them.
    pub const ALL: [ExecutorKind; 5] = [
        Self::Docker,
        Self::Kubelet,
        Self::K8sApi,
        Self::Pns,
        Self::Emissary,
    ];

    /// The name Argo uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Kubelet => "kubelet",
            Self::K8sApi => "k8sapi",
            Self::Pns => "pns",
            Self::Emissary => "emissary",
        }
    }
}

impl fmt::Display for ExecutorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An executor name that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown container runtime executor {0:?}: expected one of docker, kubelet, k8sapi, pns, emissary")]
pub struct UnknownExecutor(pub String);

impl FromStr for ExecutorKind {
    type Err = UnknownExecutor;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s.trim())
            .ok_or_else(|| UnknownExecutor(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parse_and_display() {
        for k in ExecutorKind::ALL {
            assert_eq!(k.as_str().parse::<ExecutorKind>().unwrap(), k);
        }
        let e = "dockerd".parse::<ExecutorKind>().unwrap_err();
        assert!(e.to_string().contains("\"dockerd\""));
    }
}
