//! `argoexec run WORKFLOW.yaml`: the main job. Resolve the entrypoint template as the
//! controller does, build its pod with the pod builder, run it on the local node (pods on the
//! local Docker Engine), collect what the wait container reported, assess the node phase and
//! print it (`-o text` with progress, or one JSON object with `-o json`).
//!
//! Output artifacts go to a local artifact repository: a host directory (`--artifacts`,
//! default a fresh temp directory that is kept) mounted into init and wait at
//! [`REPO_MOUNT`]; the template's archive location points there unless it has its own.
//! `--artifact-gc` then deletes the output artifacts the step stored, with Argo's GC pod
//! ([`gc`]), and prints the result per artifact; the exit status stays the step's.
//!
//! Exit status: 0 Succeeded, 1 Failed, 2 Error or bad input.

pub(crate) mod agent;
pub(crate) mod gc;
mod kit;
mod mounts;
mod objects;
mod outcome;
mod progress;
mod repository;
mod session;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use argoexec_core::ExecutorKind;
use argoexec_core::template::{ArchiveLocation, ArtifactLocation, LocalArtifact, Outputs};
use argoexec_node::NodeConfig;
use argoexec_node_server::KubeletCert;
use argoexec_podbuilder::ExecutorChoice;
use outcome::{Outcome, Phase};

/// Where init and wait see the local artifact repository.
pub const REPO_MOUNT: &str = "/argo/artifact-repository";
/// How long containers may outlive the wait container before the run deletes the pod.
const SIDECAR_GRACE: Duration = Duration::from_secs(5);

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Progress on stderr, a readable summary on stdout.
    Text,
    /// One JSON object on stdout.
    Json,
}

