//! `argoexec wait`: wait for the main container(s), then capture and report outputs.
//!
//! Order (Argo v3.3+): announce (`reporter.start()`, v3.5+'s "outputs are coming" handshake,
//! which the reporter skips for v3.3 pods) → wait, reporting progress ticks meanwhile
//! ([`crate::progress`]) → script result → output parameters → output artifacts → log archive → report →
//! kill sidecars. Every capture step runs even when an earlier one failed
//! (errors are collected, the first is returned), so one broken artifact does not lose the
//! others. Stopping is local and event-driven:
//! - `ARGO_DEADLINE` arms a timer; when it fires the main containers are killed (TERM → grace
//!   → KILL) and the node message becomes "Step exceeded its deadline";
//! - the `terminate` token (the binary cancels it on SIGTERM) does the same with
//!   "Step terminated".
//!
//! In both cases the outputs are still captured and reported before the flow returns; after
//! a SIGTERM the capture is bounded so the final report (`report-outputs-completed: "true"`)
//! lands before the kubelet's KILL.

use std::time::{Duration, SystemTime};

use argoexec_core::ready::PodLayout;
use argoexec_core::template::{INIT, MAIN, SUPERVISOR, WAIT};
use argoexec_runtime::report::{NodeResult, OutputReporter};
use argoexec_runtime::{ContainerExit, ErrorKind, RuntimeExecutor};
use tokio_util::sync::CancellationToken;

use crate::outputs::{artifacts, logs, params, result};
use crate::{FlowError, StepContext};

/// Message for a step stopped by its deadline (defined in core: the controller side reads it).
pub use argoexec_core::exit::DEADLINE_MESSAGE;
/// Message for a step stopped by SIGTERM.
pub const TERMINATED_MESSAGE: &str = "Step terminated";

/// What the wait flow produced.
#[derive(Debug)]
pub struct WaitOutcome {
    /// The reported result (outputs and node message).
    pub result: NodeResult,
    /// How the main containers ended, when known.
    pub exits: Vec<ContainerExit>,
    /// Every error met, in order; the first is the step's error.
    pub errors: Vec<FlowError>,
}

/// Run the wait flow to the end.
pub async fn run<R: RuntimeExecutor, P: OutputReporter>(
    ctx: &StepContext,
    runtime: &R,
    reporter: &P,
    terminate: CancellationToken,
) -> WaitOutcome {
    post_main(ctx, runtime, reporter, terminate, false).await
}

