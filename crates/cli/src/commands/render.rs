//! `argoexec render WORKFLOW.yaml [--config cm.yaml] [--executor X] [--template NAME]`:
//! print the pod the controller side would create for the entrypoint (or named) template,
//! followed (`---`) by the ConfigMap holding its template when that is too large for
//! `ARGO_TEMPLATE` (argoexec_podbuilder::offload).
//!
//! The template is resolved first, as the controller does: workflow arguments (overridden by
//! `-p name=value`) bind the inputs and every `{{…}}` reference is substituted.

use anyhow::Context;
use argoexec_podbuilder::ExecutorChoice;

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
    let plan = super::plan::plan(&super::plan::PlanInput {
        workflow: &args.workflow,
        config: args.config.as_ref(),
        executor: args.executor,
        template: args.template.as_deref(),
        parameters: &args.parameters,
        random_name: false,
    })?;
    let pod = plan.build(&args.executor_image, "info")?;
    let mut out = serde_saphyr::to_string(&pod).context("cannot serialise the pod")?;
    // A template too large for ARGO_TEMPLATE: the ConfigMap the pod's init mounts follows.
    if let Some(cm) = argoexec_podbuilder::template_config_map(&plan.wf.meta, &plan.template, &plan.pod_name)?
    {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&cm).context("cannot serialise the ConfigMap")?);
    }
    Ok(out)
}
