//! The init-less pod layout's readiness marker (Argo v4.1, beta, AW#16154/AW#16161): how the
//! `supervisor` container tells the user containers that the pod is prepared.
//!
//! In that layout there is no init container. The `supervisor` writes
//! `/var/run/argo/status` — always through `status.tmp` and a rename, so a reader never sees
//! half a marker — with one of three bodies ([`Marker`]):
//! * `RUNNING\n` at start and again every [`HEARTBEAT`] while it prepares the pod;
//! * `READY\n` once the template is written, the script staged and the inputs loaded;
//! * `FAILED\n<message>` (no trailing newline; just `FAILED` without a message) when any of
//!   that failed.
//!
//! Every wrapped user container whose pod has a supervisor gets `ARGO_WAIT_FOR_READY=true`
//! ([`WAIT_FOR_READY_ENV`]) and waits for a terminal marker before it does anything else.
//! A marker that never appears within [`STALE_AFTER`] of the start of that wait, a
//! non-terminal marker whose mtime is older than [`STALE_AFTER`], or `FAILED` end the wait
//! with [`crate::exit::SUPERVISOR_PRE_MAIN`] (65) and the user command never runs.
//! The reader takes the first line, trimmed, as the token and the rest, trimmed, as the
//! message; an unknown token counts as "not terminal yet" (Argo's rule).

use std::time::Duration;

/// The environment variable that makes a wrapped container wait for the marker (exactly
/// `true`).
pub const WAIT_FOR_READY_ENV: &str = "ARGO_WAIT_FOR_READY";

/// The environment variable on the `supervisor` container (exactly `true`): the pod uses
/// the init-less layout, so outputs under an input artifact's path are on main's base layer.
pub const INITLESS_POD_ENV: &str = "ARGO_INITLESS_POD";

/// How often the supervisor rewrites `RUNNING` (Argo: 5 s).
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long a missing or non-terminal marker is trusted (Argo: 30 s).
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// How often a waiting container re-checks the marker without an inotify event (Argo: 2 s).
pub const RECHECK: Duration = Duration::from_secs(2);

/// Which pod layout the executor runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodLayout {
    /// init + wait, inputs mounted into main by subPath (every Argo version).
    #[default]
    Legacy,
    /// supervisor, no init container, the executor from an image volume at `/argo-bin`,
    /// inputs linked into main by its wrapper (Argo v4.1 `initlessPod.enabled`).
    Initless,
}

/// `ARGOEXEC_NATIVE_SIDECAR=true` (argoexec-rs, config-map key `nativeSidecar`): the
/// auxiliary container (wait or supervisor) is a sidecar container (an init container with
/// `restartPolicy: Always`), which the kubelet stops with SIGTERM once the app containers have
/// ended: it then finishes saving within the grace period, and once done it waits for that
/// SIGTERM instead of exiting (a sidecar that exits early is started again).
pub const NATIVE_SIDECAR_ENV: &str = "ARGOEXEC_NATIVE_SIDECAR";

impl PodLayout {
    /// The layout a process is in, from `get` (the environment): init-less when
    /// [`INITLESS_POD_ENV`] or [`WAIT_FOR_READY_ENV`] is exactly `true`.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Self {
        let on = |k: &str| get(k).is_some_and(|v| v == "true");
        if on(INITLESS_POD_ENV) || on(WAIT_FOR_READY_ENV) {
            Self::Initless
        } else {
            Self::Legacy
        }
    }
}

/// One state of the marker file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// The supervisor is preparing the pod (the heartbeat).
    Running,
    /// The pod is prepared: the user containers may start their commands.
    Ready,
    /// Preparing the pod failed, with the reason.
    Failed(String),
}

impl Marker {
    /// The file's bytes, as Argo writes them.
    pub fn render(&self) -> String {
        match self {
            Self::Running => "RUNNING\n".into(),
            Self::Ready => "READY\n".into(),
            Self::Failed(m) if m.is_empty() => "FAILED".into(),
            Self::Failed(m) => format!("FAILED\n{m}"),
        }
    }

    /// Read a marker's text: `None` for anything that is not a known token (a reader treats
    /// that like `RUNNING`: not terminal, judged by its age).
    pub fn parse(text: &str) -> Option<Self> {
        let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
        match first.trim() {
            "RUNNING" => Some(Self::Running),
            "READY" => Some(Self::Ready),
            "FAILED" => Some(Self::Failed(rest.trim().to_string())),
            _ => None,
        }
    }

    /// Whether the marker ends the wait (`READY` or `FAILED`).
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Self::Running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_in_argos_bytes() {
        assert_eq!(Marker::Running.render(), "RUNNING\n");
        assert_eq!(Marker::Ready.render(), "READY\n");
        assert_eq!(Marker::Failed("no key".into()).render(), "FAILED\nno key");
        assert_eq!(Marker::Failed(String::new()).render(), "FAILED");
        for m in [
            Marker::Running,
            Marker::Ready,
            Marker::Failed("a\nb".into()),
            Marker::Failed(String::new()),
        ] {
            assert_eq!(Marker::parse(&m.render()), Some(m));
        }
        assert_eq!(Marker::parse(" READY \r\n"), Some(Marker::Ready));
        assert_eq!(
            Marker::parse("FAILED\n  why \n"),
            Some(Marker::Failed("why".into()))
        );
        assert_eq!(Marker::parse(""), None);
        assert_eq!(Marker::parse("REA"), None);
        assert!(!Marker::Running.is_terminal() && Marker::Ready.is_terminal());
    }

    #[test]
    fn layout_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(PodLayout::from_env(env(&[])), PodLayout::Legacy);
        assert_eq!(
            PodLayout::from_env(env(&[(INITLESS_POD_ENV, "true")])),
            PodLayout::Initless
        );
        assert_eq!(
            PodLayout::from_env(env(&[(WAIT_FOR_READY_ENV, "true")])),
            PodLayout::Initless
        );
        assert_eq!(
            PodLayout::from_env(env(&[(INITLESS_POD_ENV, "TRUE")])),
            PodLayout::Legacy
        );
    }
}
