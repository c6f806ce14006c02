//! `argoexec-local`: the local tools of argoexec-rs — `run` a workflow's entrypoint as a pod
//! on the local node, run the `node` standalone, `render` the pod a controller would build.
//! None of this runs in a pod: the image's `argoexec` (init, wait, artifact) and the per-pod
//! copy (`argoexec-emissary`) carry none of it. `argoexec run|node|render` on the host runs
//! this program (found beside `argoexec`), so the commands stay as short as before.
//!
//! Exit codes: `run` exits with the step's outcome (0 succeeded, 1 failed, 2 error); the
//! others 0, or 1 with a message. A panic is a bug: where the build aborts on panic (the
//! `quick` profile the demo builds, root `Cargo.toml`) it is reported in one line and the
//! program exits 70 (`EX_SOFTWARE`); a build that unwinds (`release`, the cargo tests) keeps
//! the default, in which the node's connection tasks fail alone.

mod commands;

use clap::{Parser, Subcommand};

/// The local tools of argoexec-rs: a workflow step as a pod on the local node.
#[derive(Debug, Parser)]
#[command(name = "argoexec", version, about, args_override_self = true)]
struct Cli {
    /// Log level: error, warn, info, debug, trace, or a tracing filter directive.
    #[arg(long, global = true, default_value = "info")]
    loglevel: String,
    /// Log format: text or json.
    #[arg(long, global = true, default_value = "text")]
    log_format: argoexec_logging::Format,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the pod the controller side would build for a workflow's template.
    Render(commands::render::Args),
    /// Run a workflow's entrypoint as a pod on the local node and print its outputs.
    Run(Box<commands::run::Args>),
    /// Run the local node standalone: pods on Docker behind kubelet and API endpoints.
    Node(Box<commands::node::Args>),
    /// Print the version.
    Version,
}

/// The exit code after a panic in a build that aborts on panic (`EX_SOFTWARE`).
const PANIC_EXIT: i32 = 70;

fn main() {
    argoexec_core::panic::install_labelled(
        argoexec_core::panic::Policy::of_this_build(),
        "internal error (a bug; please report it)",
    );
    argoexec_core::panic::set_report(Box::new(|line| {
        eprintln!("argoexec-local: {line}");
        PANIC_EXIT
    }));
    let cli = Cli::parse();
    argoexec_logging::init(&cli.loglevel, cli.log_format);
    let code = match cli.command {
        Command::Render(a) => commands::render::run(a),
        Command::Run(a) => commands::run::run(*a),
        Command::Node(a) => commands::node::run(*a),
        Command::Version => {
            println!("argoexec-local {} (argoexec-rs)", env!("CARGO_PKG_VERSION"));
            0
        }
    };
    std::process::exit(code);
}