/// Arguments of `argoexec run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Workflow manifest.
    pub workflow: PathBuf,
    /// Override a workflow parameter: `-p name=value` (repeatable).
    #[arg(short = 'p', long = "parameter")]
    pub parameters: Vec<String>,
    /// The executor: docker, kubelet, k8sapi, pns, emissary or auto (a config map's choice
    /// wins; see docs/configuration.md). Default: emissary.
    #[arg(long)]
    pub executor: Option<ExecutorChoice>,
    /// A workflow-controller-configmap manifest.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The artifact repository: a host directory (default: a new temp directory, kept when
    /// the run stored anything in it) or
    /// `s3://bucket/prefix` (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
    #[arg(long)]
    pub artifacts: Option<String>,
    /// S3 endpoint for `--artifacts s3://…`: `host:port` or a URL (default: AWS).
    #[arg(long)]
    pub s3_endpoint: Option<String>,
    /// S3 region for `--artifacts s3://…`.
    #[arg(long)]
    pub s3_region: Option<String>,
    /// Plain HTTP to the S3 endpoint.
    #[arg(long)]
    pub s3_insecure: bool,
    /// A Secret created in the workflow's namespace before the pod, `NAME=DIR`: one key per file in DIR, as `kubectl create
    /// secret generic NAME --from-file=DIR` makes it (repeatable). Artifact locations and the
    /// config map's `artifactRepository` name such secrets.
    #[arg(long = "secret")]
    pub secrets: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// The executor image (also the pause container's image).
    #[arg(long, default_value = "argoexec:dev", env = "ARGOEXEC_IMAGE")]
    pub executor_image: String,
    /// The Docker Engine socket of the local node.
    #[arg(long, default_value = "/var/run/docker.sock")]
    pub docker_socket: PathBuf,
    /// The local node's container runtime: docker (the Docker Engine at --docker-socket) or
    /// containerd (at --containerd-socket; `bash scripts/containerd-up.sh` starts it and
    /// imports the local images). The docker executor needs docker.
    #[arg(long, value_enum, default_value = "docker", env = "ARGOEXEC_RUNTIME")]
    pub runtime: crate::commands::RuntimeArg,
    /// The containerd socket of `--runtime containerd`.
    #[arg(long, default_value = argoexec_node::DEFAULT_CONTAINERD_SOCKET)]
    pub containerd_socket: PathBuf,
    /// Host directory for pod volumes (default: $TMPDIR/argoexec-node).
    #[arg(long, env = "ARGOEXEC_NODE_STATE_DIR", hide = true)]
    pub node_state_dir: Option<PathBuf>,
    /// Keep the pod's containers and volumes for debugging (remove them with `docker rm -f`).
    #[arg(long)]
    pub keep: bool,
    /// Save every container's log to DIR/<container>.log before the pod is removed.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
    /// `--loglevel` of the pod's init, wait and emissary processes (Argo's config map
    /// `executor.args` works too).
    #[arg(long, default_value = "info")]
    pub executor_loglevel: String,
    /// RBAC for the pod's service account: Role/ClusterRole/bindings from every *.yaml in
    /// the directory (repeatable). Default: the deploy kit's executor role for the pod's Argo
    /// version and executor (deploy/rbac, docs/deploy.md) bound to the pod's service account.
    #[arg(long)]
    pub rbac: Vec<PathBuf>,
    /// Seconds between rotations of the pod's projected service-account token (tests).
    #[arg(long, env = "ARGOEXEC_NODE_TOKEN_ROTATION", hide = true)]
    pub node_token_rotation: Option<u64>,
    /// Lifetime in seconds of projected tokens (tests).
    #[arg(long, env = "ARGOEXEC_NODE_TOKEN_TTL", hide = true)]
    pub node_token_ttl: Option<u64>,
    /// Faults for the local node to inject (docs/faults.md), e.g.
    /// `api-429=3,watch-cut-events=1,evict=main-running+500`.
    #[arg(long, value_parser = argoexec_node_server::faults::FaultSpec::parse)]
    pub faults: Option<argoexec_node_server::faults::FaultSpec>,
    /// The local node's kubelet serving certificate: ca-ip (cluster CA, IP SAN), ca-hostname
    /// (cluster CA, node name only) or self-signed (its own CA, given to the wait container
    /// as `kubeletCAFile`).
    #[arg(long, default_value = "ca-ip")]
    pub kubelet_cert: KubeletCert,
    /// The Argo controller version whose pod to build: 3.3, 3.5, 3.7, 4.0 or 4.1 (default:
    /// the config map's `argoVersion`, else 4.1). Executors other than emissary need 3.3.
    #[arg(long)]
    pub argo_version: Option<argoexec_core::ArgoVersion>,
    /// Objects to create on the node before the pod (repeatable; YAML, several documents
    /// per file): CustomResourceDefinitions and objects a resource template reads or patches.
    #[arg(long = "create", value_name = "FILE")]
    pub create: Vec<PathBuf>,
    /// Executor plugins for an `http:`/`plugin:` entrypoint's agent pod (repeatable): Argo's
    /// `ExecutorPlugin` manifest or the ConfigMap `argo executor-plugin build` makes of it.
    #[arg(long = "executor-plugin", value_name = "FILE")]
    pub executor_plugins: Vec<PathBuf>,
    /// Write a kubeconfig for the run's node (its admin) to FILE once the node is up, to
    /// look at or change its objects with kubectl while the step runs (mode 0600).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,
    /// When the step has ended, delete the output artifacts it stored as Argo's artifact GC
    /// does (a WorkflowArtifactGCTask and a GC pod running `argoexec artifact delete` with
    /// the deploy kit's artifact-gc role) and print the result per artifact. Artifacts whose
    /// `artifactGC.strategy` is `Never` are kept.
    #[arg(long)]
    pub artifact_gc: bool,
    /// Value of the io.argoexec-rs.node label on the run's containers (default: pid-<pid>).
    #[arg(long, env = "ARGOEXEC_NODE_LABEL", hide = true)]
    pub node_label: Option<String>,
}

/// Run; returns the exit status.
pub fn run(args: Args) -> i32 {
    let rt = match super::runtime() {
        Ok(rt) => rt,
        Err(e) => return usage_error(&args, &e),
    };
    match rt.block_on(execute(&args)) {
        Ok((outcome, repo)) => {
            // The default repository directory goes when the run stored nothing in it.
            let pruned = args.artifacts.is_none() && mounts::prune_empty(&repo);
            print_outcome(&args, &outcome, &repo, pruned);
            outcome.phase.exit_status()
        }
        Err(e) => usage_error(&args, &e),
    }
}

