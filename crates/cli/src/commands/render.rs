//! `argoexec render WORKFLOW.yaml [--config cm.yaml] [--executor X] [--template NAME]`:
//! print the pod the controller side would create for the entrypoint (or named) template.
//!
//! The template is resolved first, as the controller does: workflow arguments (overridden by
//! `-p name=value`) bind the inputs and every `{{…}}` reference is substituted.

use anyhow::Context;
use argoexec_podbuilder::workflow::Workflow;
use argoexec_podbuilder::{
    BuildOptions, ControllerConfig, ExecutorChoice, build_pod, resolve_choice, select_executor,
};

/// Arguments of `argoexec render`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Workflow manifest.
    pub workflow: std::path::PathBuf,
    /// A workflow-controller-configmap manifest.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// The executor: docker, kubelet, k8sapi, pns, emissary or auto (the config map's choice
    /// wins; see docs/configuration.md).
    #[arg(long)]
    pub executor: Option<ExecutorChoice>,
    /// Render this template instead of the entrypoint.
    #[arg(long)]
    pub template: Option<String>,
    /// Override a workflow parameter: `-p name=value` (repeatable).
    #[arg(short = 'p', long = "parameter")]
    pub parameters: Vec<String>,
    /// The executor image.
    #[arg(long, default_value = "argoexec:dev")]
    pub executor_image: String,
}

/// Render; returns 0, or 2 for bad input.
pub fn run(args: Args) -> i32 {
    match render(&args) {
        Ok(yaml) => {
            print!("{yaml}");
            0
        }
        Err(e) => {
            eprintln!("argoexec render: {e:#}");
            2
        }
    }
}

fn render(args: &Args) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(&args.workflow)
        .with_context(|| format!("cannot read {}", args.workflow.display()))?;
    let wf = Workflow::from_yaml(&text).with_context(|| format!("{}", args.workflow.display()))?;
    let (config, warnings) = match &args.config {
        Some(p) => {
            let t = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
            ControllerConfig::from_configmap_yaml(&t)?
        }
        None => (ControllerConfig::from_fields(Default::default())?.0, Vec::new()),
    };
    for w in warnings {
        tracing::warn!("{w}");
    }
    let (choice, source) = select_executor(&config, &wf.meta.labels, args.executor)?;
    let template = wf.pod_template(args.template.as_deref())?;
    let pod_name = format!("{}-{}", wf.meta.name, template.name);
    let overrides = argoexec_podbuilder::resolve::parse_overrides(&args.parameters)?;
    let template = argoexec_podbuilder::resolve::resolve(
        &template,
        &wf.arguments,
        &overrides,
        &wf.meta.name,
        &pod_name,
    )?;
    let (executor, reason) = resolve_choice(choice, &template, &config);
    tracing::info!(%executor, ?source, %reason, "executor chosen");
    let opts = BuildOptions {
        executor_image: args.executor_image.clone(),
        executor_reason: Some(reason),
        ..Default::default()
    };
    let pod = build_pod(&wf.meta, &template, &pod_name, &config, executor, &opts)?;
    serde_saphyr::to_string(&pod).context("cannot serialise the pod")
}
