//! The Argo Workflows controller versions whose pod contract argoexec-rs speaks, and what
//! each one puts in a pod.
//!
//! A version is a *contract generation*, not a release: each line stands for its newest
//! patch (v3.3.10, v3.5.15, v3.7.18, v4.0.10, v4.1.2), so changes back-ported within a line
//! count from that line (the args file reached v3.7.10 and v4.0.1, the sidecar grace period
//! every container in v3.7.1). The facts are from argo-2026-contract.md §1.1, §1.8 and §2
//! and from Argo's `workflowpod.go` read tag by tag (docs/compatibility.md); where the two
//! disagree (the args file "v4.1 only", progress variables "v3.6"), Argo's code wins and the
//! predicate's doc says so.
//!
//! The pod builder renders a pod as the chosen version's controller does; the executor
//! infers the generation of the pod it runs in from the environment that controller gave
//! it ([`ArgoVersion::infer`]), since no Argo controller tells its executor its version.

use std::fmt;
use std::str::FromStr;

/// An Argo controller version line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArgoVersion {
    /// v3.3: the five container-runtime executors; one task-result write.
    V3_3,
    /// v3.5 (and v3.4): emissary only; the `report-outputs-completed` handshake and the
    /// pod-annotation fallback; `ARGO_TEMPLATE` on every container.
    V3_5,
    /// v3.7 (v3.7.18): `ARGO_TEMPLATE` on init only, offloaded above 128 KiB; `--gloglevel`;
    /// the grace period on every container; task-result writes retried forever; large args
    /// in `ARGO_CONTAINER_ARGS_FILE`.
    V3_7,
    /// v4.0: as v3.7, plus artifact plugins and slog log levels.
    V4_0,
    /// v4.1: as v4.0, plus `ARGO_WORKFLOW_NAME` and `TRACEPARENT` on every container.
    V4_1,
}

impl ArgoVersion {
    /// Every version, oldest first.
    pub const ALL: [ArgoVersion; 5] = [Self::V3_3, Self::V3_5, Self::V3_7, Self::V4_0, Self::V4_1];

    /// The default of `argoexec render|run`: the newest.
    pub const NEWEST: ArgoVersion = Self::V4_1;

