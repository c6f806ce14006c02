//! From a Workflow manifest to the pod the controller side would create: read and parse the
//! workflow and config map, choose the executor (v3.3 precedence, see
//! docs/configuration.md), resolve the template, build the pod. Shared by `render` and `run`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use argoexec_core::template::Template;
use argoexec_core::{ArgoVersion, ExecutorKind};
use argoexec_podbuilder::workflow::Workflow;
use argoexec_podbuilder::{
    BuildOptions, ControllerConfig, ExecutorChoice, PodBuild, build_pod, resolve_choice, select_executor,
};

/// What the plan starts from.
pub struct PlanInput<'a> {
    /// The Workflow manifest.
    pub workflow: &'a Path,
    /// A workflow-controller-configmap manifest.
    pub config: Option<&'a PathBuf>,
    /// The `--executor` flag.
    pub executor: Option<ExecutorChoice>,
    /// Template to use instead of the entrypoint.
    pub template: Option<&'a str>,
    /// `-p name=value` overrides.
    pub parameters: &'a [String],
    /// Give a `generateName` workflow a random suffix (as the API server does) instead of
    /// a fixed one.
    pub random_name: bool,
    /// `--argo-version`: the controller version whose pod to build (else the config map's
    /// `argoVersion`, else the newest).
    pub argo_version: Option<ArgoVersion>,
}

/// A resolved template ready to become a pod.
pub struct Plan {
    /// The workflow.
    pub wf: Workflow,
    /// The controller configuration.
    pub config: ControllerConfig,
    /// The resolved template.
    pub template: Template,
    /// The chosen executor.
    pub executor: ExecutorKind,
    /// Why it was chosen.
    pub reason: String,
    /// The pod's name.
    pub pod_name: String,
    /// The controller version whose pod is built.
    pub argo_version: ArgoVersion,
}

/// Parse, choose and resolve.
///
/// # Errors
/// Unreadable files, invalid manifests, unknown templates, unresolved references.
pub fn plan(input: &PlanInput<'_>) -> anyhow::Result<Plan> {
    let path = input.workflow;
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut wf = Workflow::from_yaml(&text).with_context(|| format!("{}", path.display()))?;
    if input.random_name
        && let Some(prefix) = generate_name(&text)
    {
        wf.meta.name = format!("{prefix}{}", random_suffix());
    }
    // As the API server gives every created Workflow a UID (the owner of its task results
    // and offloaded ConfigMaps, `ARGO_WORKFLOW_UID`); a rendered manifest keeps its own.
    if input.random_name && wf.meta.uid.is_empty() {
        wf.meta.uid = random_uid();
    }
    let (config, warnings) = match input.config {
        Some(p) => {
            let t = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
            ControllerConfig::from_configmap_yaml(&t).with_context(|| format!("{}", p.display()))?
        }
        None => (ControllerConfig::from_fields(Default::default())?.0, Vec::new()),
    };
    for w in warnings {
        tracing::warn!("{w}");
    }
    let (choice, source) = select_executor(&config, &wf.meta.labels, input.executor)?;
    let template = wf.pod_template(input.template)?;
    let pod_name = if input.random_name {
        wf.meta.name.clone()
    } else {
        format!("{}-{}", wf.meta.name, template.name)
    };
    let overrides = argoexec_podbuilder::resolve::parse_overrides(input.parameters)?;
    let template = argoexec_podbuilder::resolve::resolve(
        &template,
        &wf.arguments,
        &overrides,
        &wf.meta.name,
        &pod_name,
    )?;
    let (executor, reason) = resolve_choice(choice, &template, &config);
    tracing::debug!(%executor, ?source, %reason, "executor chosen");
    // Executors other than emissary exist only in v3.3: without an explicit version, such a
    // choice means a v3.3 pod; an explicit later version is the pod builder's error.
    let argo_version = match input.argo_version.or(config.argo_version) {
        Some(v) => v,
        None if executor != ExecutorKind::Emissary => {
            tracing::info!(%executor, "no Argo version given; the {executor} executor exists only in Argo 3.3, building a 3.3 pod");
            ArgoVersion::V3_3
        }
        None => ArgoVersion::NEWEST,
    };
    Ok(Plan {
        wf,
        config,
        template,
        executor,
        reason,
        pod_name,
        argo_version,
    })
}