/// The run, phase by phase: plan, repository, node, pod, wait for the end, read back.
async fn execute(args: &Args) -> anyhow::Result<(Outcome, PathBuf)> {
    let mut plan = super::plan::plan(&super::plan::PlanInput {
        workflow: &args.workflow,
        config: args.config.as_ref(),
        executor: args
            .executor
            .or(Some(ExecutorChoice::Fixed(ExecutorKind::Emissary))),
        template: None,
        parameters: &args.parameters,
        random_name: true,
        argo_version: args.argo_version,
    })?;
    if args.runtime == crate::commands::RuntimeArg::Containerd && plan.executor == ExecutorKind::Docker {
        anyhow::bail!(
            "the docker executor cannot run on a containerd node: its wait container drives the node's Docker Engine through /var/run/docker.sock, and a containerd node has none (Argo removed the executor in v3.4). Use --executor emissary, or --runtime docker"
        );
    }
    let (repo, secrets) = prepare_repository(args, &mut plan)?;
    let mains = plan.template.main_container_names();
    let server = start_node(args).await?;
    if agent::is_agent_template(&plan.template) {
        let outcome = agent::run(server, &plan, args).await?;
        return Ok((outcome, repo));
    }
    // As on a cluster, the config map's kubeletPort matches the node's kubelet.
    plan.config.kubelet_port = server.kubelet_port();
    let kubelet_ca = if plan.executor == ExecutorKind::Kubelet
        && args.kubelet_cert == KubeletCert::SelfSigned
        && plan.config.kubelet_ca_file.is_none()
    {
        plan.config.kubelet_ca_file = Some(format!("{}/ca.crt", mounts::KUBELET_CA_MOUNT));
        Some(mounts::write_kubelet_ca(&server, &plan.pod_name)?)
    } else {
        None
    };
    let built = plan.build(&args.executor_image, &args.executor_loglevel)?;
    let mut pod = built.pod;
    mounts::attach_repository(&mut pod, &repo);
    mounts::give_key_dir_to_wait(
        node_config(args),
        &pod,
        &repo.join(&plan.wf.meta.name).join(&plan.pod_name),
    )
    .await?;
    if let Some(dir) = &kubelet_ca {
        mounts::attach_host_dir(
            &mut pod,
            mounts::KUBELET_CA_VOLUME,
            dir,
            mounts::KUBELET_CA_MOUNT,
            &["wait"],
        );
    }
    // Removed when this function returns, however it returns.
    let _ca_guard = kubelet_ca.as_ref().map(|d| mounts::RemoveDir(d.clone()));
    let ns = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
    create_prerequisites(&server, &ns, &secrets, built.config_map.as_ref())?;
    let sa = pod.spec.as_ref().and_then(|s| s.service_account_name.clone());
    objects::BeforePod {
        create: &args.create,
        namespace: &ns,
        service_account: sa.as_deref().unwrap_or("default"),
        template: &plan.template,
        rbac_given: !args.rbac.is_empty(),
    }
    .run(&server)
    .await?;
    if let Some(p) = &args.kubeconfig_out {
        server.write_kubeconfig(p)?;
    }
    let pod_run = session::Session::start(server, &args.rbac, pod, plan.executor, plan.argo_version).await?;
    let progress = (args.output == Output::Text)
        .then(|| tokio::spawn(progress::follow(plan.pod_name.clone(), pod_run.status())));
    let interrupted = follow_to_the_end(&pod_run).await;
    let status = pod_run.finished().await;
    if let Some(p) = progress {
        let _ = p.await;
    }
    let node_id = pod_run.node_id().to_string();
    let (mut outcome, server) = read_back(args, &plan, pod_run, &status, &mains, interrupted).await?;
    if let Some(server) = server {
        let input = gc::GcInput {
            plan: &plan,
            node_id: &node_id,
            artifacts: &outcome.outputs.artifacts,
            executor_image: &args.executor_image,
            log_level: &args.executor_loglevel,
            repo: &repo,
        };
        let collected = gc::collect(server, &input, args.keep)
            .await
            .context("artifact GC (--artifact-gc)")?;
        outcome.artifact_gc = Some(collected);
    }
    Ok((outcome, repo))
}

