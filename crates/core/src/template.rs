//! The Argo `Template` subset an executor needs.
//!
//! Field names follow Argo's JSON (camelCase). Every struct carries an `extra` map flattened
//! into it, so fields this crate does not model (scheduling, metrics, `podSpecPatch`, …)
//! survive a parse → serialise round trip unchanged. The types are plain data: behaviour that
//! depends on several fields (which paths are on the base layer, which containers are "main")
//! lives in small methods here so every flow uses the same rule.

pub mod container;
pub mod data;
pub mod http;
mod io;
mod location;
mod relocate;
pub mod resource;

pub use container::{
    Container, ContainerNode, ContainerSetRetryStrategy, ContainerSetTemplate, EnvVar, ScriptTemplate,
    UserContainer, VolumeMount,
};
pub use data::{DataSource, DataTemplate, TransformationStep};
pub use http::{HttpBodySource, HttpHeaderSource, HttpRequestHeader, HttpTemplate, SecretKeyRef};
pub use io::{ArchiveKind, ArchiveStrategy, Artifact, Inputs, Outputs, Parameter, TarStrategy, ValueFrom};
pub use location::{
    ArchiveLocation, ArtifactLocation, ArtifactoryArtifact, AzureArtifact, BasicAuth, GcsArtifact,
    HttpArtifact, HttpAuth, HttpHeader, LocalArtifact, RawArtifact, S3Artifact, S3Encryption,
    SecretKeySelector,
};
pub use relocate::RelocateError;
pub use resource::{ManifestFrom, ResourceTemplate};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;

/// Extra, unmodelled JSON fields kept for round trips.
pub type Extra = Map<String, Value>;

/// The main container name of a plain container or script template.
pub const MAIN: &str = "main";
/// The wait container name.
pub const WAIT: &str = "wait";
/// The init container name.
pub const INIT: &str = "init";
/// The init-less layout's auxiliary container, in place of init and wait (Argo v4.1).
pub const SUPERVISOR: &str = "supervisor";

/// An Argo workflow template, as the executor receives it (fully resolved by the controller).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    /// Template name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Inputs (parameters and artifacts).
    #[serde(default, skip_serializing_if = "Inputs::is_empty")]
    pub inputs: Inputs,
    /// Outputs to capture.
    #[serde(default, skip_serializing_if = "Outputs::is_empty")]
    pub outputs: Outputs,
    /// A plain container template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Container>,
    /// A script template (a container plus `source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptTemplate>,
    /// A container set (several main containers with dependencies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_set: Option<ContainerSetTemplate>,
    /// A resource template (`argoexec resource` in main).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceTemplate>,
    /// A data template (`argoexec data` in main).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataTemplate>,
    /// An HTTP template (run by the agent pod, `argoexec agent main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTemplate>,
    /// An executor-plugin template: one key, the plugin's name, over the plugin's own
    /// configuration (run by the agent pod through the plugin's sidecar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<Value>,
    /// Sidecars started with the main container(s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sidecars: Vec<UserContainer>,
    /// Init containers declared by the user.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<UserContainer>,
    /// Pod volumes declared on the template (kept as raw Kubernetes JSON).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Value>,
    /// Where outputs and logs are archived by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_location: Option<ArchiveLocation>,
    /// Template deadline in seconds (an int or a string in Argo's JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<Value>,
    /// Everything else, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Template {
    /// Parse a template from JSON text.
    ///
    /// # Errors
    /// The serde error, whose text names the offending line and column.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Serialise back to compact JSON (unknown fields included).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }

    /// The names of the main containers: the container-set names, or `["main"]`.
    pub fn main_container_names(&self) -> Vec<String> {
        match &self.container_set {
            Some(cs) if !cs.containers.is_empty() => {
                cs.containers.iter().map(|c| c.container.name.clone()).collect()
            }
            _ => vec![MAIN.to_string()],
        }
    }

    /// Volume mounts of the main container(s): the container's or script's, or the union of a
    /// container set's, plus the container set's shared `volumeMounts`.
    pub fn main_volume_mounts(&self) -> Vec<VolumeMount> {
        let mut v = Vec::new();
        if let Some(c) = &self.container {
            v.extend(c.volume_mounts.iter().cloned());
        }
        if let Some(s) = &self.script {
            v.extend(s.container.volume_mounts.iter().cloned());
        }
        if let Some(cs) = &self.container_set {
            v.extend(cs.volume_mounts.iter().cloned());
            for c in &cs.containers {
                v.extend(c.container.volume_mounts.iter().cloned());
            }
        }
        v
    }

    /// The deepest volume mount that contains `path`, if any (Argo's `FindOverlappingVolume`).
    pub fn overlapping_volume(&self, path: &Path) -> Option<VolumeMount> {
        self.main_volume_mounts()
            .into_iter()
            .filter(|m| crate::paths::is_under(path, Path::new(&m.mount_path)))
            .max_by_key(|m| crate::paths::clean(Path::new(&m.mount_path)).components().count())
    }

    /// A volume mount strictly below `path`, if any (Argo's
    /// `FindVolumeMountNestedUnderPath`): replacing `path` would clear that volume.
    pub fn volume_nested_under(&self, path: &Path) -> Option<VolumeMount> {
        let base = crate::paths::clean(path);
        self.main_volume_mounts().into_iter().find(|m| {
            let mp = crate::paths::clean(Path::new(&m.mount_path));
            mp != base && crate::paths::is_under(&mp, &base)
        })
    }

    /// Argo's `isBaseImagePath`: true unless `path` lies under a volume mount of the template,
    /// or equals / lies under the path of a *supplied* input artifact. An optional input
    /// artifact that was not supplied does not count.
    pub fn is_base_layer_path(&self, path: &Path) -> bool {
        self.is_base_layer_path_in(path, crate::ready::PodLayout::Legacy)
    }

    /// [`Self::is_base_layer_path`] for a pod layout. In the init-less layout an input
    /// artifact's path is a symlink on main's own file system (main's wrapper made it), so a
    /// path under it is on the base layer too: only volume mounts count (Argo v4.1's
    /// `isBaseImagePath` under `ARGO_INITLESS_POD`).
    pub fn is_base_layer_path_in(&self, path: &Path, layout: crate::ready::PodLayout) -> bool {
        if self.overlapping_volume(path).is_some() {
            return false;
        }
        if layout == crate::ready::PodLayout::Initless {
            return true;
        }
        !self.inputs.artifacts.iter().any(|a| {
            a.path
                .as_deref()
                .is_some_and(|p| crate::paths::is_under(path, Path::new(p)))
                && (a.is_supplied() || !a.optional)
        })
    }

    /// True for templates whose main has a result worth capturing (container, script, or a
    /// container set with a container named `main`).
    pub fn has_capturable_result(&self) -> bool {
        self.container.is_some()
            || self.script.is_some()
            || self
                .container_set
                .as_ref()
                .is_some_and(|cs| cs.containers.iter().any(|c| c.container.name == MAIN))
    }

    /// Whether `archiveLocation.archiveLogs` is set.
    pub fn archive_logs(&self) -> bool {
        self.archive_location
            .as_ref()
            .and_then(|a| a.archive_logs)
            .unwrap_or(false)
    }

    /// The container-set node of a named container, if this is a container set.
    pub fn container_set_node(&self, name: &str) -> Option<&ContainerNode> {
        self.container_set
            .as_ref()?
            .containers
            .iter()
            .find(|c| c.container.name == name)
    }
}

#[cfg(test)]
mod tests;
