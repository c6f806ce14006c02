//! `argoexec render WORKFLOW.yaml [--config cm.yaml] [--executor X] [--template NAME]`:
//! print the pod the controller side would create for the entrypoint (or named) template,
//! as the controller of `--argo-version` (default 4.1) builds it, followed (`---`) by the
//! `<pod>` ConfigMap holding what was too large for the pod (a template or args above
//! 128 KiB, v3.6+).
//!
//! With `--artifact-gc`, the artifact-GC `WorkflowArtifactGCTask` and pod for the template's
//! output artifacts are printed instead, as the controller makes them once the step is done
//! (the task's UID, which owns the pod, is a placeholder: the API server gives it).
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
    /// Print the artifact-GC task and pod for the template's output artifacts instead of
    /// the step's pod.
    #[arg(long)]
    pub artifact_gc: bool,
}

/// The owner UID the rendered GC pod shows for its task.
const TASK_UID_PLACEHOLDER: &str = "00000000-0000-0000-0000-000000000000";

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
    if super::run::agent::is_agent_template(&plan.template) {
        return super::run::agent::render(&plan, &args.executor_image);
    }
    let built = plan.build(&args.executor_image, "info")?;
    if args.artifact_gc {
        return render_gc(args, &plan, &built.pod);
    }
    let mut out = serde_saphyr::to_string(&built.pod).context("cannot serialise the pod")?;
    // What was too large for the pod: the ConfigMap it mounts follows.
    if let Some(cm) = &built.config_map {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&cm).context("cannot serialise the ConfigMap")?);
    }
    Ok(out)
}

/// The GC task and pod for the template's declared output artifacts.
fn render_gc(
    args: &Args,
    plan: &super::plan::Plan,
    step: &k8s_openapi::api::core::v1::Pod,
) -> anyhow::Result<String> {
    use argoexec_podbuilder::build::artifact_gc::{gc_pod, gc_pod_name, gc_task};
    let (collected, _) = super::run::gc::split_never(plan, &plan.template.outputs.artifacts);
    if collected.is_empty() {
        anyhow::bail!(
            "template {:?} has no output artifacts to collect (or all are artifactGC.strategy: Never)",
            plan.template.name
        );
    }
    let settings = plan.wf.artifact_gc.clone().unwrap_or_default();
    let (strategy, mut info) = super::run::gc::pod_info(&settings)?;
    info.artifact_drivers = plan.config.artifact_drivers.clone();
    info.images = plan.config.images.clone();
    let pod_name = gc_pod_name(&plan.wf.meta.name, strategy, &info);
    let node_id = step
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("workflows.argoproj.io/node-id").cloned())
        .unwrap_or_else(|| plan.pod_name.clone());
    let node = argoexec_core::artifact_gc::ArtifactNodeSpec {
        archive_location: plan
            .template
            .archive_location
            .as_ref()
            .map(|a| a.location.clone()),
        artifacts: collected.iter().map(|a| (a.name.clone(), (*a).clone())).collect(),
    };
    let task = gc_task(&plan.wf.meta, &pod_name, [(node_id, node)].into());
    let opts = plan.build_options(&args.executor_image, "info")?;
    let pod = gc_pod(&plan.wf.meta, strategy, &info, &task, TASK_UID_PLACEHOLDER, &opts)?;
    let mut out = serde_saphyr::to_string(&task).context("cannot serialise the task")?;
    out.push_str("---\n");
    out.push_str(&serde_saphyr::to_string(&pod).context("cannot serialise the pod")?);
    Ok(out)
}