/// The run's artifact repository and the Secrets the pod will name. Precedence of the
/// archive location: the template's own, then `--artifacts`, then the config map's
/// `artifactRepository`, then the local repository directory.
fn prepare_repository(args: &Args, plan: &mut super::plan::Plan) -> anyhow::Result<(PathBuf, Secrets)> {
    let repository = repository::Repository::parse(args.artifacts.as_deref())?;
    let local_dir = match &repository {
        repository::Repository::Local(d) => d.as_deref(),
        repository::Repository::S3 { .. } => None,
    };
    let repo = artifacts_dir(local_dir, &plan.pod_name)?;
    let mut secrets = Secrets::new();
    let (wf_name, pod_name) = (plan.wf.meta.name.clone(), plan.pod_name.clone());
    let arch = plan
        .template
        .archive_location
        .get_or_insert_with(ArchiveLocation::default);
    if let repository::Repository::S3 { bucket, prefix } = &repository
        && !arch.location.has_location()
    {
        let opts = repository::S3Options {
            endpoint: args.s3_endpoint.clone(),
            region: args.s3_region.clone(),
            insecure: args.s3_insecure,
        };
        let (loc, s) = repository::s3_archive(bucket, prefix, &opts, &wf_name, &pod_name)?;
        arch.location = loc;
        secrets = s;
    }
    if let (Some(repo_cfg), None) = (&plan.config.artifact_repository, &args.artifacts)
        && !arch.location.has_location()
    {
        let from =
            argoexec_podbuilder::repository::archive_location(repo_cfg, &wf_name, "default", &pod_name)
                .map_err(|m| anyhow::anyhow!("artifactRepository: {m}"))?;
        arch.archive_logs = arch.archive_logs.or(from.archive_logs);
        arch.location = from.location;
    }
    if !arch.location.has_location() {
        let key = format!("{REPO_MOUNT}/{wf_name}/{pod_name}");
        arch.location = ArtifactLocation {
            local: Some(LocalArtifact { path: key }),
            ..ArtifactLocation::default()
        };
    }
    for s in &args.secrets {
        let (name, data) = repository::secret_from_dir(s)?;
        secrets.insert(name, data);
    }
    Ok((repo, secrets))
}

/// Secret name → key → value.
type Secrets = std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<u8>>>;

/// The local node's settings of the run.
fn node_config(args: &Args) -> NodeConfig {
    let defaults = NodeConfig::default();
    NodeConfig {
        runtime: args.runtime.choice(&args.containerd_socket),
        docker_socket: args.docker_socket.clone(),
        pause_image: args.executor_image.clone(),
        state_dir: args.node_state_dir.clone().unwrap_or(defaults.state_dir.clone()),
        node_label: args.node_label.clone().unwrap_or(defaults.node_label.clone()),
        ..defaults
    }
}

/// Start the local node with the run's settings.
async fn start_node(args: &Args) -> anyhow::Result<argoexec_node_server::NodeServer> {
    let mut server = argoexec_node_server::ServerConfig {
        node: node_config(args),
        kubelet_cert: args.kubelet_cert,
        ..Default::default()
    };
    if let Some(r) = args.node_token_rotation {
        server.token_rotation = Duration::from_secs(r.max(1));
    }
    if let Some(t) = args.node_token_ttl {
        server.token_ttl = Duration::from_secs(t.max(1));
    }
    if let Some(f) = &args.faults {
        server.faults = f.clone();
    }
    Ok(argoexec_node_server::NodeServer::start(server).await?)
}