    /// `3.3`, `3.5`, `3.7`, `4.0` or `4.1`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V3_3 => "3.3",
            Self::V3_5 => "3.5",
            Self::V3_7 => "3.7",
            Self::V4_0 => "4.0",
            Self::V4_1 => "4.1",
        }
    }

    /// Whether this controller offers executors other than emissary (only v3.3: v3.4
    /// removed them).
    pub fn has_legacy_executors(self) -> bool {
        self == Self::V3_3
    }

    /// Whether the executor announces its outputs first (`report-outputs-completed:
    /// "false"`, `InitializeOutput`) and finalizes them with `"true"` (v3.5+).
    pub fn has_report_handshake(self) -> bool {
        self >= Self::V3_5
    }

    /// Whether `ARGO_TEMPLATE` is set on init containers only, with `inputs.parameters`
    /// cleared, and offloaded to the `<pod>` ConfigMap above [`TEMPLATE_ENV_MAX`] (v3.6,
    /// AW#13761 and AW#12325). Before that it is on every container, full.
    pub fn template_on_init_only(self) -> bool {
        self >= Self::V3_7
    }

    /// Whether the controller passes `--gloglevel N` to every argoexec (v3.7.0).
    pub fn passes_gloglevel(self) -> bool {
        self >= Self::V3_7
    }

    /// Whether `ARGO_TERMINATION_GRACE_PERIOD_SECONDS` is on every container (v3.7.1,
    /// with sidecar self-termination, AW#14633) rather than on wait only.
    pub fn grace_on_every_container(self) -> bool {
        self >= Self::V3_7
    }

    /// Whether `ARGO_PROGRESS_*` are set only when progress is enabled (v3.5.12; the
    /// contract doc says v3.6, the code says v3.5.12); v3.3 sets `ARGO_PROGRESS_FILE` always.
    pub fn progress_env_only_when_enabled(self) -> bool {
        self >= Self::V3_5
    }

    /// Whether a 403 on the task result falls back to pod annotations (≤ v3.5; v3.6
    /// removed the fallback, AW#13100).
    pub fn has_annotation_fallback(self) -> bool {
        self <= Self::V3_5
    }

    /// Whether task-result writes are retried forever on transient errors (v3.7.1 for
    /// every write, AW#14555) rather than five attempts.
    pub fn retries_forever(self) -> bool {
        self >= Self::V3_7
    }

    /// Whether `ARGO_WORKFLOW_UID` is set (v3.5.x), making the Workflow the task result's
    /// owner.
    pub fn sets_workflow_uid(self) -> bool {
        self >= Self::V3_5
    }

    /// Whether args longer than [`ARGS_ENV_MAX`] move to `ARGO_CONTAINER_ARGS_FILE`
    /// (AW#15265: v4.1.0, back-ported to v3.7.10 and v4.0.1; the contract doc says v4.1 only).
    pub fn has_args_file(self) -> bool {
        self >= Self::V3_7
    }

    /// Whether every executor-image container gets `/tmp` from the `tmp-dir-argo` emptyDir
    /// (v3.4).
    pub fn has_tmp_dir_volume(self) -> bool {
        self >= Self::V3_5
    }

    /// Whether the controller passes `--log-format` to the executor (v3.5).
    pub fn passes_log_format(self) -> bool {
        self >= Self::V3_5
    }

    /// The generation of the pod this executor runs in, from what its controller put in
    /// the wait (or main) container's environment (`get` looks a variable up):
    /// - `ARGO_CONTAINER_RUNTIME_EXECUTOR` other than emissary: v3.3, the last line that
    ///   offers one;
    /// - a template in `ARGO_TEMPLATE`: v3.5 (v3.3 emissary pods are treated as v3.5: the
    ///   only difference the executor acts on is the extra `report-outputs-completed`
    ///   write, which a v3.3 controller ignores);
    /// - `ARGO_INITLESS_POD=true` (the init-less layout's supervisor, which carries the
    ///   template inline): v4.1, the only version with that layout;
    /// - no `ARGO_TEMPLATE`, or the literal `offloaded`: v3.6 and later, read as v3.7 (so
    ///   early v3.6/v3.7.0 pods also get writes retried forever, where their own executor
    ///   gave up after five attempts: the safer of the two).
    ///
    /// Only wait and the emissary use this; init gets `ARGO_TEMPLATE` from every version.
    /// `ARGOEXEC_ARGO_VERSION` overrides the inference (an argoexec-rs knob for pods the
    /// rules misjudge).
    pub fn infer(get: impl Fn(&str) -> Option<String>) -> ArgoVersion {
        if let Some(v) = get(VERSION_ENV).and_then(|v| v.parse().ok()) {
            return v;
        }
        let executor = get("ARGO_CONTAINER_RUNTIME_EXECUTOR").unwrap_or_default();
        if !executor.is_empty() && executor != "emissary" {
            return Self::V3_3;
        }
        if get(crate::ready::INITLESS_POD_ENV).is_some_and(|v| v == "true") {
            return Self::V4_1;
        }
        match get("ARGO_TEMPLATE").filter(|t| !t.trim().is_empty()) {
            Some(t) if t != OFFLOADED => Self::V3_5,
            _ => Self::V3_7,
        }
    }
}

/// Environment variable overriding [`ArgoVersion::infer`] in the executor.
pub const VERSION_ENV: &str = "ARGOEXEC_ARGO_VERSION";

/// The value of `ARGO_TEMPLATE` when the template is in the `<pod>` ConfigMap (v3.6+).
pub const OFFLOADED: &str = "offloaded";

/// Largest `ARGO_TEMPLATE` value kept in the environment by v3.6+ controllers (131 072
/// bytes, compared with the JSON's length); above it the template is offloaded.
pub const TEMPLATE_ENV_MAX: usize = 128 * 1024;

