//! `argoexec wait`.
//!
//! SIGTERM (and SIGINT) cancel the wait, not the process: the flow then stops the main
//! containers and still captures and reports outputs before exiting.
//! The local reporter writes to `ARGOEXEC_REPORT_FILE`, or `/var/run/argo/outputs.json`.

use argoexec_core::PodPaths;
use argoexec_report::FileReporter;
use tokio_util::sync::CancellationToken;

/// Where the local reporter writes when `ARGOEXEC_REPORT_FILE` is unset.
const REPORT_ENV: &str = "ARGOEXEC_REPORT_FILE";

/// Arguments of `argoexec wait`.
pub type Args = super::StepArgs;

/// Run wait; returns the exit code.
pub fn run(args: Args) -> i32 {
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
        let report_path = std::env::var_os(REPORT_ENV)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| paths.var_run_argo().join("outputs.json"));
        let reporter = FileReporter::new(report_path);
        rt.block_on(async {
            let out = argoexec_flows::wait::run(&ctx, &runtime, &reporter, terminate).await;
            match out.errors.into_iter().next() {
                None => Ok(0),
                Some(e) => Err(anyhow::Error::new(e)),
            }
        })
    })();
    match r {
        Ok(c) => c,
        Err(e) => super::fail(&paths, &e),
    }
}