/// Everything wait does after the pod was prepared (Argo's `PostMain`), shared with the
/// init-less supervisor. When preparing the pod failed (`pre_main_failed`: main never ran its
/// command) only the logs are saved; the script result, the parameters and the artifacts
/// are not looked for.
pub async fn post_main<R: RuntimeExecutor, P: OutputReporter>(
    ctx: &StepContext,
    runtime: &R,
    reporter: &P,
    terminate: CancellationToken,
    pre_main_failed: bool,
) -> WaitOutcome {
    let mains = ctx.template.main_container_names();
    let mut errors = Vec::new();
    // The reporter knows whether the pod's controller wants the announcement (v3.5+). A
    // SIGTERM while it is still retrying skips it: the report upserts anyway.
    tokio::select! {
        r = reporter.start() => if let Err(e) = r {
            errors.push(FlowError::Report(Box::new(e)));
        },
        _ = terminate.cancelled() => tracing::warn!("terminated before outputs were announced"),
    }
    let progress = crate::progress::Monitor::start(ctx);
    // A sidecar container gets SIGTERM only once the app containers have ended (the pod is
    // finishing or being deleted): it does not stop main then, it finishes (below).
    let stop_mains = if ctx.env.native_sidecar {
        CancellationToken::new()
    } else {
        terminate.clone()
    };
    let (exits, stop_message) = {
        let waiting = wait_for_mains(ctx, runtime, &mains, stop_mains, &mut errors);
        let ticking = async {
            match &progress {
                Some(m) => m.report_ticks(reporter, ctx.env.progress_patch_tick).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = waiting => r,
            () = ticking => unreachable!("progress ticks never end"),
        }
    };

    let mut outcome = NodeResult {
        message: stop_message,
        progress: progress.as_ref().and_then(crate::progress::Monitor::latest),
        ..Default::default()
    };
    drop(progress);
    outcome.outputs.exit_code = exits
        .iter()
        .find(|e| e.name == MAIN)
        .or(exits.first())
        .and_then(|e| e.exit_code)
        .map(|c| c.to_string());
    // Terminated (pod deletion, the pod's deadline): the kubelet KILLs wait at the end of
    // its grace period, so the capture gets what is left of it minus a reserve for the
    // report, which must land or the workflow stays Running (Argo #12993).
    let capture = capture_outputs(ctx, runtime, &mut outcome, &mut errors, pre_main_failed);
    let ended = if ctx.env.native_sidecar {
        // SIGTERM comes as soon as main has ended: from then on the grace period counts.
        finish_within_grace(ctx, capture, &terminate).await
    } else if terminate.is_cancelled() {
        let budget = ctx.env.termination_grace / 2;
        let reserve = (budget / 3).min(Duration::from_secs(10));
        tokio::time::timeout(budget.saturating_sub(reserve), capture)
            .await
            .is_ok()
    } else {
        capture.await;
        true
    };
    if !ended {
        tracing::warn!(
            grace = ?ctx.env.termination_grace,
            "output capture cut short to report before the grace period ends"
        );
        errors.push(FlowError::Stopped(
            "outputs not fully captured: wait was terminated and its grace period ran out".into(),
        ));
    }
    if outcome.message.is_none() {
        outcome.message = errors.first().map(ToString::to_string);
    }
    if let Err(e) = reporter.report(&outcome).await {
        errors.push(FlowError::Report(Box::new(e)));
    }
    if let Err(e) = kill_sidecars(ctx, runtime, &mains).await {
        errors.push(e);
    }
    if let Err(e) = kill_artifact_plugins(ctx).await {
        errors.push(e);
    }
    WaitOutcome {
        result: outcome,
        exits,
        errors,
    }
}

/// Run `capture` to its end, or, once `terminate` fires, for what is left of the grace period
/// minus a reserve for the report; whether it ended.
async fn finish_within_grace(
    ctx: &StepContext,
    capture: impl std::future::Future<Output = ()>,
    terminate: &CancellationToken,
) -> bool {
    let mut capture = std::pin::pin!(capture);
    tokio::select! {
        () = &mut capture => return true,
        () = terminate.cancelled() => {}
    }
    let grace = ctx.env.termination_grace;
    let reserve = (grace / 4).min(Duration::from_secs(10));
    tokio::time::timeout(grace.saturating_sub(reserve), capture)
        .await
        .is_ok()
}

/// Capture the script result, output parameters, artifacts and logs into `outcome`, in
/// Argo's order; every step runs even when an earlier one failed.
async fn capture_outputs<R: RuntimeExecutor>(
    ctx: &StepContext,
    runtime: &R,
    outcome: &mut NodeResult,
    errors: &mut Vec<FlowError>,
    pre_main_failed: bool,
) {
    if pre_main_failed {
        let (log_arts, errs) = logs::save(ctx, runtime).await;
        outcome.outputs.artifacts.extend(log_arts);
        errors.extend(errs);
        return;
    }
    match result::capture(ctx, runtime).await {
        Ok(r) => outcome.outputs.result = r,
        Err(e) => errors.push(e),
    }
    let (ps, errs) = params::capture(ctx, runtime).await;
    outcome.outputs.parameters = ps;
    errors.extend(errs);
    let (arts, errs) = artifacts::save(ctx, runtime).await;
    outcome.outputs.artifacts = arts;
    errors.extend(errs);
    let (log_arts, errs) = logs::save(ctx, runtime).await;
    outcome.outputs.artifacts.extend(log_arts);
    errors.extend(errs);
}

/// Wait for the mains, or stop them at the deadline / on terminate.
async fn wait_for_mains<R: RuntimeExecutor>(
    ctx: &StepContext,
    runtime: &R,
    mains: &[String],
    terminate: CancellationToken,
    errors: &mut Vec<FlowError>,
) -> (Vec<ContainerExit>, Option<String>) {
    let deadline = ctx
        .env
        .deadline
        .map(|d| d.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO));
    let cancel = CancellationToken::new();
    let stop = tokio::select! {
        r = runtime.wait(mains, cancel.clone()) => match r {
            Ok(exits) => {
                // One line per step at the moment the wait noticed (the wait-notice bench
                // measures from the container's exit to this line's timestamp).
                tracing::info!(backend = %runtime.kind(), ?exits, "main containers terminated");
                return (exits, None);
            }
            Err(e) => {
                errors.push(e.into());
                return (Vec::new(), None);
            }
        },
        _ = sleep_or_forever(deadline) => DEADLINE_MESSAGE,
        _ = terminate.cancelled() => TERMINATED_MESSAGE,
    };
    cancel.cancel();
    tracing::warn!(message = stop, "stopping the main containers");
    write_termination_log(ctx, stop);
    // When wait itself is being terminated (pod deletion, pod deadline), the kubelet KILLs
    // it after the same grace period it gives main: Argo's wait then dies before saving
    // anything. Give main half the grace, keeping the other half for outputs and logs.
    let grace = if stop == TERMINATED_MESSAGE {
        ctx.env.termination_grace / 2
    } else {
        ctx.env.termination_grace
    };
    if let Err(e) = runtime.kill(mains, grace).await {
        errors.push(FlowError::Kill(e.to_string()));
    }
    // The kill waited for the exits; collect them without blocking forever.
    let done = CancellationToken::new();
    let exits = match tokio::time::timeout(Duration::from_secs(5), runtime.wait(mains, done.clone())).await {
        Ok(Ok(exits)) => exits,
        Ok(Err(e)) if e.kind() == ErrorKind::Cancelled => Vec::new(),
        Ok(Err(e)) => {
            errors.push(e.into());
            Vec::new()
        }
        Err(_) => {
            done.cancel();
            Vec::new()
        }
    };
    (exits, Some(stop.to_string()))
}

