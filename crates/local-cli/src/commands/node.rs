//! `argoexec node`: run the local node standalone (pods on Docker behind kubelet- and
//! API-server-compatible HTTPS endpoints) until SIGINT/SIGTERM, so `kubectl` or any client
//! library can use it. When ready it writes the kubeconfig (if asked) and prints one JSON
//! line to stdout: `{"api":…,"kubelet":…,"kubeconfig":…,"node":…,"kubeletCa":…}`.
//! On shutdown every pod it ran is deleted (containers and files).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use argoexec_node_server::{KubeletCert, NodeServer, ServerConfig};
use serde_json::json;

/// Arguments of `argoexec node`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write a kubeconfig for the node's admin here (mode 0600).
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Load RBAC (Role, ClusterRole, RoleBinding, ClusterRoleBinding) from every *.yaml here.
    #[arg(long)]
    pub rbac: Vec<PathBuf>,
    /// API server port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub api_port: u16,
    /// Kubelet port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub kubelet_port: u16,
    /// The kubelet's certificate: ca-ip (cluster CA, IP SAN), ca-hostname (cluster CA, only
    /// the node name), self-signed (own CA, only the node name).
    #[arg(long, default_value = "ca-ip")]
    pub kubelet_cert: KubeletCert,
    /// Write the kubelet's CA bundle here (for the self-signed setup).
    #[arg(long)]
    pub kubelet_ca_out: Option<PathBuf>,
    /// Seconds between rotations of each pod's projected service-account token.
    #[arg(long, default_value_t = 2880)]
    pub token_rotation: u64,
    /// Lifetime in seconds of projected tokens.
    #[arg(long, default_value_t = 3607)]
    pub token_ttl: u64,
    /// Events kept per kind for resuming watches (older versions get 410 Expired).
    #[arg(long, default_value_t = 100)]
    pub watch_cache: usize,
    /// The Docker Engine socket.
    #[arg(long, default_value = "/var/run/docker.sock")]
    pub docker_socket: PathBuf,
    /// The local node's container runtime: docker (the Docker Engine at --docker-socket) or
    /// containerd (at --containerd-socket; `bash scripts/containerd-up.sh` starts it and
    /// imports the local images). The docker executor needs docker.
    #[arg(long, value_enum, default_value = "docker", env = "ARGOEXEC_RUNTIME")]
    pub runtime: super::RuntimeArg,
    /// The containerd socket of `--runtime containerd`.
    #[arg(long, default_value = argoexec_node::DEFAULT_CONTAINERD_SOCKET)]
    pub containerd_socket: PathBuf,
    /// The node's name.
    #[arg(long, default_value = "argoexec-local")]
    pub node_name: String,
    /// Host directory for pod volumes.
    #[arg(long, env = "ARGOEXEC_NODE_STATE_DIR", hide = true)]
    pub node_state_dir: Option<PathBuf>,
    /// Pause image of the pods.
    #[arg(long, env = "ARGOEXEC_IMAGE", default_value = "argoexec:dev")]
    pub pause_image: String,
    /// Faults to inject (docs/faults.md), e.g. `api-503=2,watch-cut-secs=5`.
    #[arg(long, value_parser = argoexec_node_server::faults::FaultSpec::parse)]
    pub faults: Option<argoexec_node_server::faults::FaultSpec>,
}

/// Run the node; returns the exit code.
pub fn run(args: Args) -> i32 {
    match go(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("argoexec node: {e:#}");
            1
        }
    }
}

fn go(args: Args) -> anyhow::Result<()> {
    let rt = super::runtime()?;
    rt.block_on(async {
        let mut node = argoexec_node::NodeConfig {
            runtime: args.runtime.choice(&args.containerd_socket),
            docker_socket: args.docker_socket.clone(),
            node_name: args.node_name.clone(),
            pause_image: args.pause_image.clone(),
            ..Default::default()
        };
        if let Some(d) = &args.node_state_dir {
            node.state_dir = d.clone();
        }
        let config = ServerConfig {
            node,
            api_port: args.api_port,
            kubelet_port: args.kubelet_port,
            kubelet_cert: args.kubelet_cert,
            token_ttl: Duration::from_secs(args.token_ttl),
            token_rotation: Duration::from_secs(args.token_rotation.max(1)),
            watch_cache: args.watch_cache,
            faults: args.faults.clone().unwrap_or_default(),
        };
        let server = NodeServer::start(config).await.context("start the local node")?;
        for dir in &args.rbac {
            let n = server.rbac().load_dir(dir)?;
            tracing::info!(dir = %dir.display(), objects = n, "loaded RBAC");
        }
        if let Some(p) = &args.kubeconfig_out {
            server.write_kubeconfig(p)?;
        }
        if let Some(p) = &args.kubelet_ca_out {
            std::fs::write(p, server.kubelet_ca_pem()).with_context(|| format!("write {}", p.display()))?;
        }
        let ready = json!({
            "api": server.api_url(),
            "kubelet": server.kubelet_url(),
            "kubeconfig": args.kubeconfig_out,
            "kubeletCa": args.kubelet_ca_out,
            "node": server.node_name(),
        });
        println!("{ready}");
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        tracing::info!("stopping the local node: deleting its pods");
        server.shutdown().await;
        Ok(())
    })
}