/// The objects the pod needs before it is created, as a controller (and `kubectl create
/// secret`) makes them: the Secrets it names (`--secret`, the S3 repository's credentials)
/// and the `<pod>` ConfigMap of what was too large for it. They live in the node's API
/// store, which goes when the run ends, like the pod.
fn create_prerequisites(
    server: &argoexec_node_server::NodeServer,
    ns: &str,
    secrets: &Secrets,
    config_map: Option<&k8s_openapi::api::core::v1::ConfigMap>,
) -> anyhow::Result<()> {
    for (name, data) in secrets {
        server
            .create_secret(ns, secret_object(name, data))
            .map_err(|e| anyhow::anyhow!("the node's API refused Secret {name}: {}", e.message))?;
    }
    if let Some(cm) = config_map {
        server
            .create_config_map(ns, serde_json::to_value(cm)?)
            .map_err(|e| anyhow::anyhow!("the node's API refused the pod's ConfigMap: {}", e.message))?;
    }
    Ok(())
}

/// Wait for the pod to end; returns whether the user interrupted the run. Like the
/// controller, a step is over once wait has reported: sidecars the executor could not stop
/// (a PID 1 without a SIGTERM handler cannot be signalled from inside its container) are
/// stopped by deleting the pod after `SIDECAR_GRACE`.
async fn follow_to_the_end(pod_run: &session::Session) -> bool {
    let after_wait = async {
        tokio::select! {
            _ = pod_run.finished() => return,
            () = pod_run.wait_exited() => {}
        }
        tokio::select! {
            _ = pod_run.finished() => {}
            () = tokio::time::sleep(SIDECAR_GRACE) => {
                tracing::warn!(
                    grace = ?SIDECAR_GRACE,
                    "containers still running after the wait container finished; deleting the pod"
                );
                pod_run.stop(Duration::ZERO);
            }
        }
    };
    let interrupted = tokio::select! {
        _ = after_wait => false,
        _ = interrupt() => true,
    };
    if interrupted {
        eprintln!("argoexec run: interrupted; stopping the pod (SIGTERM, then SIGKILL after 5 s)");
        pod_run.stop(Duration::from_secs(5));
        tokio::select! {
            _ = pod_run.finished() => {}
            _ = interrupt() => pod_run.stop(Duration::ZERO),
        }
    }
    interrupted
}

/// Read the outputs back, clean up (or keep) the pod, and assess the node as the controller
/// would. With `--artifact-gc` the node is handed back instead (for the GC pod) unless the
/// run was interrupted or the pod never started.
async fn read_back(
    args: &Args,
    plan: &super::plan::Plan,
    pod_run: session::Session,
    status: &k8s_openapi::api::core::v1::PodStatus,
    mains: &[String],
    interrupted: bool,
) -> anyhow::Result<(Outcome, Option<argoexec_node_server::NodeServer>)> {
    let aux = pod_run.aux();
    if let Some(dir) = &args.logs {
        pod_run
            .save_logs(dir)
            .await
            .with_context(|| format!("save the containers' logs to {}", dir.display()))?;
    }
    let mut report = pod_run.report();
    // As the controller does: artifacts reported key-only take their location from the
    // template's archive location again.
    let archive = plan.template.archive_location.as_ref().map(|a| &a.location);
    for a in &mut report.outputs.artifacts {
        if let Ok(full) = a.location.relocate(archive) {
            a.location = full;
        }
    }
    let requests = pod_run.requests();
    let faults = args.faults.as_ref().map(|_| pod_run.faults());
    let deleted = pod_run.deleted_by_others();
    let seen = pod_run.terminations_seen();
    tracing::info!(via = report.via, labels = ?report.completed_labels, "outputs read back from the node's API");
    if args.keep {
        let ids = pod_run.container_ids().await;
        eprintln!("argoexec run: --keep: containers kept: {}", ids.join(" "));
    }
    let start_failure = session::Session::start_failure(status);
    let server = if args.artifact_gc && !interrupted && start_failure.is_none() {
        pod_run.into_server()
    } else if args.keep {
        pod_run.keep();
        None
    } else {
        pod_run.cleanup().await.context("cleaning up the pod")?;
        None
    };
    if let Some(m) = start_failure {
        return Err(session::start_error(m));
    }
    let reported = (report.via != "none").then_some((&report.outputs, report.message.as_deref()));
    let mut outcome = outcome::assess(status, mains, aux, reported);
    outcome.report_via = report.via;
    outcome.completed_labels = report.completed_labels;
    outcome.task_result = report.task_result;
    outcome.requests = requests;
    outcome.faults = faults;
    outcome.terminated_seen = seen;
    if interrupted {
        outcome.phase = Phase::Error;
        outcome.message = Some("interrupted".into());
    } else if deleted {
        // As Argo's controller says of a pod deleted before it completed.
        outcome.phase = Phase::Error;
        outcome.message = Some("pod deleted".into());
    }
    Ok((outcome, server))
}

