//! The emissary wrapper (`argoexec emissary -- CMD ARGS…`), PID 1 of every user container.
//!
//! Entry point: [`run`]. Everything is blocking and single threaded: one `poll(2)` loop
//! ([`reactor`]) multiplexes a signalfd, an inotify descriptor and the child's output pipes,
//! so the wrapper needs no async runtime and stays at a couple of MiB of memory.
//!
//! The file protocol under `/var/run/argo/ctr/<name>/` is Argo's (argo-executors.md §3.5),
//! with v3.4+ semantics:
//! * the directory is created with mode 0777 under umask 0 (the child inherits the umask);
//! * `exitcode` is written atomically on every exit path once `ARGO_CONTAINER_NAME` is
//!   known — the child's code, 128 + N for a signal death, 64 for a wrapper failure — and
//!   always after `main`'s base-layer outputs are staged ([`stage`]); the process exits
//!   with the same code;
//! * beyond Argo: an `alive` lock held for the life of the process, so the wait side learns
//!   of a wrapper killed before it could write `exitcode` ([`protocol::hold_alive`]);
//! * a wrapper failure's message goes to stderr and is appended to the termination log;
//! * a wrapped sidecar terminates its command once every main container has exited
//!   ([`sidecar`]); a stdin that is a terminal gives the command a pty ([`pty`]);
//!   `ARGO_CONTAINER_ARGS_FILE` adds arguments from a file ([`args`]).
//!
//! Exit codes, as Argo v4.1 has them: 64 for any failure of the wrapper itself; otherwise
//! the child's exit status, or 128 + N when a signal N killed it (143 for SIGTERM, 137 for
//! SIGKILL), both in `exitcode` and as the wrapper's own status. Argo reaps the child itself
//! and turns a signal death into 128 + N (`osspecific.Wait`); the fixed 137 in its `main.go`
//! is only for an exit error without a code, which that path never produces, so 128 + N is
//! what Argo's pods show, and what its controller expects of sidecars (137 and 143 are a
//! sidecar's normal end there).
//!
//! Modules, bottom-up: [`watch`] (inotify or polling), [`signals`] (signalfd, forwarding),
//! [`tee`] (output fan-out), [`reactor`] (the poll loop over both), [`control`]
//! (signal/pause/dependency files), [`sidecar`], [`spawn`] (PATH lookup, process group, OOM
//! preference, reaping), [`pty`], [`args`], [`stage`] (outputs), [`error`]. The phases of a
//! run are in `supervise.rs`.
//!
//! Beside the wrapper, the other small tools a user container or the local node's pause
//! container runs from the per-pod copy: [`kill`] and [`pause`].

pub mod args;
pub mod control;
pub mod error;
pub mod kill;
pub mod link;
pub mod pause;
pub mod pty;
pub mod reactor;
pub mod ready;
pub mod sidecar;
pub mod signals;
pub mod spawn;
pub mod stage;
mod supervise;
mod sys;
pub mod tee;
pub mod watch;

pub use error::SupervisorError;

use argoexec_core::ready::PodLayout;
use argoexec_core::{PodPaths, Template, exit, protocol};
use error::Stop;
use reactor::Reactor;
use signals::Signals;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::panic::AssertUnwindSafe;
use watch::Watcher;

/// The liveness lock ([`protocol::hold_alive`]), open for the life of the process.
static ALIVE: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();

/// What the wrapper needs from its caller.
#[derive(Debug, Clone)]
pub struct SupervisorOptions {
    /// The in-pod path layout.
    pub paths: argoexec_core::PodPaths,
    /// The command and its arguments (everything after `--`).
    pub command: Vec<OsString>,
    /// What the wrapped command is.
    pub role: Role,
}

/// What the wrapper runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// A user container's command (`emissary`).
    #[default]
    Wrapper,
    /// An Argo v4.0+ artifact plugin (`artifact-plugin-sidecar`, Argo's container
    /// `artifact-plugin-<name>`): no template and no readiness wait; a SIGTERM sent to the
    /// wrapper is dropped (the plugin must keep serving wait or the supervisor, which stop it
    /// through its signal file, `15` then `9`); the plugin's exit code goes to `exitcode`
    /// and the wrapper itself exits 0, as Argo's does.
    ArtifactPluginSidecar,
}

