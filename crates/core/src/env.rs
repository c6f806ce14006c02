//! The `ARGO_*` environment contract (argo-executors.md §1.4), parsed into one typed struct,
//! and the template's four possible sources.
//!
//! Parsing is a pure function of a variable lookup, so tests need no process environment.
//! A missing required variable or a malformed value gives one [`EnvError`] naming the
//! variable and the value.

use crate::argo_version::ArgoVersion;
use crate::executor_kind::ExecutorKind;
use crate::paths::PodPaths;
use crate::template::Template;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Errors from the environment contract.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// A required variable is unset or empty.
    #[error("environment variable {var} is required but not set")]
    Missing {
        /// The variable.
        var: &'static str,
    },
    /// A variable has a value that cannot be parsed.
    #[error("environment variable {var} has invalid value {value:?}: {reason}")]
    Invalid {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// No template source was found.
    #[error(
        "no template: set ARGO_TEMPLATE, or provide {file}, the offloaded template {offloaded} or the annotations file {annotations}"
    )]
    NoTemplate {
        /// The template file looked at.
        file: PathBuf,
        /// The offloaded-template file looked at.
        offloaded: PathBuf,
        /// The annotations file looked at.
        annotations: PathBuf,
    },
    /// The template text is not a valid template.
    #[error("malformed template from {source_name}: {error}")]
    BadTemplate {
        /// Where it came from (`ARGO_TEMPLATE`, a file path).
        source_name: String,
        /// The JSON error.
        error: String,
    },
    /// A template source could not be read.
    #[error("cannot read template from {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
}

/// Default kill grace period when `ARGO_TERMINATION_GRACE_PERIOD_SECONDS` is unset.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);
/// Default kubelet port.
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// Every executor environment variable the controller injects, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutorEnv {
    /// `ARGO_POD_NAME` (required for init/wait).
    pub pod_name: String,
    /// `ARGO_POD_UID`.
    pub pod_uid: Option<String>,
    /// `ARGO_NAMESPACE` (an argoexec-rs override), else the service account's namespace
    /// ([`resolve_namespace`], filled in by the binary's bootstrap).
    pub namespace: Option<String>,
    /// `ARGO_CONTAINER_NAME`: this container's own name.
    pub container_name: Option<String>,
    /// `ARGO_CONTAINER_RUNTIME_EXECUTOR`; emissary when unset (the v3.3 default).
    pub runtime_executor: ExecutorKind,
    /// `ARGO_KUBELET_HOST` (downward API `status.hostIP`).
    pub kubelet_host: Option<String>,
    /// `ARGO_KUBELET_PORT`; `0` or unset means 10250.
    pub kubelet_port: u16,
    /// `ARGO_KUBELET_INSECURE == "true"`.
    pub kubelet_insecure: bool,
    /// `ARGO_INCLUDE_SCRIPT_OUTPUT`.
    pub include_script_output: bool,
    /// `ARGO_DEADLINE`; `None` for the zero time or unset.
    pub deadline: Option<SystemTime>,
    /// `ARGO_WORKFLOW_NAME`.
    pub workflow_name: Option<String>,
    /// `ARGO_WORKFLOW_UID`.
    pub workflow_uid: Option<String>,
    /// `ARGO_NODE_ID`.
    pub node_id: Option<String>,
    /// `ARGO_INSTANCE_ID`.
    pub instance_id: Option<String>,
    /// `ARGO_PROGRESS_FILE`.
    pub progress_file: Option<PathBuf>,
    /// `ARGO_PROGRESS_PATCH_TICK_DURATION` (default 1m).
    pub progress_patch_tick: Duration,
    /// `ARGO_PROGRESS_FILE_TICK_DURATION` (default 3s).
    pub progress_file_tick: Duration,
    /// `ARGO_TERMINATION_GRACE_PERIOD_SECONDS` (default 30 s).
    pub termination_grace: Duration,
    /// `ARGO_DEBUG_PAUSE_BEFORE`.
    pub debug_pause_before: bool,
    /// `ARGO_DEBUG_PAUSE_AFTER`.
    pub debug_pause_after: bool,
    /// The contract generation of the controller that built this pod, inferred from the
    /// variables above ([`ArgoVersion::infer`]; `ARGOEXEC_ARGO_VERSION` overrides it).
    pub argo_version: ArgoVersion,
    /// The pod layout: init-less when `ARGO_INITLESS_POD` (the supervisor) or
    /// `ARGO_WAIT_FOR_READY` (a wrapped container) is `true` ([`crate::ready::PodLayout`]).
    pub layout: crate::ready::PodLayout,
    /// `ARGO_ARTIFACT_PLUGIN_NAMES`: the artifact-plugin sidecars (`artifact-plugin-<name>`)
    /// that wait or the supervisor stops through their signal files once outputs are saved.
    pub artifact_plugin_containers: Vec<String>,
    /// [`crate::ready::NATIVE_SIDECAR_ENV`]: this auxiliary container is a sidecar container.
    pub native_sidecar: bool,
}

