//! Container-shaped parts of a template: container, script, container set, sidecars.

use super::Extra;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An environment variable of a container (only `name`/`value` are modelled; `valueFrom`
/// stays in `extra`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    /// Variable name.
    pub name: String,
    /// Literal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Everything else (e.g. `valueFrom`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A volume mount of a container.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    /// Volume name.
    pub name: String,
    /// Absolute mount path inside the container.
    pub mount_path: String,
    /// Read-only mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Sub-path within the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The container part of a template (a Kubernetes container, subset).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// Container name (empty for `container:`/`script:`, where it is `main`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Image reference.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// Entrypoint override. `None` means "use the image's".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Arguments. `None` and `Some(vec![])` differ: an explicitly empty list is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Volume mounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
    /// Security context, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<Value>,
    /// Resources, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A script template: a container plus the script `source`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptTemplate {
    /// The container fields, inlined.
    #[serde(flatten)]
    pub container: Container,
    /// The script source, staged at `/argo/staging/script`.
    #[serde(default)]
    pub source: String,
}

/// A user sidecar or init container (container fields plus `mirrorVolumeMounts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserContainer {
    /// The container fields, inlined.
    #[serde(flatten)]
    pub container: Container,
    /// Copy main's volume mounts into this container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_volume_mounts: Option<bool>,
}

/// One container of a container set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerNode {
    /// The container fields, inlined.
    #[serde(flatten)]
    pub container: Container,
    /// Names of containers that must succeed before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
}

/// Retry strategy of a container set (applies to each container, inside the same pod).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSetRetryStrategy {
    /// Number of retries (int or string in Argo JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<Value>,
    /// Constant delay between attempts, a Go duration such as `"1s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ContainerSetRetryStrategy {
    /// The number of retries as an integer (0 when absent or unparsable).
    pub fn retries(&self) -> u32 {
        match &self.retries {
            Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
            Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
            _ => 0,
        }
    }

    /// The delay between attempts (zero when absent or unparsable).
    pub fn delay(&self) -> std::time::Duration {
        self.duration
            .as_deref()
            .and_then(parse_go_duration)
            .unwrap_or_default()
    }
}

/// A container-set template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSetTemplate {
    /// The containers.
    #[serde(default)]
    pub containers: Vec<ContainerNode>,
    /// Mounts shared by every container of the set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
    /// Retry strategy for each container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_strategy: Option<ContainerSetRetryStrategy>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Parse a Go `time.Duration` string such as `1m0s`, `1.5s`, `300ms`, `2h`. `None` for
/// anything else, including a duration too large for [`std::time::Duration`].
pub fn parse_go_duration(s: &str) -> Option<std::time::Duration> {
    let s = s.trim();
    if s == "0" {
        return Some(std::time::Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    std::time::Duration::try_from_secs_f64(total).ok()
}