/// Largest args JSON kept in a container's `args` by v4.1 controllers; above it the args
/// move to `ARGO_CONTAINER_ARGS_FILE`.
pub const ARGS_ENV_MAX: usize = 128 * 1024;

impl fmt::Display for ArgoVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version string that is not one of the five lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown Argo version {0:?}: expected one of 3.3, 3.5, 3.7, 4.0, 4.1 (a patch such as v3.7.4 is accepted)"
)]
pub struct UnknownVersion(pub String);

impl FromStr for ArgoVersion {
    type Err = UnknownVersion;

    /// `3.7`, `v3.7`, `v3.7.4` and `3.7.4` all mean [`ArgoVersion::V3_7`]; `3.4` means
    /// v3.5's contract and `3.6` v3.7's, the nearest line with the same pod shape.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_start_matches('v');
        let mut parts = t.split('.');
        let (major, minor) = (parts.next(), parts.next());
        let patch_ok = parts.all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        let v = match (major, minor) {
            (Some("3"), Some("3")) => Self::V3_3,
            (Some("3"), Some("4" | "5")) => Self::V3_5,
            (Some("3"), Some("6" | "7")) => Self::V3_7,
            (Some("4"), Some("0")) => Self::V4_0,
            (Some("4"), Some("1")) => Self::V4_1,
            _ => return Err(UnknownVersion(s.to_string())),
        };
        if !patch_ok {
            return Err(UnknownVersion(s.to_string()));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn parse_and_order() {
        for v in ArgoVersion::ALL {
            assert_eq!(v.as_str().parse::<ArgoVersion>().unwrap(), v);
        }
        assert_eq!("v3.7.18".parse::<ArgoVersion>().unwrap(), ArgoVersion::V3_7);
        assert_eq!("3.6".parse::<ArgoVersion>().unwrap(), ArgoVersion::V3_7);
        assert!(ArgoVersion::V3_3 < ArgoVersion::V4_1);
        for bad in ["2.12", "4", "4.2", "3.7.x", ""] {
            let e = bad.parse::<ArgoVersion>().unwrap_err();
            assert!(e.to_string().contains("3.3, 3.5, 3.7, 4.0, 4.1"), "{e}");
        }
    }

    #[test]
    fn contract_predicates() {
        use ArgoVersion::*;
        assert!(V3_3.has_legacy_executors() && !V3_5.has_legacy_executors());
        assert!(!V3_5.template_on_init_only() && V3_7.template_on_init_only());
        assert!(V3_5.has_annotation_fallback() && !V3_7.has_annotation_fallback());
        assert!(!V3_5.has_args_file() && V3_7.has_args_file());
        assert!(!V3_3.has_report_handshake() && V3_5.has_report_handshake());
    }

    #[test]
    fn inferred_from_the_environment() {
        let infer = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            ArgoVersion::infer(move |k| m.get(k).cloned())
        };
        assert_eq!(
            infer(&[("ARGO_CONTAINER_RUNTIME_EXECUTOR", "pns")]),
            ArgoVersion::V3_3
        );
        assert_eq!(infer(&[("ARGO_TEMPLATE", "{}")]), ArgoVersion::V3_5);
        assert_eq!(
            infer(&[("ARGO_TEMPLATE", "{}"), ("ARGO_INITLESS_POD", "true")]),
            ArgoVersion::V4_1,
            "the init-less supervisor carries the template inline and is v4.1"
        );
        assert_eq!(infer(&[("ARGO_WORKFLOW_UID", "u")]), ArgoVersion::V3_7);
        assert_eq!(infer(&[("ARGO_TEMPLATE", OFFLOADED)]), ArgoVersion::V3_7);
        assert_eq!(
            infer(&[("ARGO_TEMPLATE", "{}"), (VERSION_ENV, "4.1")]),
            ArgoVersion::V4_1
        );
    }
}