impl Plan {
    /// Build the pod (and the ConfigMap of what it offloads), its executor processes logging
    /// at `log_level`, as the plan's Argo version does; a v4.1 pod carries a fresh
    /// `TRACEPARENT`, as that controller's always does.
    ///
    /// # Errors
    /// Validation failures naming what to change.
    pub fn build(&self, executor_image: &str, log_level: &str) -> anyhow::Result<PodBuild> {
        let opts = self.build_options(executor_image, log_level)?;
        Ok(build_pod(
            &self.wf.meta,
            &self.template,
            &self.pod_name,
            &self.config,
            self.executor,
            &opts,
        )?)
    }

    /// The pod builder's options for this plan.
    ///
    /// # Errors
    /// A progress tick variable that is not a Go duration.
    pub fn build_options(&self, executor_image: &str, log_level: &str) -> anyhow::Result<BuildOptions> {
        Ok(BuildOptions {
            executor_image: executor_image.to_string(),
            executor_reason: self.reason.starts_with("auto").then(|| self.reason.clone()),
            log_level: log_level.to_string(),
            argo_version: self.argo_version,
            instance_id: self.config.instance_id.clone(),
            trace_parent: (self.argo_version >= ArgoVersion::V4_1).then(trace_parent),
            progress: progress_ticks()?,
            ..Default::default()
        })
    }
}

/// The progress ticks, from the controller's own variables as Argo's controller reads them
/// (`ARGO_PROGRESS_PATCH_TICK_DURATION`, default `1m0s`; `ARGO_PROGRESS_FILE_TICK_DURATION`,
/// default `3s`); either at zero disables progress.
fn progress_ticks() -> anyhow::Result<Option<argoexec_podbuilder::ProgressTicks>> {
    let mut ticks = argoexec_podbuilder::ProgressTicks::default();
    for (var, slot) in [
        ("ARGO_PROGRESS_PATCH_TICK_DURATION", &mut ticks.patch),
        ("ARGO_PROGRESS_FILE_TICK_DURATION", &mut ticks.file),
    ] {
        let Ok(v) = std::env::var(var) else { continue };
        let d = argoexec_core::template::container::parse_go_duration(v.trim())
            .with_context(|| format!("{var}={v:?} is not a Go duration such as 1m0s or 500ms"))?;
        if d.is_zero() {
            return Ok(None);
        }
        *slot = v.trim().to_string();
    }
    Ok(Some(ticks))
}

/// A random UUID (version 4) in its usual text form.
fn random_uid() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// A random W3C `traceparent` (version 00, sampled).
fn trace_parent() -> String {
    let mut b = [0u8; 24];
    getrandom::fill(&mut b).unwrap_or_else(|_| {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos());
        b[..16].copy_from_slice(&n.to_le_bytes());
    });
    let hex = |s: &[u8]| s.iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!("00-{}-{}-01", hex(&b[..16]), hex(&b[16..]))
}

/// `metadata.generateName` of a manifest, if it has one and no `name`.
fn generate_name(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Doc {
        metadata: Meta,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        name: Option<String>,
        generate_name: Option<String>,
    }
    let doc: Doc = serde_saphyr::from_str(text).ok()?;
    match doc.metadata.name {
        Some(n) if !n.is_empty() => None,
        _ => doc.metadata.generate_name,
    }
}

/// Five lowercase alphanumerics, like the API server's generateName suffix.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let read = || {
        use std::io::Read;
        let mut b = [0u8; 5];
        std::fs::File::open("/dev/urandom")
            .ok()?
            .read_exact(&mut b)
            .ok()?;
        Some(b)
    };
    let seed = read().unwrap_or_else(|| {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::process::id();
        [
            (n >> 3) as u8,
            (n >> 11) as u8,
            (n >> 19) as u8,
            p as u8,
            (p >> 8) as u8,
        ]
    });
    seed.iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}
