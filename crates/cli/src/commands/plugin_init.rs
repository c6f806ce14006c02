//! `argoexec artifact-plugin-init --plugin-name P -- PLUGIN [ARGS…] SOCKET`: the legacy
//! layout's `init-artifact-<P>` init container (Argo v4.0+). It runs in the plugin's own
//! image, from `/var/run/argo/`: the per-pod copy there hands this command line to the full
//! executor that init installed beside it (`argoexec-full`, only for templates with plugin
//! inputs), which lands here.
//!
//! 1. Create the socket's directory (`/tmp/artifact-plugins/P`, in the container's own
//!    `/tmp`), **then** start the plugin in its own process group (Argo creates the
//!    directory concurrently, a race this avoids); its output is the container's.
//! 2. Forward SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the plugin's group.
//! 3. Load the template's input artifacts that plugin P serves (Argo's
//!    `LoadArtifactsFromPlugin`), one after another, through the plugin's socket.
//! 4. Stop the plugin (SIGTERM to its group, up to [`PLUGIN_STOP`], then SIGKILL) and exit
//!    0, or 64 with the failure in the termination log. Argo leaves the plugin to die with
//!    the container; stopping it lets it clean up (and a plugin that will not start is seen
//!    as a load failure naming its socket, after Argo's 120 s wait).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Duration;

use anyhow::Context;
use argoexec_core::PodPaths;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How long the plugin has to exit after SIGTERM before it is killed.
pub const PLUGIN_STOP: Duration = Duration::from_secs(5);

/// Arguments of `argoexec artifact-plugin-init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin whose input artifacts this container loads.
    #[arg(long)]
    pub plugin_name: String,
    /// The plugin's command, its socket path last.
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

/// Run it; returns the exit code.
pub fn run(args: Args) -> i32 {
    let paths = PodPaths::from_env();
    nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    let r = (|| -> anyhow::Result<()> {
        let ctx = super::bootstrap(&paths, None)?;
        let socket_dir = paths.rooted(format!("/tmp/artifact-plugins/{}", args.plugin_name));
        std::fs::create_dir_all(&socket_dir)
            .with_context(|| format!("cannot create {}", socket_dir.display()))?;
        let mut plugin = start(&args.command)?;
        let rt = super::runtime()?;
        let loaded = rt.block_on(async {
            let forward = tokio::spawn(forward_signals(plugin.id()));
            let r = argoexec_flows::init::load_inputs(
                &ctx,
                argoexec_flows::init::Loads::Plugin(&args.plugin_name),
                false,
            )
            .await;
            forward.abort();
            r
        });
        stop(&mut plugin);
        loaded?;
        Ok(())
    })();
    match r {
        Ok(()) => 0,
        Err(e) => super::fail(&paths, &e),
    }
}

/// Start the plugin in its own process group.
fn start(command: &[OsString]) -> anyhow::Result<Child> {
    let (program, rest) = command.split_first().context("no plugin command")?;
    let child = Command::new(program)
        .args(rest)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start the plugin {}", program.to_string_lossy()))?;
    tracing::info!(pid = child.id(), plugin = %program.to_string_lossy(), "started the artifact plugin");
    Ok(child)
}

/// Forward the signals a container receives to the plugin's process group, until aborted.
async fn forward_signals(pgid: u32) {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        (SignalKind::terminate(), Signal::SIGTERM),
        (SignalKind::interrupt(), Signal::SIGINT),
        (SignalKind::hangup(), Signal::SIGHUP),
        (SignalKind::quit(), Signal::SIGQUIT),
        (SignalKind::user_defined1(), Signal::SIGUSR1),
        (SignalKind::user_defined2(), Signal::SIGUSR2),
    ];
    let mut streams = Vec::new();
    for (kind, sig) in kinds {
        match signal(kind) {
            Ok(s) => streams.push((s, sig)),
            Err(e) => tracing::warn!(signal = %sig, error = %e, "cannot forward this signal to the plugin"),
        }
    }
    let pgid = Pid::from_raw(i32::try_from(pgid).unwrap_or(i32::MAX));
    loop {
        let next = futures::future::select_all(
            streams
                .iter_mut()
                .map(|(s, sig)| Box::pin(async move { s.recv().await.map(|()| *sig) })),
        );
        let (got, _, _) = next.await;
        let Some(sig) = got else { return };
        tracing::info!(signal = %sig, "forwarding to the artifact plugin");
        let _ = killpg(pgid, sig);
    }
}

/// SIGTERM the plugin's group, then SIGKILL after [`PLUGIN_STOP`]; reap it.
fn stop(plugin: &mut Child) {
    let pgid = Pid::from_raw(i32::try_from(plugin.id()).unwrap_or(i32::MAX));
    if matches!(plugin.try_wait(), Ok(Some(_))) {
        return;
    }
    let _ = killpg(pgid, Signal::SIGTERM);
    let until = std::time::Instant::now() + PLUGIN_STOP;
    while std::time::Instant::now() < until {
        if let Ok(Some(status)) = plugin.try_wait() {
            tracing::info!(%status, "the artifact plugin stopped");
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    tracing::warn!(after = ?PLUGIN_STOP, "the artifact plugin ignored SIGTERM; killing it");
    let _ = killpg(pgid, Signal::SIGKILL);
    let _ = plugin.wait();
}