/// Argo's `SplitPluginNames`: a comma-separated list, trimmed, empty entries dropped.
pub fn split_names(v: Option<&str>) -> Vec<String> {
    v.unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl ExecutorEnv {
    /// Parse from the process environment.
    ///
    /// # Errors
    /// See [`ExecutorEnv::parse`].
    pub fn from_env() -> Result<Self, EnvError> {
        Self::parse(|k| std::env::var(k).ok())
    }

    /// Parse from a lookup function. `ARGO_POD_NAME` is required.
    ///
    /// # Errors
    /// [`EnvError::Missing`] or [`EnvError::Invalid`] naming the variable.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let opt = |k: &str| get(k).filter(|v| !v.is_empty());
        let pod_name = opt("ARGO_POD_NAME").ok_or(EnvError::Missing { var: "ARGO_POD_NAME" })?;
        let runtime_executor = match opt("ARGO_CONTAINER_RUNTIME_EXECUTOR") {
            None => ExecutorKind::Emissary,
            Some(v) => v
                .parse()
                .map_err(|e: crate::executor_kind::UnknownExecutor| EnvError::Invalid {
                    var: "ARGO_CONTAINER_RUNTIME_EXECUTOR",
                    value: v.clone(),
                    reason: e.to_string(),
                })?,
        };
        let kubelet_port = match opt("ARGO_KUBELET_PORT") {
            None => DEFAULT_KUBELET_PORT,
            Some(v) => match v.trim().parse::<u16>() {
                Ok(0) => DEFAULT_KUBELET_PORT,
                Ok(p) => p,
                Err(e) => return Err(invalid("ARGO_KUBELET_PORT", &v, e)),
            },
        };
        let deadline = match opt("ARGO_DEADLINE") {
            None => None,
            Some(v) => parse_rfc3339(&v).map_err(|r| invalid("ARGO_DEADLINE", &v, r))?,
        };
        let duration = |var: &'static str, default: Duration| -> Result<Duration, EnvError> {
            match opt(var) {
                None => Ok(default),
                Some(v) => crate::template::container::parse_go_duration(&v)
                    .ok_or_else(|| invalid(var, &v, "not a Go duration such as 1m0s or 3s")),
            }
        };
        // As Argo's `TerminationGracePeriodDuration`: a whole number of seconds above 0,
        // anything else (unset, 0, negative, not a number) the 30 s default.
        let termination_grace = opt("ARGO_TERMINATION_GRACE_PERIOD_SECONDS")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|s| *s > 0)
            .map_or(DEFAULT_GRACE, Duration::from_secs);
        if let Some(v) = opt(crate::argo_version::VERSION_ENV) {
            v.parse::<ArgoVersion>()
                .map_err(|e| invalid(crate::argo_version::VERSION_ENV, &v, e))?;
        }
        Ok(Self {
            pod_name,
            pod_uid: opt("ARGO_POD_UID"),
            namespace: opt("ARGO_NAMESPACE"),
            container_name: opt("ARGO_CONTAINER_NAME"),
            runtime_executor,
            kubelet_host: opt("ARGO_KUBELET_HOST"),
            kubelet_port,
            kubelet_insecure: bool_var(&opt, "ARGO_KUBELET_INSECURE")?,
            include_script_output: bool_var(&opt, "ARGO_INCLUDE_SCRIPT_OUTPUT")?,
            deadline,
            workflow_name: opt("ARGO_WORKFLOW_NAME"),
            workflow_uid: opt("ARGO_WORKFLOW_UID"),
            node_id: opt("ARGO_NODE_ID"),
            instance_id: opt("ARGO_INSTANCE_ID"),
            progress_file: opt("ARGO_PROGRESS_FILE").map(PathBuf::from),
            progress_patch_tick: duration("ARGO_PROGRESS_PATCH_TICK_DURATION", Duration::from_secs(60))?,
            progress_file_tick: duration("ARGO_PROGRESS_FILE_TICK_DURATION", Duration::from_secs(3))?,
            termination_grace,
            debug_pause_before: bool_var(&opt, "ARGO_DEBUG_PAUSE_BEFORE")?,
            debug_pause_after: bool_var(&opt, "ARGO_DEBUG_PAUSE_AFTER")?,
            artifact_plugin_containers: split_names(opt("ARGO_ARTIFACT_PLUGIN_NAMES").as_deref()),
            argo_version: ArgoVersion::infer(opt),
            layout: crate::ready::PodLayout::from_env(&get),
            native_sidecar: opt(crate::ready::NATIVE_SIDECAR_ENV).is_some_and(|v| v == "true"),
        })
    }
}

