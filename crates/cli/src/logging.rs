//! Logging set-up: `tracing` to stderr, text or JSON (`msg`, `level`, `time` keys like
//! Argo's logrus output), level from `--loglevel` (or `RUST_LOG` when set). Text is coloured
//! only when stderr is a terminal: container logs (`kubectl logs`) get plain lines.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Install the global subscriber (stderr).
pub fn init(level: &str, format: Format) {
    let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let _ = match format {
        Format::Text => builder.try_init(),
        Format::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}
