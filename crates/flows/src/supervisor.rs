//! `argoexec supervisor`: the init-less pod layout's one auxiliary container (Argo v4.1,
//! `initlessPod.enabled`), doing init's work and then wait's.
//!
//! 1. Write `RUNNING` to the readiness marker (`/var/run/argo/status`, through `status.tmp`
//!    and a rename: [`argoexec_core::ready`]) and rewrite it every 5 s while preparing.
//! 2. Prepare the pod as init does, minus the binary copy (the user containers run the
//!    executor from the `/argo-bin` image volume): the template to `/var/run/argo/template`
//!    (0444), a script to `/argo/staging/script` (0755), then the input artifacts, four at a
//!    time unless their paths nest, into `/argo/inputs/artifacts/<name>` (or through
//!    `/mainctrfs` for a path on a user volume). main's wrapper links them into place once
//!    the pod is ready. Argo loads the non-plugin inputs one after another (only plugin loads
//!    run beside them); loading independent ones together is ours, and the same files result.
//! 3. Stop the heartbeat, then write `READY`, or `FAILED\n<message>` with the first error in
//!    Argo's words (`failed to write template: …`, `failed to stage files: …`,
//!    `failed to load non-plugin input artifacts: …`). A SIGTERM while preparing is such an
//!    error too: `terminated while preparing the pod` (Argo: `context canceled`).
//! 4. Run wait's post-main flow ([`crate::wait::post_main`]): after a failed preparation only
//!    main's logs are saved, since the command never ran.
//!
//! The caller exits 64 with the first error in the termination log (the preparation's when
//! it failed), 0 otherwise, as Argo's supervisor does; the controller ranks the supervisor's
//! status first when main ended with 65.

use argoexec_core::protocol::write_atomic;
use argoexec_core::ready::{HEARTBEAT, Marker};
use argoexec_runtime::RuntimeExecutor;
use argoexec_runtime::report::OutputReporter;
use tokio_util::sync::CancellationToken;

use crate::wait::{WaitOutcome, post_main};
use crate::{FlowError, StepContext};

/// Run the supervisor to the end; the first error of the outcome is the step's error.
pub async fn run<R: RuntimeExecutor, P: OutputReporter>(
    ctx: &StepContext,
    runtime: &R,
    reporter: &P,
    terminate: CancellationToken,
) -> WaitOutcome {
    let prepared = prepare(ctx, &terminate).await;
    if let Err(e) = &prepared {
        tracing::error!(error = %e, "preparing the pod failed; main will not run its command");
    }
    let mut outcome = post_main(ctx, runtime, reporter, terminate, prepared.is_err()).await;
    if let Err(e) = prepared {
        outcome.errors.insert(0, e);
    }
    outcome
}

/// Steps 1–3: the marker, the heartbeat, the preparation and the terminal marker.
async fn prepare(ctx: &StepContext, terminate: &CancellationToken) -> Result<(), FlowError> {
    write_marker(ctx, &Marker::Running)
        .map_err(|e| FlowError::io("write the initial status marker", ctx.paths.status_marker(), e))?;
    let heartbeat = tokio::spawn(heartbeat(ctx.clone()));
    let result = tokio::select! {
        r = prepare_files(ctx) => r,
        () = terminate.cancelled() => Err(FlowError::Stopped(
            "terminated while preparing the pod".into(),
        )),
    };
    // Stopped and awaited, so no RUNNING write can land after the terminal marker.
    heartbeat.abort();
    let _ = heartbeat.await;
    let terminal = match &result {
        Ok(()) => Marker::Ready,
        Err(e) => Marker::Failed(e.to_string()),
    };
    let written = write_marker(ctx, &terminal);
    match (result, written) {
        (Err(e), Err(w)) => {
            tracing::warn!(error = %w, "cannot write the FAILED status marker");
            Err(e)
        }
        (Err(e), Ok(())) => Err(e),
        (Ok(()), Err(w)) => {
            let e = FlowError::io("write the READY status marker", ctx.paths.status_marker(), w);
            let _ = write_marker(ctx, &Marker::Failed(e.to_string()));
            Err(e)
        }
        (Ok(()), Ok(())) => {
            tracing::info!("the pod is ready");
            Ok(())
        }
    }
}

/// The template, the script and the inputs, as init prepares them.
async fn prepare_files(ctx: &StepContext) -> Result<(), FlowError> {
    let step = |step: &'static str| {
        move |e: FlowError| FlowError::Step {
            step,
            source: Box::new(e),
        }
    };
    let tpl = crate::init::write_template(ctx).map_err(step("failed to write template"))?;
    tracing::info!(template = %tpl.display(), source = ?ctx.template_source, "wrote the template");
    crate::init::stage_script(ctx)
        .await
        .map_err(step("failed to stage files"))?;
    crate::init::load_inputs(ctx, crate::init::Loads::All, true)
        .await
        .map_err(step("failed to load non-plugin input artifacts"))
}

/// Rewrite `RUNNING` every [`HEARTBEAT`] until aborted; a failed write is only logged.
async fn heartbeat(ctx: StepContext) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = write_marker(&ctx, &Marker::Running) {
            tracing::warn!(error = %e, "cannot refresh the status marker");
        }
    }
}

/// Write the marker atomically: `status.tmp`, then a rename onto `status` (mode 0644).
fn write_marker(ctx: &StepContext, marker: &Marker) -> std::io::Result<()> {
    let path = ctx.paths.status_marker();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = ctx.paths.status_marker_tmp();
    write_atomic(&tmp, marker.render().as_bytes(), 0o644)?;
    std::fs::rename(&tmp, &path)
}