fn invalid(var: &'static str, value: &str, reason: impl ToString) -> EnvError {
    EnvError::Invalid {
        var,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

/// Go's `strconv.ParseBool` set; unset is false.
fn bool_var(opt: &impl Fn(&str) -> Option<String>, var: &'static str) -> Result<bool, EnvError> {
    match opt(var) {
        None => Ok(false),
        Some(v) => parse_bool(&v).ok_or_else(|| invalid(var, &v, "expected true or false")),
    }
}

/// Parse a boolean the way Go's `strconv.ParseBool` does.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim() {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Parse an RFC 3339 timestamp. Go's zero time (`0001-01-01T00:00:00Z`) and anything before
/// the Unix epoch mean "no deadline" and give `Ok(None)`.
///
/// # Errors
/// A message saying which part is malformed.
pub fn parse_rfc3339(s: &str) -> Result<Option<SystemTime>, String> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Result<i64, String> {
        s.get(r.clone())
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("bad digits at {}..{}", r.start, r.end))
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') {
        return Err("expected YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)".into());
    }
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &s[start..i];
        let padded: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
        nanos = padded.parse().map_err(|_| "bad fraction")?;
    }
    let offset = match b.get(i) {
        Some(b'Z') | Some(b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let o = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if *sign == b'+' { o } else { -o }
        }
        _ => return Err("bad time zone (use Z or ±HH:MM)".into()),
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return Err("date or time out of range".into());
    }
    let secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset;
    if secs < 0 {
        return Ok(None);
    }
    Ok(Some(SystemTime::UNIX_EPOCH + Duration::new(secs as u64, nanos)))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The pod's namespace as Argo's executor learns it: `ARGO_NAMESPACE` when set (an
/// argoexec-rs override; no Argo controller sets it), else the `namespace` file of the
/// service-account mount (what client-go's in-cluster config reads), else `None` — a pod
/// with `automountServiceAccountToken: false` has no such file.
pub fn resolve_namespace(paths: &PodPaths, get: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(ns) = get("ARGO_NAMESPACE").filter(|n| !n.trim().is_empty()) {
        return Some(ns.trim().to_string());
    }
    let file = paths.service_account_dir_from(&get).join("namespace");
    let text = std::fs::read_to_string(file).ok()?;
    Some(text.trim().to_string()).filter(|n| !n.is_empty())
}

/// Default path of the ≤ v3.1 downward-API annotations file.
pub const ANNOTATIONS_FILE: &str = "/argo/podmetadata/annotations";

/// Which source a template came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSource {
    /// The `ARGO_TEMPLATE` variable (v3.2+; on init containers only since v3.6).
    Env,
    /// `/var/run/argo/template` (written by init).
    File(PathBuf),
    /// `/argo/config/ARGO_TEMPLATE`: the `<pod>` ConfigMap a v3.6+ controller offloads a
    /// template above 128 KiB to, with `ARGO_TEMPLATE=offloaded` (mounted in init only).
    ConfigMap(PathBuf),
    /// The downward-API annotations file (≤ v3.1).
    Annotations(PathBuf),
}

