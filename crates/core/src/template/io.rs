//! Inputs and outputs of a template: parameters, artifacts, archive strategies.

use super::Extra;
use super::location::ArtifactLocation;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A parameter (input or output).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Parameter {
    /// Parameter name.
    pub name: String,
    /// The value (inputs: bound by the controller; outputs: captured by wait).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Allowed values.
    #[serde(default, rename = "enum", skip_serializing_if = "Vec::is_empty")]
    pub enum_values: Vec<String>,
    /// Where an output parameter's value comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<ValueFrom>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `valueFrom` of an output parameter (only `path` and `default` concern the executor).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValueFrom {
    /// File to read the value from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Value used when reading fails. May be the empty string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Resource templates: a kubectl JSONPath template over the object (`{.status.phase}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    /// Resource templates: a jq filter over the object's JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jq_filter: Option<String>,
    /// Everything else (`expression`, `supplied`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `archive.tar` options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TarStrategy {
    /// Gzip level: -1 default, 0 none, 1–9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression_level: Option<i32>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An artifact's `archive` field: exactly one of `tar`, `none`, `zip` is expected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveStrategy {
    /// tar + gzip (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tar: Option<TarStrategy>,
    /// No archiving: upload as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none: Option<Value>,
    /// Zip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zip: Option<Value>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A resolved archive choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveKind {
    /// tar + gzip at a level (`None` = default).
    TarGz(Option<i32>),
    /// Upload raw.
    None,
    /// Zip.
    Zip,
}

impl ArchiveStrategy {
    /// Which strategy this is; `tar` wins when several are set, as in Argo.
    pub fn kind(&self) -> ArchiveKind {
        if let Some(t) = &self.tar {
            ArchiveKind::TarGz(t.compression_level)
        } else if self.none.is_some() {
            ArchiveKind::None
        } else if self.zip.is_some() {
            ArchiveKind::Zip
        } else {
            ArchiveKind::TarGz(None)
        }
    }
}

/// An artifact (input or output).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Artifact name.
    pub name: String,
    /// Path inside the main container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// File mode applied after loading (inputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Apply `mode` recursively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurse_mode: Option<bool>,
    /// Missing artifacts are skipped instead of failing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Archive strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveStrategy>,
    /// Where the artifact lives (raw, s3, local, …), inlined as in Argo.
    #[serde(flatten)]
    pub location: ArtifactLocation,
}

impl Artifact {
    /// True when the artifact has a complete location or at least a key to relocate onto the
    /// archive location (Argo's `HasLocationOrKey`); otherwise it was not supplied.
    pub fn is_supplied(&self) -> bool {
        self.location.is_complete() || self.location.has_key()
    }

    /// The resolved archive strategy (tar+gzip when absent).
    pub fn archive_kind(&self) -> ArchiveKind {
        self.archive
            .as_ref()
            .map(ArchiveStrategy::kind)
            .unwrap_or(ArchiveKind::TarGz(None))
    }
}

/// Template inputs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inputs {
    /// Input parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    /// Input artifacts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Inputs {
    /// True when nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.parameters.is_empty() && self.artifacts.is_empty() && self.extra.is_empty()
    }
}

/// Template outputs, and the reported outputs (same shape in Argo).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outputs {
    /// Output parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    /// Output artifacts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The script/container result (stdout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The main container's exit code, as a decimal string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Outputs {
    /// True when nothing is declared or captured.
    pub fn is_empty(&self) -> bool {
        self.parameters.is_empty()
            && self.artifacts.is_empty()
            && self.result.is_none()
            && self.exit_code.is_none()
            && self.extra.is_empty()
    }
}
