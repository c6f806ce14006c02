//! One module per subcommand of the local tools; [`plan`] is shared by `render` and `run`.

pub mod node;
pub mod plan;
pub mod render;
pub mod run;

/// A tokio runtime for the node and `run`.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// `--runtime`: the container runtime of the local node (docs/local-node.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeArg {
    /// The Docker Engine at `--docker-socket`.
    Docker,
    /// The project's containerd at `--containerd-socket` (scripts/containerd-up.sh starts
    /// it and imports the local images), namespace `argoexec`.
    Containerd,
}

impl RuntimeArg {
    /// The node's runtime choice.
    pub fn choice(self, containerd_socket: &std::path::Path) -> argoexec_node::RuntimeChoice {
        match self {
            Self::Docker => argoexec_node::RuntimeChoice::Docker,
            Self::Containerd => argoexec_node::RuntimeChoice::Containerd {
                socket: containerd_socket.to_path_buf(),
                namespace: "argoexec".into(),
            },
        }
    }
}
