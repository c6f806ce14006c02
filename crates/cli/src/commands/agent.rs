//! `argoexec agent init` and `argoexec agent main`: the init and main containers of Argo's
//! agent pod, which runs a workflow's HTTP templates and executor-plugin templates
//! ([`argoexec_agent`]; contract §1.4).
//!
//! Exit status as Argo's: 0 when the task set is completed or deleted (and, here, after
//! SIGTERM once pending results are patched); 64 with the message in the termination log
//! when the environment is unusable or the API refuses the task set for good.

use std::sync::Arc;

use anyhow::Context;
use argoexec_agent::AgentConfig;
use argoexec_core::PodPaths;
use argoexec_report::InClusterConfig;

/// Which container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    /// Write a token for each plugin sidecar (the agent pod's init container).
    Init,
    /// Run the workflow's HTTP and plugin tasks (the agent pod's main container).
    Main,
}

/// Arguments of `argoexec agent`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// init or main.
    #[arg(value_enum)]
    pub action: Action,
}

/// Run; the exit status.
pub fn run(args: &Args) -> i32 {
    let paths = PodPaths::from_env();
    let result = match args.action {
        Action::Init => init(&paths),
        Action::Main => main(&paths),
    };
    match result {
        Ok(()) => 0,
        Err(e) => super::fail(&paths, &e),
    }
}

fn init(paths: &PodPaths) -> anyhow::Result<()> {
    let names = argoexec_agent::config::string_array(
        "ARGO_PLUGIN_NAMES",
        std::env::var("ARGO_PLUGIN_NAMES").ok(),
        false,
    )?;
    let written = argoexec_agent::init::write_tokens(paths, &names)?;
    tracing::info!(tokens = written.len(), "plugin tokens written");
    Ok(())
}

fn main(paths: &PodPaths) -> anyhow::Result<()> {
    let get = |k: &str| std::env::var(k).ok();
    let config = InClusterConfig::from_env(paths)
        .context("bad in-cluster API configuration")?
        .context("the agent needs the API server: KUBERNETES_SERVICE_HOST and a service-account token")?;
    let namespace = get("POD_NAMESPACE")
        .filter(|n| !n.trim().is_empty())
        .or_else(|| config.namespace().ok())
        .or_else(|| argoexec_core::env::resolve_namespace(paths, get))
        .context("cannot tell the workflow's namespace (the service-account token's namespace file)")?;
    let agent = AgentConfig::from_env(get, paths, namespace).context("bad agent environment")?;
    let rt = super::runtime()?;
    rt.block_on(async {
        let (client, _token) = config.connect().context("cannot connect to the API server")?;
        let stats = Arc::new(argoexec_agent::patch::Stats::default());
        let stop = argoexec_agent::run(client, &agent, stats.clone(), terminated()).await?;
        let (patches, results) = stats.get();
        tracing::info!(?stop, patches, results, "agent done");
        anyhow::Ok(())
    })
}

/// Resolves on SIGTERM or SIGINT.
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}
