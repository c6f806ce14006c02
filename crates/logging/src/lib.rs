//! Logging set-up shared by the argoexec binaries: `tracing` to stderr, text or JSON (`msg`,
//! `level`, `time` keys like Argo's logrus output), the level from Argo's `--loglevel`.
//! Text is coloured only when stderr is a terminal: container logs (`kubectl logs`) get plain
//! lines.
//!
//! Two installers: [`init`] takes a level or target directives (`info,argoexec_flows=debug`)
//! and honours `RUST_LOG` (the executor and the local tools); [`init_level`] takes a level
//! only, so the slim in-pod wrapper links no filter parser. Directives are parsed by
//! `tracing_subscriber::filter::Targets`, not `EnvFilter`: span and field filters
//! (`[span{field=value}]`) are not supported, and the image carries no regex engine for them.

use std::io::IsTerminal;
use std::str::FromStr;

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;

/// Log output format (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// A `--log-format` value that is neither `text` nor `json`.
#[derive(Debug, thiserror::Error)]
#[error("unknown log format {0:?}: expected text or json")]
pub struct UnknownFormat(String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}

/// The tracing level of an Argo log level name, if it is one. Argo v3 passes logrus levels
/// (`warning`, `fatal`, `panic`, …), v4 slog's four (`debug`, `info`, `warn`, `error`);
/// each becomes the nearest tracing level.
pub fn argo_level(level: &str) -> Option<LevelFilter> {
    match level.trim().to_ascii_lowercase().as_str() {
        "warning" | "warn" => Some(LevelFilter::WARN),
        "fatal" | "panic" | "error" => Some(LevelFilter::ERROR),
        "info" => Some(LevelFilter::INFO),
        "debug" => Some(LevelFilter::DEBUG),
        "trace" => Some(LevelFilter::TRACE),
        _ => None,
    }
}

/// The filter directive for an Argo log level; anything that is not one is taken as target
/// directives (`target=level`, comma-separated, a bare level for the rest).
///
/// At `debug` and `trace` the HTTP and Docker client crates stay at `info`: their debug lines
/// print request bodies, and a container create body holds environment values that may come
/// from Secrets.
pub fn level_directive(level: &str) -> String {
    const QUIET: &str = ",bollard=info,hyper=info,hyper_util=info,h2=info,reqwest=info";
    match argo_level(level) {
        Some(l) if l >= LevelFilter::DEBUG => format!("{}{QUIET}", l.to_string().to_ascii_lowercase()),
        Some(l) => l.to_string().to_ascii_lowercase(),
        None => level.to_string(),
    }
}

/// Install the global subscriber (stderr): `RUST_LOG` when set and valid, else
/// [`level_directive`] of `level`, else `info` (a level or directive that does not parse).
pub fn init(level: &str, format: Format) {
    install(filter(std::env::var("RUST_LOG").ok().as_deref(), level), format);
}

/// The filter [`init`] installs for `RUST_LOG` (`rust_log`) and the `--loglevel` value.
fn filter(rust_log: Option<&str>, level: &str) -> Targets {
    let parse = |d: &str| Targets::from_str(d).ok();
    rust_log
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| parse(&level_directive(v)))
        .or_else(|| parse(&level_directive(level)))
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO))
}

/// Install the global subscriber (stderr) at an Argo level; an unknown name means `info`.
/// `RUST_LOG` counts when it is a bare level (`debug`), as with [`init`]; filter directives
/// are not parsed: the in-pod wrapper links no parser for them.
pub fn init_level(level: &str, format: Format) {
    let from_env = std::env::var("RUST_LOG").ok().and_then(|l| argo_level(&l));
    install(
        from_env
            .or_else(|| argo_level(level))
            .unwrap_or(LevelFilter::INFO),
        format,
    );
}

fn install<F>(filter: F, format: Format)
where
    F: tracing_subscriber::layer::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let registry = tracing_subscriber::registry();
    let _ = match format {
        Format::Text => registry.with(filter).with(fmt).try_init(),
        Format::Json => registry
            .with(filter)
            .with(fmt.json().flatten_event(true).with_current_span(false))
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
            assert!(Targets::from_str(&d).is_ok(), "{d}");
        }
        assert_eq!(level_directive("argoexec=debug"), "argoexec=debug");
        assert_eq!(argo_level("argoexec=debug"), None);
    }

    #[test]
    fn rust_log_wins_when_it_parses_and_argo_levels_count_in_it() {
        use tracing::Level;
        let f = filter(Some("argoexec_flows=debug,warn"), "info");
        assert!(f.would_enable("argoexec_flows::wait", &Level::DEBUG));
        assert!(!f.would_enable("argoexec_report", &Level::INFO));
        // An Argo level name in RUST_LOG, with the HTTP clients kept quiet.
        let f = filter(Some("warning"), "debug");
        assert!(f.would_enable("x", &Level::WARN) && !f.would_enable("x", &Level::INFO));
        let f = filter(Some("debug"), "info");
        assert!(f.would_enable("argoexec", &Level::DEBUG));
        assert!(!f.would_enable("hyper_util::client", &Level::DEBUG));
        // Unset, empty or unparsable: the --loglevel value; both bad: info.
        for bad in [None, Some(""), Some("a=b=c")] {
            let f = filter(bad, "error");
            assert!(
                f.would_enable("x", &Level::ERROR) && !f.would_enable("x", &Level::WARN),
                "{bad:?}"
            );
        }
        let f = filter(Some("a=b=c"), "nonsense=level=x");
        assert!(f.would_enable("x", &Level::INFO) && !f.would_enable("x", &Level::DEBUG));
    }

    #[test]
    fn formats() {
        assert_eq!("JSON".parse::<Format>().unwrap(), Format::Json);
        assert_eq!("text".parse::<Format>().unwrap(), Format::Text);
        let err = "yaml".parse::<Format>().unwrap_err().to_string();
        assert!(err.contains("yaml") && err.contains("text or json"), "{err}");
    }
}
