//! [`AnyDriver`]: the driver for a location, chosen by its kind, behind one type.

use std::path::Path;
use std::sync::Arc;

use argoexec_core::template::{Artifact, ArtifactLocation};

use crate::http::HttpDriver;
use crate::local::LocalDriver;
use crate::plugin::PluginDriver;
use crate::raw::RawDriver;
use crate::store::StoreDriver;
use crate::{ArtifactDriver, ArtifactError, ByteStream, Loaded, Opened, Settings};

/// Every built driver, bound to one location.
#[derive(Debug, Clone)]
pub enum AnyDriver {
    /// Inline data.
    Raw(RawDriver),
    /// Local filesystem.
    Local(LocalDriver),
    /// S3, GCS or Azure Blob.
    Store(StoreDriver),
    /// HTTP(S) or Artifactory.
    Http(HttpDriver),
    /// An artifact plugin.
    Plugin(PluginDriver),
}

impl AnyDriver {
    /// The driver for artifact `art` at `loc` (its location, relocated): as
    /// [`Self::for_location`], except that a plugin receives the artifact's own fields
    /// (name, path, mode, …) beside the location, as Argo sends them.
    ///
    /// # Errors
    /// As [`Self::for_location`].
    pub fn for_artifact(
        art: &Artifact,
        loc: &ArtifactLocation,
        settings: &Arc<Settings>,
    ) -> Result<Self, ArtifactError> {
        if loc.extra.contains_key("plugin") {
            return PluginDriver::new(art, loc, settings).map(Self::Plugin);
        }
        Self::for_location(loc, settings)
    }

    /// Whether this is an artifact plugin's driver (which reads and writes paths in its own
    /// container).
    pub fn is_plugin(&self) -> bool {
        matches!(self, Self::Plugin(_))
    }

    /// The driver for `loc`.
    ///
    /// # Errors
    /// [`ArtifactError::NoLocation`], [`ArtifactError::NoDriver`], or the driver's
    /// configuration error (missing bucket, unreadable secret, …).
    pub fn for_location(loc: &ArtifactLocation, settings: &Arc<Settings>) -> Result<Self, ArtifactError> {
        if let Some(r) = &loc.raw {
            return Ok(Self::Raw(RawDriver::new(&r.data)));
        }
        if let Some(l) = &loc.local {
            return Ok(Self::Local(LocalDriver::new(&l.path)));
        }
        if let Some(s3) = &loc.s3 {
            return crate::s3::driver(s3, settings).map(Self::Store);
        }
        if let Some(g) = &loc.gcs {
            return crate::gcs::driver(g, settings).map(Self::Store);
        }
        if let Some(a) = &loc.azure {
            return crate::azure::driver(a, settings).map(Self::Store);
        }
        if let Some(h) = &loc.http {
            return HttpDriver::http(h, settings).map(Self::Http);
        }
        if let Some(a) = &loc.artifactory {
            return HttpDriver::artifactory(a, settings).map(Self::Http);
        }
        if loc.extra.contains_key("plugin") {
            return PluginDriver::new(&Artifact::default(), loc, settings).map(Self::Plugin);
        }
        match loc.kind_name() {
            Some(other) => Err(ArtifactError::NoDriver {
                kind: other.to_string(),
            }),
            None => Err(ArtifactError::NoLocation),
        }
    }
}

macro_rules! each {
    ($self:ident, $d:ident => $e:expr) => {
        match $self {
            Self::Raw($d) => $e,
            Self::Local($d) => $e,
            Self::Store($d) => $e,
            Self::Http($d) => $e,
            Self::Plugin($d) => $e,
        }
    };
}

impl ArtifactDriver for AnyDriver {
    async fn open(&self) -> Result<Opened, ArtifactError> {
        each!(self, d => d.open().await)
    }
    async fn load(&self, dest: &Path) -> Result<Loaded, ArtifactError> {
        each!(self, d => d.load(dest).await)
    }
    async fn save(&self, src: &Path) -> Result<u64, ArtifactError> {
        each!(self, d => d.save(src).await)
    }
    async fn save_stream(&self, body: ByteStream) -> Result<u64, ArtifactError> {
        each!(self, d => d.save_stream(body).await)
    }
    async fn exists(&self) -> Result<bool, ArtifactError> {
        each!(self, d => d.exists().await)
    }
    async fn list(&self) -> Result<Vec<String>, ArtifactError> {
        each!(self, d => d.list().await)
    }
    async fn list_objects(&self) -> Result<Vec<String>, ArtifactError> {
        each!(self, d => d.list_objects().await)
    }
    async fn delete(&self) -> Result<(), ArtifactError> {
        each!(self, d => d.delete().await)
    }
}
