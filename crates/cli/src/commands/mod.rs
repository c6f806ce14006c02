//! One module per subcommand, plus the shared failure path ([`fail`]) and the bootstrap of
//! init and wait ([`bootstrap`]).

pub mod agent;
pub mod artifact;
pub mod data;
pub mod emissary;
pub mod init;
pub mod kill;
pub mod local;
pub mod plugin_init;
pub mod resource;
pub mod wait;

use argoexec_core::PodPaths;
use argoexec_core::exit::EXECUTOR_FAILURE;

/// Report an executor failure: log it, write it to the termination log, return exit 64.
pub fn fail(paths: &PodPaths, err: &anyhow::Error) -> i32 {
    let message = format!("{err:#}");
    tracing::error!(error = %message, "executor failed");
    eprintln!("argoexec: {message}");
    write_termination_log(paths, &message);
    EXECUTOR_FAILURE
}

/// Report a panic (the image's build, which aborts): the panic hook has printed it to
/// stderr; write it to the termination log, as Argo's executor does. Returns exit 64.
pub fn report_panic(paths: &PodPaths, line: &str) -> i32 {
    write_termination_log(paths, line);
    EXECUTOR_FAILURE
}

fn write_termination_log(paths: &PodPaths, message: &str) {
    let path = paths.termination_log();
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(&path, message);
}

/// Arguments shared by `argoexec init` and `argoexec wait`.
#[derive(Debug, clap::Args)]
pub struct StepArgs {
    /// The ≤ v3.1 downward-API annotations file.
    #[arg(long)]
    pub pod_annotations: Option<std::path::PathBuf>,
}

/// A tokio runtime for init and wait.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Parse the environment contract and load the template: the bootstrap shared by init and
/// wait (`--pod-annotations` only matters for ≤ v3.1 pods).
pub fn bootstrap(
    paths: &PodPaths,
    annotations: Option<&std::path::Path>,
) -> anyhow::Result<argoexec_flows::StepContext> {
    use anyhow::Context;
    let mut env = argoexec_core::ExecutorEnv::from_env().context("bad executor environment")?;
    if env.namespace.is_none() {
        env.namespace = argoexec_core::env::resolve_namespace(paths, |k| std::env::var(k).ok());
    }
    let (template, source) = argoexec_core::env::load_template(paths, |k| std::env::var(k).ok(), annotations)
        .context("cannot load the template")?;
    tracing::debug!(?source, template = %template.name, "loaded template");
    // Container names become paths (`/var/run/argo/ctr/<name>/`): refuse `../x` and the like
    // before any backend builds one.
    argoexec_core::names::check_template(&template).context("bad template")?;
    let artifacts = argoexec_artifacts::Settings {
        paths: paths.clone(),
        ..argoexec_artifacts::Settings::from_env().context("bad artifact transfer settings")?
    };
    Ok(argoexec_flows::StepContext {
        paths: paths.clone(),
        env,
        template,
        template_source: source,
        artifacts: std::sync::Arc::new(artifacts),
    })
}
