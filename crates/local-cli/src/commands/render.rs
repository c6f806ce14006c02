//! `argoexec render WORKFLOW.yaml [--config cm.yaml] [--executor X] [--template NAME]`:
//! print the pod the controller side would create for the entrypoint (or named) template,
//! as the controller of `--argo-version` (default 4.1) builds it, followed (`---`) by the
//! `<pod>` ConfigMap holding what was too large for the pod (a template or args above
//! 128 KiB, v3.6+).
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
    /// The Argo controller version whose pod to build: 3.3, 3.5, 3.7, 4.0 or 4.1 (default:
    /// the config map's `argoVersion`, else 4.1).
    #[arg(long)]
    pub argo_version: Option<argoexec_core::ArgoVersion>,
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
        argo_version: args.argo_version,
    })?;
    let built = plan.build(&args.executor_image, "info")?;
    let mut out = serde_saphyr::to_string(&built.pod).context("cannot serialise the pod")?;
    // What was too large for the pod: the ConfigMap it mounts follows.
    if let Some(cm) = &built.config_map {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&cm).context("cannot serialise the ConfigMap")?);
    }
    Ok(out)
}