/// Load the template, from the first source that has one:
/// 1. `ARGO_TEMPLATE`, unless it is the literal `offloaded`;
/// 2. when it is `offloaded`: `/argo/config/ARGO_TEMPLATE`, which must then exist;
/// 3. `/var/run/argo/template` (init writes it; wait reads it since v3.6);
/// 4. `/argo/config/ARGO_TEMPLATE` without the variable (a container that mounts the
///    ConfigMap but was given no variable);
/// 5. the ≤ v3.1 annotations file (`annotations` overrides its default path, already
///    rooted by the caller).
///
/// # Errors
/// [`EnvError::NoTemplate`], [`EnvError::Read`] or [`EnvError::BadTemplate`].
pub fn load_template(
    paths: &PodPaths,
    get: impl Fn(&str) -> Option<String>,
    annotations: Option<&Path>,
) -> Result<(Template, TemplateSource), EnvError> {
    let offloaded = paths.offloaded_template();
    match get("ARGO_TEMPLATE").filter(|t| !t.trim().is_empty()) {
        Some(text) if text.trim() == crate::argo_version::OFFLOADED => {
            let t = read_template_file(&offloaded)?;
            return Ok((t, TemplateSource::ConfigMap(offloaded)));
        }
        Some(text) => {
            let t = Template::from_json(&text).map_err(|e| EnvError::BadTemplate {
                source_name: "ARGO_TEMPLATE".into(),
                error: e.to_string(),
            })?;
            return Ok((t, TemplateSource::Env));
        }
        None => {}
    }
    let file = paths.template_file();
    for (path, source) in [
        (&file, TemplateSource::File(file.clone())),
        (&offloaded, TemplateSource::ConfigMap(offloaded.clone())),
    ] {
        if path.exists() {
            return Ok((read_template_file(path)?, source));
        }
    }
    let ann = annotations
        .map(Path::to_path_buf)
        .unwrap_or_else(|| paths.rooted(ANNOTATIONS_FILE));
    if ann.exists() {
        let text = std::fs::read_to_string(&ann).map_err(|error| EnvError::Read {
            path: ann.clone(),
            error,
        })?;
        let bad = |error: String| EnvError::BadTemplate {
            source_name: ann.display().to_string(),
            error,
        };
        let json = crate::annotations::lookup(&text, crate::annotations::TEMPLATE_ANNOTATION)
            .map_err(|e| bad(e.to_string()))?;
        let t = Template::from_json(&json).map_err(|e| bad(e.to_string()))?;
        return Ok((t, TemplateSource::Annotations(ann)));
    }
    Err(EnvError::NoTemplate {
        file,
        offloaded,
        annotations: ann,
    })
}

