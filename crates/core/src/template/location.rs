//! Artifact locations: where an artifact's bytes live.
//!
//! Argo inlines exactly one location kind (`s3`, `gcs`, `raw`, `http`, …) into the artifact.
//! This module models the kinds argoexec-rs has drivers for and keeps the others as raw JSON
//! in `extra`, so they round-trip and produce a clear "no driver" error instead of vanishing.
//!
//! `local` is an argoexec-rs extension (no Argo version has it): a path on a filesystem the
//! executor can reach, used by `argoexec run` as its local artifact repository.

use super::Extra;
use serde::{Deserialize, Serialize};

/// Inline artifact data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawArtifact {
    /// The content.
    pub data: String,
}

/// A path on a reachable filesystem (argoexec-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalArtifact {
    /// Absolute path of the file or directory.
    pub path: String,
}

/// An S3 location (modelled for key derivation; the driver comes with the artifacts issue).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct S3Artifact {
    /// Object key.
    #[serde(default)]
    pub key: String,
    /// Everything else (bucket, endpoint, credentials secrets, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The location part of an artifact, inlined into [`super::Artifact`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactLocation {
    /// Inline data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawArtifact>,
    /// Local filesystem (argoexec-rs extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalArtifact>,
    /// S3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Artifact>,
    /// Everything else, including location kinds without a driver (gcs, http, git, …) and
    /// non-location artifact fields (`from`, `globalName`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Location kinds Argo knows; used to tell "has a location" from "only metadata".
pub const KNOWN_KINDS: &[&str] = &[
    "raw",
    "local",
    "s3",
    "gcs",
    "azure",
    "http",
    "git",
    "hdfs",
    "oss",
    "artifactory",
    "plugin",
];

impl ArtifactLocation {
    /// True when some location kind is present.
    pub fn has_location(&self) -> bool {
        self.raw.is_some()
            || self.local.is_some()
            || self.s3.is_some()
            || KNOWN_KINDS.iter().any(|k| self.extra.contains_key(*k))
    }

    /// The name of the location kind present (`raw`, `local`, `s3`, `gcs`, …).
    pub fn kind_name(&self) -> Option<&str> {
        if self.raw.is_some() {
            Some("raw")
        } else if self.local.is_some() {
            Some("local")
        } else if self.s3.is_some() {
            Some("s3")
        } else {
            KNOWN_KINDS.iter().copied().find(|k| self.extra.contains_key(*k))
        }
    }

    /// Derive the location of an output called `file_name` under this archive location:
    /// the key (or path) becomes `<key>/<file_name>`, as Argo does for artifacts without a
    /// key. Returns `None` when this location has no keyed kind we model.
    pub fn child(&self, file_name: &str) -> Option<ArtifactLocation> {
        let join = |base: &str| {
            let base = base.trim_end_matches('/');
            if base.is_empty() {
                file_name.to_string()
            } else {
                format!("{base}/{file_name}")
            }
        };
        if let Some(l) = &self.local {
            return Some(ArtifactLocation {
                local: Some(LocalArtifact { path: join(&l.path) }),
                ..Default::default()
            });
        }
        if let Some(s3) = &self.s3 {
            return Some(ArtifactLocation {
                s3: Some(S3Artifact {
                    key: join(&s3.key),
                    extra: s3.extra.clone(),
                }),
                ..Default::default()
            });
        }
        None
    }
}

/// `archiveLocation` of a template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveLocation {
    /// Archive the main container logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_logs: Option<bool>,
    /// The repository location outputs default to.
    #[serde(flatten)]
    pub location: ArtifactLocation,
}
