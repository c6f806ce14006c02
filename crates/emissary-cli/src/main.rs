//! `argoexec-emissary`: the per-pod copy of argoexec. `argoexec init` copies this program to
//! `/var/run/argo/argoexec`, where it runs as PID 1 of every wrapped user container
//! (`emissary -- CMD…`), answers the controller's `kill SIGNUM PID` exec, and serves as the
//! local node's pause container. `artifact-plugin-init` it hands to the full executor
//! (`delegate`). Synchronous, no async runtime, no TLS, no argument-parser
//! crate: it is loaded into every user container.
//!
//! Exit codes: the wrapped command's (128 + N for a signal death); **64** for a failure of
//! this program (as Argo's); **2** for a command line it does not take.

mod argv;
mod delegate;

use argoexec_core::exit::EXECUTOR_FAILURE;
use argv::Command;

fn main() {
    // In the image's build (panic = "abort") a panic is reported and exits 64; the wrapper
    // sets the report that also writes its `exitcode` (argoexec_core::panic).
    argoexec_core::panic::install(argoexec_core::panic::Policy::of_this_build());
    let cli = match argv::parse(std::env::args_os().skip(1)) {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("argoexec: {e}\n\n{}", argv::USAGE);
            std::process::exit(2);
        }
    };
    let code = match cli.command {
        // pause blocks its signals before any other thread could start: no logging set-up.
        Command::Pause => pause(),
        command => {
            let format = cli.log_format.parse().unwrap_or_else(|e| {
                eprintln!("argoexec: {e}; logging as text");
                argoexec_logging::Format::Text
            });
            argoexec_logging::init_level(&cli.loglevel, format);
            run(command)
        }
    };
    std::process::exit(code);
}

fn run(command: Command) -> i32 {
    match command {
        Command::Emissary(command) => argoexec_supervisor::run(argoexec_supervisor::SupervisorOptions {
            paths: argoexec_core::PodPaths::from_env(),
            command,
            role: argoexec_supervisor::Role::Wrapper,
        }),
        Command::ArtifactPluginSidecar(command) => {
            argoexec_supervisor::run(argoexec_supervisor::SupervisorOptions {
                paths: argoexec_core::PodPaths::from_env(),
                command,
                role: argoexec_supervisor::Role::ArtifactPluginSidecar,
            })
        }
        Command::Delegate(args) => delegate::exec(args),
        Command::Kill { signum, pid } => match argoexec_supervisor::kill::send(signum, pid) {
            Ok(()) => 0,
            Err(e) => report("kill", &e),
        },
        Command::Version => {
            println!("argoexec-emissary {} (argoexec-rs)", env!("CARGO_PKG_VERSION"));
            0
        }
        Command::Help => {
            print!("{}", argv::USAGE);
            0
        }
        Command::Pause => pause(),
    }
}

fn pause() -> i32 {
    match argoexec_supervisor::pause::run() {
        Ok(()) => 0,
        Err(e) => report("pause", &e),
    }
}

/// Print an error with its causes; exit code 64.
fn report(what: &str, err: &dyn std::error::Error) -> i32 {
    let mut message = format!("argoexec {what}: {err}");
    let mut source = err.source();
    while let Some(s) = source {
        message.push_str(&format!(": {s}"));
        source = s.source();
    }
    eprintln!("{message}");
    EXECUTOR_FAILURE
}
