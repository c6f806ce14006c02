//! `argoexec wait`, and `argoexec supervisor` (the same process around the init-less flow).
//!
//! SIGTERM (and SIGINT) cancel the wait, not the process: the flow then stops the main
//! containers and still captures and reports outputs before exiting. As a sidecar container
//! (`ARGOEXEC_NATIVE_SIDECAR`) SIGTERM means the app containers have ended: the flow finishes
//! within the grace period, and a flow that finished first waits for it before exiting.
//!
//! Where outputs go: when an API server is configured (`KUBERNETES_SERVICE_HOST` set and the
//! service-account token present, see [`argoexec_report::InClusterConfig::discover`]) only
//! to the API server, as a `WorkflowTaskResult` ([`ApiReporter`]); otherwise to the local
//! file `ARGOEXEC_REPORT_FILE`, or `/var/run/argo/outputs.json`. The choice is logged.

use anyhow::Context;
use argoexec_core::{ExecutorEnv, PodPaths};
use argoexec_report::{AnyReporter, ApiReporter, FileReporter, InClusterConfig};
use tokio_util::sync::CancellationToken;

/// Where the local reporter writes when `ARGOEXEC_REPORT_FILE` is unset.
const REPORT_ENV: &str = "ARGOEXEC_REPORT_FILE";

/// Arguments of `argoexec wait`.
pub type Args = super::StepArgs;

/// Which post-main program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `argoexec wait` (the legacy layout's wait container).
    Wait,
    /// `argoexec supervisor` (the init-less layout: init's preparation, then wait's work;
    /// [`argoexec_flows::supervisor`]).
    Supervisor,
}

/// Run wait; returns the exit code.
pub fn run(args: Args) -> i32 {
    run_as(args, Role::Wait)
}

/// Run wait or the supervisor; returns the exit code.
pub fn run_as(args: Args, role: Role) -> i32 {
    // Before any other start-up work: pns must see a quick main's process appear.
    // An unparsable name is reported by the bootstrap below; here it only means "not pns".
    let executor = std::env::var("ARGO_CONTAINER_RUNTIME_EXECUTOR")
        .ok()
        .and_then(|e| e.parse().ok());
    argoexec_backends::prestart(executor);
    let paths = PodPaths::from_env();
    nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    let r = (|| -> anyhow::Result<i32> {
        // Handlers first, before any other work, so an early SIGTERM is not fatal.
        let rt = super::runtime()?;
        let (mut term, mut int) = {
            use tokio::signal::unix::{SignalKind, signal};
            let _enter = rt.enter();
            (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?)
        };
        let terminate = CancellationToken::new();
        let t2 = terminate.clone();
        rt.spawn(async move {
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            tracing::info!("received a termination signal; stopping main and capturing outputs");
            t2.cancel();
        });
        let ctx = super::bootstrap(&paths, args.pod_annotations.as_deref())?;
        let runtime = rt.block_on(argoexec_backends::select(
            ctx.env.runtime_executor,
            &ctx.env,
            &paths,
        ))?;
        let reporter = {
            let _enter = rt.enter();
            select_reporter(&paths, &ctx.env)?
        };
        let native = ctx.env.native_sidecar;
        let held = terminate.clone();
        rt.block_on(async {
            let out = match role {
                Role::Wait => argoexec_flows::wait::run(&ctx, &runtime, &reporter, terminate).await,
                Role::Supervisor => {
                    argoexec_flows::supervisor::run(&ctx, &runtime, &reporter, terminate).await
                }
            };
            if native && !held.is_cancelled() {
                // A sidecar container that exits while the pod runs is started again: stay
                // until the kubelet's SIGTERM, which comes once the app containers ended.
                tracing::info!("outputs reported; waiting for the pod's end (sidecar container)");
                held.cancelled().await;
            }
            match out.errors.into_iter().next() {
                None => Ok(0),
                Some(e) => Err(anyhow::Error::new(e)),
            }
        })
    })();
    let code = match r {
        Ok(c) => c,
        Err(e) => super::fail(&paths, &e),
    };
    // Peak resident memory of the whole wait process (benchmarks read this line).
    if let Ok(u) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
        tracing::info!(peak_rss_kib = u.max_rss(), code, ?role, "finished");
    }
    code
}

/// The API reporter when an API server is configured, else the local file reporter.
/// Call inside the Tokio runtime (the API client spawns its connection task).
fn select_reporter(paths: &PodPaths, env: &ExecutorEnv) -> anyhow::Result<AnyReporter> {
    let config = InClusterConfig::from_env(paths).context("bad in-cluster API configuration")?;
    if let Some(config) = config {
        let api = ApiReporter::connect(&config, env).context("cannot report through the API server")?;
        tracing::info!(
            server = %config.server,
            service_account_dir = %config.service_account_dir.display(),
            target = %api.target().describe(),
            "reporting outputs through the API server"
        );
        return Ok(AnyReporter::Api(Box::new(api)));
    }
    let path = std::env::var_os(REPORT_ENV)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| paths.var_run_argo().join("outputs.json"));
    tracing::info!(
        path = %path.display(),
        "no API server configured (KUBERNETES_SERVICE_HOST and a service-account token); reporting outputs to a local file"
    );
    Ok(AnyReporter::File(FileReporter::new(path)))
}