async fn sleep_or_forever(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Kill every container the backend can see except wait, init, the mains, and in the
/// init-less layout the supervisor.
async fn kill_sidecars<R: RuntimeExecutor>(
    ctx: &StepContext,
    runtime: &R,
    mains: &[String],
) -> Result<(), FlowError> {
    let sidecars: Vec<String> = runtime
        .list_container_names()
        .await?
        .into_iter()
        .filter(|n| n != WAIT && n != INIT && !mains.contains(n))
        .filter(|n| !(ctx.env.layout == PodLayout::Initless && n == SUPERVISOR))
        .filter(|n| !ctx.env.artifact_plugin_containers.contains(n))
        .collect();
    if sidecars.is_empty() {
        return Ok(());
    }
    tracing::info!(?sidecars, "killing sidecars");
    runtime
        .kill(&sidecars, ctx.env.termination_grace)
        .await
        .map_err(Into::into)
}

/// Argo's `KillArtifactSidecars`, last of all: stop the artifact-plugin sidecars
/// (`ARGO_ARTIFACT_PLUGIN_NAMES`) through the emissary file protocol, whatever the runtime
/// (they run `artifact-plugin-sidecar`, which ignores SIGTERM and obeys only its signal
/// file): `15`, up to the grace period for their exit codes, then `9` and up to 10 s more.
async fn kill_artifact_plugins(ctx: &StepContext) -> Result<(), FlowError> {
    stop_plugin_sidecars(
        &ctx.paths,
        &ctx.env.artifact_plugin_containers,
        ctx.env.termination_grace,
    )
    .await
}

/// Stop the artifact-plugin sidecars `names` (`artifact-plugin-<plugin>`) through their
/// signal files, SIGTERM then SIGKILL after `grace` (Argo's `KillArtifactSidecars`): the
/// sidecars of wait, the supervisor and the artifact-GC pod end only this way.
///
/// # Errors
/// The emissary executor's kill failure.
pub async fn stop_plugin_sidecars(
    paths: &argoexec_core::PodPaths,
    names: &[String],
    grace: std::time::Duration,
) -> Result<(), FlowError> {
    if names.is_empty() {
        return Ok(());
    }
    tracing::info!(plugins = ?names, "stopping the artifact plugin sidecars");
    argoexec_backend_emissary::EmissaryExecutor::new(paths.clone())
        .kill(names, grace)
        .await
        .map_err(Into::into)
}

/// Write a message to the termination log (Kubernetes shows it as the container's
/// `terminated.message`). Failures are logged, never fatal.
pub fn write_termination_log(ctx: &StepContext, message: &str) {
    let path = ctx.paths.termination_log();
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(e) = std::fs::write(&path, message) {
        tracing::debug!(error = %e, path = %path.display(), "cannot write the termination log");
    }
}
