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

/// The filter directive for an Argo log level. Argo v3 passes logrus levels (`warning`,
/// `fatal`, `panic`, …), v4 slog's four (`debug`, `info`, `warn`, `error`); each becomes the
/// nearest tracing level. Anything else is taken as a tracing filter directive.
///
/// At `debug` and `trace` the HTTP and Docker client crates stay at `info`: their debug lines
/// print request bodies, and a container create body holds environment values that may come
/// from Secrets.
pub fn level_directive(level: &str) -> String {
    const QUIET: &str = ",bollard=info,hyper=info,hyper_util=info,h2=info,reqwest=info";
    match level.trim().to_ascii_lowercase().as_str() {
        "warning" | "warn" => "warn".into(),
        "fatal" | "panic" | "error" => "error".into(),
        "info" => "info".into(),
        l @ ("trace" | "debug") => format!("{l}{QUIET}"),
        _ => level.to_string(),
    }
}

/// Install the global subscriber (stderr).
pub fn init(level: &str, format: Format) {
    let filter =
        EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(level_directive(level)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argo_levels_of_every_version() {
        for (argo, ours) in [
            ("warning", "warn"),
            ("warn", "warn"),
            ("WARN", "warn"),
            ("fatal", "error"),
            ("panic", "error"),
            ("error", "error"),
            ("info", "info"),
        ] {
            assert_eq!(level_directive(argo), ours, "{argo}");
        }
        for l in ["debug", "trace"] {
            let d = level_directive(l);
            assert!(d.starts_with(l) && d.contains("bollard=info"), "{d}");
            assert!(EnvFilter::try_new(&d).is_ok(), "{d}");
        }
        assert_eq!(level_directive("argoexec=debug"), "argoexec=debug");
    }
}
