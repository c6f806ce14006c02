//! Argo's `ResourceTemplate` (`template.resource`): a Kubernetes object to get, create,
//! apply, delete, replace or patch from the step's pod, with conditions to wait for.

use serde::{Deserialize, Serialize};

use super::{Artifact, Extra};

/// `template.resource`. Field names are Argo's JSON (`workflow_types.go`, `ResourceTemplate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// `get | create | apply | delete | replace | patch`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    /// For `patch`: `strategic` (the default), `merge` or `json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_strategy: Option<String>,
    /// The manifest (YAML or JSON), staged by init at `/tmp/manifest.yaml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// The manifest from an input artifact instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_from: Option<ManifestFrom>,
    /// Make the workflow the object's owner (the controller adds the reference).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub set_owner_reference: bool,
    /// Label-selector syntax over JSON paths of the object: all must match for success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_condition: Option<String>,
    /// Label-selector syntax over JSON paths of the object: any match fails the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_condition: Option<String>,
    /// Extra kubectl flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Everything else, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resource.manifestFrom`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestFrom {
    /// The input artifact (by name) whose file is the manifest.
    pub artifact: Artifact,
    /// Everything else, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ResourceTemplate {
    /// The `patch` merge strategy, `strategic` when unset.
    pub fn merge_strategy(&self) -> &str {
        self.merge_strategy.as_deref().unwrap_or("strategic")
    }
}