/// A `v1` Secret named `name` holding `data` (base64, as the API stores it).
fn secret_object(name: &str, data: &std::collections::BTreeMap<String, Vec<u8>>) -> serde_json::Value {
    use base64::Engine;
    let data: serde_json::Map<String, serde_json::Value> = data
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                base64::engine::general_purpose::STANDARD.encode(v).into(),
            )
        })
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque", "data": data})
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupt() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

fn artifacts_dir(given: Option<&Path>, pod: &str) -> anyhow::Result<PathBuf> {
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None => std::env::temp_dir().join(format!("argoexec-artifacts-{pod}")),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    dir.canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))
}

fn usage_error(args: &Args, e: &anyhow::Error) -> i32 {
    eprintln!("argoexec run: {e:#}");
    if args.output == Output::Json {
        let o = Outcome {
            phase: Phase::Error,
            message: Some(format!("{e:#}")),
            exit_code: None,
            outputs: Outputs::default(),
            report_via: "none",
            completed_labels: Vec::new(),
            task_result: None,
            containers: Vec::new(),
            requests: Vec::new(),
            faults: None,
            terminated_seen: Default::default(),
            artifact_gc: None,
        };
        println!("{}", outcome::to_json(&o, REPO_MOUNT, Path::new("/")));
    }
    2
}

fn print_outcome(args: &Args, o: &Outcome, repo: &Path, pruned: bool) {
    if args.output == Output::Json {
        println!("{}", outcome::to_json(o, REPO_MOUNT, repo));
        return;
    }
    println!("phase:      {}", o.phase.as_str());
    if let Some(m) = &o.message {
        println!("message:    {m}");
    }
    if let Some(c) = o.exit_code {
        println!("exit code:  {c}");
    }
    if let Some(r) = &o.outputs.result {
        println!("result:     {}", r.replace('\n', "\n            "));
    }
    if !o.outputs.parameters.is_empty() {
        println!("parameters:");
        for p in &o.outputs.parameters {
            println!("  {:<20} {}", p.name, p.value.as_deref().unwrap_or(""));
        }
    }
    if !o.outputs.artifacts.is_empty() {
        println!("artifacts:");
        for a in &o.outputs.artifacts {
            let path = outcome::host_path(a, REPO_MOUNT, repo)
                .or_else(|| {
                    let s3 = a.location.s3.as_ref()?;
                    Some(format!("s3://{}/{}", s3.bucket.as_deref().unwrap_or(""), s3.key))
                })
                .unwrap_or_else(|| "(not in the local repository)".into());
            println!("  {:<20} {path}", a.name);
        }
    }
    if pruned {
        println!("repository: {} (nothing stored; removed)", repo.display());
    } else {
        println!("repository: {}", repo.display());
    }
    if let Some(gc) = &o.artifact_gc {
        print_gc(gc);
    }
}

/// The `--artifact-gc` part of the text output.
fn print_gc(gc: &gc::GcOutcome) {
    if gc.pod.is_empty() {
        println!("artifact GC: nothing to delete");
    } else {
        println!("artifact GC: pod {} {}", gc.pod, gc.phase);
    }
    for r in &gc.results {
        match &r.error {
            None if r.success => println!("  {:<20} deleted", r.name),
            e => println!(
                "  {:<20} not deleted: {}",
                r.name,
                e.as_deref().unwrap_or("unknown error")
            ),
        }
    }
    for name in &gc.kept {
        println!("  {name:<20} kept (artifactGC.strategy: Never)");
    }
    if gc.failures() > 0 {
        eprintln!(
            "argoexec run: artifact GC: {} of {} artifacts not deleted",
            gc.failures(),
            gc.results.len()
        );
    }
}
