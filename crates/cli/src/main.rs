//! The `argoexec` binary: parse the command line, set up logging, dispatch.
//!
//! Exit codes: a command's own code (the emissary passes the child's through); **64** for any
//! executor failure, with the message also written to `/dev/termination-log`.

mod commands;
mod logging;

use clap::{Parser, Subcommand};

/// Argo Workflows pod executor, in Rust.
#[derive(Debug, Parser)]
#[command(name = "argoexec", version, about, args_override_self = true)]
struct Cli {
    /// Log level: error, warn, info, debug, trace.
    #[arg(long, global = true, default_value = "info")]
    loglevel: String,
    /// Log format.
    #[arg(long, global = true, value_enum, default_value_t = logging::Format::Text)]
    log_format: logging::Format,
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
    /// Run a command as the emissary wrapper (PID 1 of the user container).
    Emissary(commands::emissary::Args),
    /// Send a signal to a process: `argoexec kill SIGNUM PID`.
    Kill(commands::kill::Args),
    /// Print the pod the controller side would build for a workflow's template.
    Render(commands::render::Args),
    /// Run a workflow's entrypoint as a pod on the local node and print its outputs.
    Run(commands::run::Args),
    /// Move an artifact by hand: put, get, ls or rm at an Argo artifact location.
    Artifact(commands::artifact::Args),
    /// Run the local node standalone: pods on Docker behind kubelet and API endpoints.
    Node(commands::node::Args),
    /// The local node's pause container: hold the pod's namespaces, reap orphans.
    #[command(hide = true)]
    Pause,
    /// Print the version.
    Version,
}

fn main() {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Pause) {
        std::process::exit(commands::pause::run());
    }
    logging::init(&cli.loglevel, cli.log_format);
    let code = match cli.command {
        Command::Init(a) => commands::init::run(a),
        Command::Wait(a) => commands::wait::run(a),
        Command::Emissary(a) => commands::emissary::run(a),
        Command::Kill(a) => commands::kill::run(a),
        Command::Render(a) => commands::render::run(a),
        Command::Run(a) => commands::run::run(a),
        Command::Node(a) => commands::node::run(a),
        Command::Artifact(a) => commands::artifact::run(a),
        Command::Pause => commands::pause::run(),
        Command::Version => {
            println!("argoexec {} (argoexec-rs)", env!("CARGO_PKG_VERSION"));
            0
        }
    };
    std::process::exit(code);
}
