//! `argoexec resource ACTION`: the main container of a resource-template pod (Argo runs it
//! as `argoexec resource <action> --loglevel … --log-format … --gloglevel …`, wrapped by
//! the emissary). Loads the template as the other subcommands do, connects to the API
//! server in-cluster and hands over to [`argoexec_resource::run`], which reports the
//! outputs as a `WorkflowTaskResult` with the handshake of the pod's Argo version.
//!
//! The namespace for objects without one: `ARGO_NAMESPACE`, else `POD_NAMESPACE` (as
//! client-go's in-cluster configuration), else the service account's namespace, else
//! `default`. The manifest path: `ARGOEXEC_RESOURCE_MANIFEST`, else `/tmp/manifest.yaml`.

use anyhow::Context;
use argoexec_core::{ExecutorEnv, PodPaths};
use argoexec_report::{ApiReporter, InClusterConfig};
use argoexec_resource::manifest::{MANIFEST_PATH, MANIFEST_PATH_ENV};

/// Arguments of `argoexec resource`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// get, create, apply, delete, replace or patch.
    pub action: String,
}

/// Run; 0 on success, 64 with the message in the termination log otherwise.
pub fn run(args: Args) -> i32 {
    let paths = PodPaths::from_env();
    match execute(&paths, args) {
        Ok(()) => 0,
        Err(e) => super::fail(&paths, &e),
    }
}

fn execute(paths: &PodPaths, args: Args) -> anyhow::Result<()> {
    let get = |k: &str| std::env::var(k).ok();
    let mut env = ExecutorEnv::from_env().context("bad executor environment")?;
    if env.namespace.is_none() {
        env.namespace = get("POD_NAMESPACE")
            .filter(|n| !n.trim().is_empty())
            .or_else(|| argoexec_core::env::resolve_namespace(paths, get));
    }
    let (template, source) =
        argoexec_core::env::load_template(paths, get, None).context("cannot load the template")?;
    tracing::debug!(?source, template = %template.name, "loaded template");
    let config = InClusterConfig::from_env(paths)
        .context("bad in-cluster API configuration")?
        .context(
            "resource templates need the API server: KUBERNETES_SERVICE_HOST and a service-account token",
        )?;
    let step = argoexec_resource::Step {
        action: args.action,
        template,
        manifest_path: get(MANIFEST_PATH_ENV)
            .unwrap_or_else(|| MANIFEST_PATH.into())
            .into(),
        namespace: env.namespace.clone().unwrap_or_else(|| "default".into()),
        check_interval: argoexec_resource::wait::interval_from(
            get(argoexec_resource::wait::INTERVAL_ENV).as_deref(),
        ),
    };
    let rt = super::runtime()?;
    rt.block_on(async {
        let (client, _token) = config.connect().context("cannot connect to the API server")?;
        let reporter = ApiReporter::connect(&config, &env).context("cannot report through the API server")?;
        argoexec_resource::run(&client, &reporter, &step).await?;
        Ok(())
    })
}