/// Read and parse a template file.
fn read_template_file(path: &Path) -> Result<Template, EnvError> {
    let text = std::fs::read_to_string(path).map_err(|error| EnvError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    Template::from_json(&text).map_err(|e| EnvError::BadTemplate {
        source_name: path.display().to_string(),
        error: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn full_contract() {
        let e = ExecutorEnv::parse(env(&[
            ("ARGO_POD_NAME", "p"),
            ("ARGO_CONTAINER_RUNTIME_EXECUTOR", "kubelet"),
            ("ARGO_KUBELET_PORT", "0"),
            ("ARGO_KUBELET_INSECURE", "true"),
            ("ARGO_INCLUDE_SCRIPT_OUTPUT", "true"),
            ("ARGO_DEADLINE", "0001-01-01T00:00:00Z"),
            ("ARGO_PROGRESS_PATCH_TICK_DURATION", "1m0s"),
            ("ARGO_TERMINATION_GRACE_PERIOD_SECONDS", "3"),
        ]))
        .unwrap();
        assert_eq!(e.runtime_executor, ExecutorKind::Kubelet);
        assert_eq!(e.kubelet_port, 10250);
        assert!(e.kubelet_insecure && e.include_script_output);
        assert_eq!(e.deadline, None);
        assert_eq!(e.progress_patch_tick, Duration::from_secs(60));
        assert_eq!(e.termination_grace, Duration::from_secs(3));
    }

    #[test]
    fn errors_name_the_variable() {
        let e = ExecutorEnv::parse(env(&[])).unwrap_err();
        assert!(e.to_string().contains("ARGO_POD_NAME"), "{e}");
        let e = ExecutorEnv::parse(env(&[
            ("ARGO_POD_NAME", "p"),
            ("ARGO_CONTAINER_RUNTIME_EXECUTOR", "rkt"),
        ]))
        .unwrap_err();
        assert!(
            e.to_string().contains("ARGO_CONTAINER_RUNTIME_EXECUTOR") && e.to_string().contains("rkt"),
            "{e}"
        );
        let e =
            ExecutorEnv::parse(env(&[("ARGO_POD_NAME", "p"), ("ARGO_DEADLINE", "tomorrow")])).unwrap_err();
        assert!(e.to_string().contains("ARGO_DEADLINE"), "{e}");
        let e = ExecutorEnv::parse(env(&[
            ("ARGO_POD_NAME", "p"),
            ("ARGO_INCLUDE_SCRIPT_OUTPUT", "yes"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("ARGO_INCLUDE_SCRIPT_OUTPUT"), "{e}");
    }

    #[test]
    fn namespace_from_the_variable_then_the_service_account() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        assert_eq!(resolve_namespace(&paths, env(&[])), None);
        let sa = paths.service_account_dir();
        std::fs::create_dir_all(&sa).unwrap();
        std::fs::write(sa.join("namespace"), "argo\n").unwrap();
        assert_eq!(resolve_namespace(&paths, env(&[])).as_deref(), Some("argo"));
        assert_eq!(
            resolve_namespace(&paths, env(&[("ARGO_NAMESPACE", "team-a")])).as_deref(),
            Some("team-a")
        );
        let other = d.path().join("other-sa");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("namespace"), "ci").unwrap();
        let dir = other.to_str().unwrap();
        assert_eq!(
            resolve_namespace(&paths, env(&[("ARGOEXEC_SERVICEACCOUNT_DIR", dir)])).as_deref(),
            Some("ci")
        );
    }

    #[test]
    fn rfc3339() {
        let t = parse_rfc3339("2026-12-02T12:00:00Z").unwrap().unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_796_212_800
        );
        let t2 = parse_rfc3339("2026-12-02T13:00:00.5+01:00").unwrap().unwrap();
        assert_eq!(t2.duration_since(t).unwrap(), Duration::from_millis(500));
        assert!(parse_rfc3339("2026-13-02T12:00:00Z").is_err());
    }

    #[test]
    fn template_sources_in_order() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        assert!(matches!(
            load_template(&paths, env(&[]), None),
            Err(EnvError::NoTemplate { .. })
        ));
        let ann = d.path().join("annotations");
        std::fs::write(
            &ann,
            "workflows.argoproj.io/template=\"{\\\"name\\\":\\\"a\\\"}\"\n",
        )
        .unwrap();
        let (t, src) = load_template(&paths, env(&[]), Some(&ann)).unwrap();
        assert_eq!(
            (t.name.as_str(), src),
            ("a", TemplateSource::Annotations(ann.clone()))
        );
        let off = paths.offloaded_template();
        std::fs::create_dir_all(off.parent().unwrap()).unwrap();
        std::fs::write(&off, r#"{"name":"cm"}"#).unwrap();
        let (t, src) = load_template(&paths, env(&[]), Some(&ann)).unwrap();
        assert_eq!(
            (t.name.as_str(), src),
            ("cm", TemplateSource::ConfigMap(off.clone()))
        );
        std::fs::create_dir_all(paths.var_run_argo()).unwrap();
        std::fs::write(paths.template_file(), r#"{"name":"f"}"#).unwrap();
        assert_eq!(load_template(&paths, env(&[]), Some(&ann)).unwrap().0.name, "f");
        let (t, src) = load_template(&paths, env(&[("ARGO_TEMPLATE", r#"{"name":"e"}"#)]), None).unwrap();
        assert_eq!((t.name.as_str(), src), ("e", TemplateSource::Env));
        let e = load_template(&paths, env(&[("ARGO_TEMPLATE", "{not json")]), None).unwrap_err();
        assert!(e.to_string().contains("ARGO_TEMPLATE"), "{e}");
        // `offloaded` reads the ConfigMap even though /var/run/argo/template exists.
        let (t, src) = load_template(&paths, env(&[("ARGO_TEMPLATE", "offloaded")]), None).unwrap();
        assert_eq!(
            (t.name.as_str(), src),
            ("cm", TemplateSource::ConfigMap(off.clone()))
        );
        std::fs::remove_file(&off).unwrap();
        let e = load_template(&paths, env(&[("ARGO_TEMPLATE", "offloaded")]), None).unwrap_err();
        assert!(
            matches!(&e, EnvError::Read { path, .. } if path.ends_with("argo/config/ARGO_TEMPLATE")),
            "{e}"
        );
    }
}
