//! The `argoexec` binary: the in-pod executor (`init`, `wait`, `supervisor`, `resource`, `data`,
//! `artifact`, `agent`, `artifact-plugin-init`), plus the wrapper's subcommands (`emissary`,
//! `artifact-plugin-sidecar`, `kill`) for pods that run it
//! directly. Parse the command line, set up logging, dispatch. `run`, `node` and `render`
//! are the local tools' (`argoexec-local`):
//! this program hands them over ([`commands::local`]) and carries no local-node code.
//!
//! Exit codes: a command's own code (the emissary passes the child's through); **64** for any
//! executor failure, with the message also written to `/dev/termination-log`; a panic too
//! (the image's build aborts on panic; `argoexec_core::panic`).

mod commands;

use clap::{Parser, Subcommand};
use std::ffi::OsString;

/// Argo Workflows pod executor, in Rust.
#[derive(Debug, Parser)]
#[command(
    name = "argoexec",
    version,
    about,
    args_override_self = true,
    after_help = "Local tools (argoexec-local, beside this program on a workstation): run, node, render."
)]
struct Cli {
    /// Log level: error, warn, info, debug, trace, or a tracing filter directive.
    #[arg(long, global = true, default_value = "info")]
    loglevel: String,
    /// Log format: text or json.
    #[arg(long, global = true, default_value = "text")]
    log_format: argoexec_logging::Format,
    /// Ignored; accepted for compatibility with Argo's controller (glog verbosity).
    #[arg(long, global = true, default_value_t = 0, hide = true)]
    gloglevel: i32,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prepare the pod: install the emissary, stage the script, load input artifacts.
    Init(commands::init::Args),
    /// Wait for the main container(s), then capture and report outputs.
    Wait(commands::wait::Args),
    /// The init-less pod layout's auxiliary container (Argo v4.1 `initlessPod`): prepare the
    /// pod as init does, mark it ready, then do wait's work.
    Supervisor(commands::wait::Args),
    /// Run a command as the emissary wrapper (PID 1 of the user container).
    Emissary(commands::emissary::Args),
    /// Send a signal to a process: `argoexec kill SIGNUM PID`.
    Kill(commands::kill::Args),
    /// An artifact plugin's sidecar (Argo v4.0+): run the plugin as the emissary does, but
    /// stopped only through its signal file (SIGTERM is ignored).
    ArtifactPluginSidecar(commands::emissary::Args),
    /// An artifact plugin's init container (Argo v4.0+ legacy layout): start the plugin, load
    /// the input artifacts it serves, stop it.
    ArtifactPluginInit(commands::plugin_init::Args),
    /// Resource templates: get, create, apply, delete, replace or patch the manifest, wait
    /// for its conditions, report its output parameters.
    Resource(commands::resource::Args),
    /// Data templates: list the source, run the expression steps, report `outputs.result`
    /// (the controller's JSON argument is ignored).
    Data(commands::data::Args),
    /// Move an artifact by hand (put, get, ls or rm at an Argo artifact location), or
    /// `artifact delete`: the artifact-GC pod's main.
    Artifact(commands::artifact::Args),
    /// The agent pod of HTTP and executor-plugin templates: `agent init` writes the
    /// plugins' tokens, `agent main` runs the workflow's task set.
    Agent(commands::agent::Args),
    /// The local node's pause container: hold the pod's namespaces, reap orphans.
    #[command(hide = true)]
    Pause,
    /// Print the version.
    Version,
    /// `run`, `node`, `render`: handed to the local tools.
    #[command(external_subcommand)]
    Local(Vec<OsString>),
}

fn main() {
    // In the image's build (panic = "abort") a panic is reported to the termination log and
    // exits 64, as Argo's executor does; the wrapper's subcommands set their own report
    // (argoexec_core::panic).
    argoexec_core::panic::install(argoexec_core::panic::Policy::of_this_build());
    argoexec_core::panic::set_report(Box::new(|line| {
        commands::report_panic(&argoexec_core::PodPaths::from_env(), line)
    }));
    let cli = Cli::parse();
    let log = || argoexec_logging::init(&cli.loglevel, cli.log_format);
    let code = match cli.command {
        // No set-up first: pause blocks its signals before anything else; the local tools set
        // up their own logging.
        Command::Pause => commands::kill::pause(),
        Command::Local(words) => commands::local::hand_over(words, &cli.loglevel, cli.log_format),
        Command::Init(a) => {
            log();
            starting();
            commands::init::run(a)
        }
        Command::Wait(a) => {
            log();
            starting();
            commands::wait::run(a)
        }
        Command::Supervisor(a) => {
            log();
            starting();
            commands::wait::run_as(a, commands::wait::Role::Supervisor)
        }
        Command::Emissary(a) => {
            log();
            commands::emissary::run(a)
        }
        Command::Kill(a) => commands::kill::run(a),
        Command::ArtifactPluginSidecar(a) => {
            log();
            commands::emissary::run_as(a, argoexec_supervisor::Role::ArtifactPluginSidecar)
        }
        Command::ArtifactPluginInit(a) => {
            log();
            starting();
            commands::plugin_init::run(a)
        }
        Command::Resource(a) => {
            log();
            starting();
            commands::resource::run(a)
        }
        Command::Data(a) => {
            log();
            starting();
            commands::data::run(a)
        }
        Command::Artifact(a) => {
            log();
            if a.action == commands::artifact::Action::Delete {
                starting();
            }
            commands::artifact::run(a)
        }
        Command::Agent(a) => {
            log();
            starting();
            commands::agent::run(&a)
        }
        Command::Version => {
            let executors = if argoexec_backends::LEGACY_EXECUTORS {
                "emissary, docker, kubelet, k8sapi, pns"
            } else {
                "emissary"
            };
            println!(
                "argoexec {} (argoexec-rs; executors: {executors})",
                env!("CARGO_PKG_VERSION")
            );
            0
        }
    };
    std::process::exit(code);
}

/// The line an operator looks for to tell which executor a pod runs.
fn starting() {
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "argoexec-rs executor starting"
    );
}