/// Run the wrapper to completion and return the process exit code.
///
/// Must be called before the process starts any other thread: signals are blocked in the
/// calling thread only.
pub fn run(opts: SupervisorOptions) -> i32 {
    let SupervisorOptions { paths, command, role } = opts;
    let name = match std::env::var("ARGO_CONTAINER_NAME") {
        Ok(n) if !n.is_empty() => n,
        _ => return report_failure(&paths, &SupervisorError::MissingContainerName),
    };
    // The name becomes `/var/run/argo/ctr/<name>/`: refuse `../x`, `a/b`, `.` before that
    // (no exitcode file is written for such a name either).
    if let Err(e) = argoexec_core::names::check_container_name(&name, "ARGO_CONTAINER_NAME") {
        return report_failure(&paths, &e.into());
    }
    // In the image's build a panic aborts and never reaches the catch below: the panic hook
    // reports it the same way, `exitcode` included (argoexec_core::panic).
    let (hook_paths, hook_name) = (paths.clone(), name.clone());
    argoexec_core::panic::set_report(Box::new(move |line| {
        let code = report_failure(&hook_paths, &SupervisorError::Internal(line.to_string()));
        write_exitcode(&hook_paths, &hook_name, code);
        code
    }));
    nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    // Block signals before the directory announces "started": from then on a SIGTERM is an
    // event to handle (exit code file included), not the default instant death.
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let signals = Signals::block_all()?;
        prepare_and_execute(&paths, &name, &command, signals, role)
    }));
    let ran = matches!(outcome, Ok(Ok(_)) | Ok(Err(Stop::Signalled(_))));
    let code = match outcome {
        Ok(Ok(code)) => code,
        Ok(Err(Stop::Signalled(n))) => exit::signalled(n),
        Ok(Err(Stop::Failed(e))) => report_failure(&paths, &e),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            report_failure(&paths, &SupervisorError::Internal(msg))
        }
    };
    write_exitcode(&paths, &name, code);
    match role {
        Role::ArtifactPluginSidecar if ran => {
            tracing::info!(code, "artifact plugin sidecar command exited");
            0
        }
        _ => code,
    }
}

/// Write `code` to the container's `exitcode` file (atomically, mode 0666).
fn write_exitcode(paths: &PodPaths, name: &str, code: i32) {
    let file = paths.exitcode_file(name);
    if let Err(e) = protocol::write_atomic(&file, code.to_string().as_bytes(), 0o666) {
        tracing::error!(path = %file.display(), error = %e, "failed to write the exit code");
    }
}

/// Create the container directory, load the template, and run the phases.
fn prepare_and_execute(
    paths: &PodPaths,
    name: &str,
    command: &[OsString],
    signals: Signals,
    role: Role,
) -> Result<i32, Stop> {
    let dir = paths.ctr_dir(name);
    protocol::create_shared_dir(&dir).map_err(|source| SupervisorError::CtrDir {
        path: dir.clone(),
        source,
    })?;
    // Held until the process ends: its release tells the wait container that this wrapper is
    // gone, even when it dies before writing `exitcode` (SIGKILL, the OOM killer).
    match protocol::hold_alive(&dir) {
        Ok(f) => {
            let _ = ALIVE.set(f);
        }
        Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot create the liveness lock"),
    }
    let mut command = command.to_vec();
    let args_file = std::env::var_os(args::ARGS_FILE_ENV).map(std::path::PathBuf::from);
    args::apply(paths, args_file.as_deref(), &mut command)?;
    let mut reactor = Reactor::new(signals, Watcher::new(&dir, supervise::watch_mode()));
    if role == Role::ArtifactPluginSidecar {
        // A plugin has no template of its own to follow, and serves the supervisor that
        // makes the pod ready: it neither waits nor links.
        let none = Template::default();
        return supervise::execute(paths, name, &none, &command, reactor, PodLayout::Legacy, role);
    }
    let layout = PodLayout::from_env(|k| std::env::var(k).ok());
    if layout == PodLayout::Initless {
        ready::wait_ready(&mut reactor, paths)?;
    }
    let (template, source) = argoexec_core::env::load_template(paths, |k| std::env::var(k).ok(), None)
        .map_err(SupervisorError::Template)?;
    tracing::debug!(?source, container = name, "loaded the template");
    argoexec_core::names::check_template(&template).map_err(SupervisorError::from)?;
    if layout == PodLayout::Initless && name == argoexec_core::template::MAIN {
        link::link_inputs(paths, &template).map_err(|e| {
            tracing::error!(error = %e, "failed to stage input artifacts before main container started");
            SupervisorError::from(Box::new(e))
        })?;
    }
    supervise::execute(paths, name, &template, &command, reactor, layout, role)
}

/// Print a wrapper failure, append it to the termination log, and return its exit code (64,
/// or 65 when an init-less pod never became ready).
fn report_failure(paths: &PodPaths, e: &SupervisorError) -> i32 {
    let msg = e.to_string();
    tracing::error!(error = %msg, "the emissary wrapper failed");
    eprintln!("{msg}");
    let log = paths.termination_log();
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o666)
        .open(&log)
    {
        let _ = f.write_all(msg.as_bytes());
    }
    e.exit_code()
}
