//! `argoexec data`: the main container of a data-template pod (Argo runs it as
//! `argoexec data '<json of template.data>' --loglevel … --log-format … --gloglevel N`,
//! wrapped by the emissary). The JSON argument is ignored, as Argo's own command ignores it:
//! the template comes from `/var/run/argo/template` or `ARGO_TEMPLATE` like every other
//! subcommand. Lists the source, runs the transformations and reports `outputs.result`
//! through the API server ([`argoexec_data::run`]).

use std::sync::Arc;

use anyhow::Context;
use argoexec_artifacts::Settings;
use argoexec_core::{ExecutorEnv, PodPaths};
use argoexec_report::{ApiReporter, InClusterConfig};

/// Arguments of `argoexec data`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The controller's JSON of `template.data`: ignored (the template is read as by the
    /// other subcommands).
    #[arg(hide = true)]
    pub ignored: Option<String>,
}

/// Run; 0 on success, 64 with the message in the termination log otherwise.
pub fn run(args: Args) -> i32 {
    let paths = PodPaths::from_env();
    if args.ignored.is_some() {
        tracing::debug!("the data template argument is ignored; the template is loaded as usual");
    }
    match execute(&paths) {
        Ok(()) => 0,
        Err(e) => super::fail(&paths, &e),
    }
}

fn execute(paths: &PodPaths) -> anyhow::Result<()> {
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
    let settings = Arc::new(Settings {
        paths: paths.clone(),
        ..Settings::from_env().context("bad artifact transfer settings")?
    });
    let config = InClusterConfig::from_env(paths)
        .context("bad in-cluster API configuration")?
        .context("data templates report through the API server: KUBERNETES_SERVICE_HOST and a service-account token")?;
    let rt = super::runtime()?;
    rt.block_on(async {
        let reporter = ApiReporter::connect(&config, &env).context("cannot report through the API server")?;
        let outputs = argoexec_data::run(&reporter, &template, &settings).await?;
        tracing::info!(
            bytes = outputs.result.as_deref().map_or(0, str::len),
            "data result reported"
        );
        Ok(())
    })
}
