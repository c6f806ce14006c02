//! `argoexec-plugin-dir <socket>`: the directory-backed artifact plugin (the library's docs
//! say what it does) as a program, the ENTRYPOINT of the test image `argoexec-plugin-dir:dev`
//! (scripts/images.sh). Argo appends the socket path (`/tmp/artifact-plugins/<name>/socket`)
//! as the last and only argument.
//!
//! It serves until SIGTERM or SIGINT, then stops accepting, lets the calls in flight finish
//! (for up to a few seconds), removes the socket and exits 0, as Argo requires of plugins.
//! Exit 2 for a wrong command line, 1 when it cannot listen or serve. It needs no files
//! beyond the store (no /etc), so it runs as any user in an image built FROM scratch.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

const USAGE: &str = "usage: argoexec-plugin-dir <socket-path>

Serves Argo's artifact.ArtifactService (an artifact plugin) on the Unix socket <socket-path>,
keeping artifacts under the directory each artifact's plugin configuration names:
  root: /data            # required; key k is /data/k
  refuse: [save, list]   # optional: these operations answer that they failed
Stops on SIGTERM or SIGINT (exit 0).";

/// What the command line asks for.
enum Args {
    Help,
    Serve(PathBuf),
}

fn parse_args(args: &[OsString]) -> Result<Args, String> {
    match args {
        [a] if a == "--help" || a == "-h" => Ok(Args::Help),
        [a] if a.as_encoded_bytes().starts_with(b"-") => Err(format!("unknown option {}", a.display())),
        [socket] => Ok(Args::Serve(PathBuf::from(socket))),
        [] => Err("the socket path is missing".into()),
        _ => Err(format!("one argument expected, got {}", args.len())),
    }
}

/// Serve on `socket` until SIGTERM or SIGINT.
async fn run(socket: PathBuf) -> Result<(), String> {
    // Before listening, so that a signal that comes as soon as the socket exists counts.
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("cannot handle SIGTERM: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("cannot handle SIGINT: {e}"))?;
    let listener = argoexec_plugin_dir::Listener::bind(&socket).map_err(|e| e.to_string())?;
    eprintln!("argoexec-plugin-dir: listening on {}", socket.display());
    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    };
    listener.serve(shutdown).await.map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let socket = match parse_args(&args) {
        Ok(Args::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Args::Serve(socket)) => socket,
        Err(e) => {
            eprintln!("argoexec-plugin-dir: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("argoexec-plugin-dir: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = rt.block_on(run(socket));
    // A copy still running after the drain time-out must not hold the exit up.
    rt.shutdown_background();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("argoexec-plugin-dir: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(args: &[&str]) -> Result<Args, String> {
        parse_args(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn one_socket_path_or_help() {
        assert!(matches!(parse(&["/tmp/s"]), Ok(Args::Serve(p)) if p == Path::new("/tmp/s")));
        assert!(matches!(parse(&["--help"]), Ok(Args::Help)));
        assert!(matches!(parse(&["-h"]), Ok(Args::Help)));
        assert!(parse(&[]).is_err());
        assert!(parse(&["--verbose"]).is_err());
        assert!(parse(&["a", "b"]).is_err());
    }
}
