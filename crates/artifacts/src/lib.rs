//! Artifact drivers behind one trait, [`ArtifactDriver`].
//!
//! A driver moves bytes between a repository location and a local path. In this crate:
//! [`raw`] (inline data, load only) and [`local`] (a reachable filesystem path; the
//! argoexec-rs extension `local:` used by `argoexec run`). S3 and the other repositories come
//! behind the same trait later. [`AnyDriver`] selects a driver from a location, and a
//! location kind without a driver is a clear [`ArtifactError::NoDriver`], never a silent skip.

pub mod local;
pub mod raw;

use std::future::Future;
use std::path::{Path, PathBuf};

use argoexec_core::template::ArtifactLocation;

/// Errors of artifact drivers.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The artifact does not exist in the repository (optional artifacts are skipped).
    #[error("artifact not found at {location}")]
    NotFound {
        /// The location, readable.
        location: String,
    },
    /// The location kind has no driver in this build.
    #[error("no artifact driver for {kind:?} locations in this build (available: raw, local)")]
    NoDriver {
        /// The kind (`gcs`, `http`, …).
        kind: String,
    },
    /// The artifact has no location at all.
    #[error("artifact has no location (raw, local, s3, …)")]
    NoLocation,
    /// The driver cannot do this (e.g. save to raw).
    #[error("the {driver} driver cannot {action}")]
    Unsupported {
        /// Driver name.
        driver: &'static str,
        /// The operation.
        action: &'static str,
    },
    /// An I/O failure.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl ArtifactError {
    /// True for [`ArtifactError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Moves artifacts between a repository location and local paths.
pub trait ArtifactDriver: Send + Sync {
    /// Download the artifact at `loc` to `dest` (a file, or a directory for directory
    /// artifacts). `dest` must not exist yet.
    ///
    /// # Errors
    /// [`ArtifactError::NotFound`] when absent, otherwise a driver error.
    fn load(
        &self,
        loc: &ArtifactLocation,
        dest: &Path,
    ) -> impl Future<Output = Result<(), ArtifactError>> + Send;

    /// Upload the file or directory `src` to `loc`.
    ///
    /// # Errors
    /// A driver error; nothing is left at `loc` looking complete on failure.
    fn save(
        &self,
        src: &Path,
        loc: &ArtifactLocation,
    ) -> impl Future<Output = Result<(), ArtifactError>> + Send;
}

/// Every built driver.
#[derive(Debug, Clone, Copy)]
pub enum AnyDriver {
    /// Inline data.
    Raw(raw::RawDriver),
    /// Local filesystem.
    Local(local::LocalDriver),
}

impl AnyDriver {
    /// The driver for `loc`.
    ///
    /// # Errors
    /// [`ArtifactError::NoLocation`] or [`ArtifactError::NoDriver`].
    pub fn for_location(loc: &ArtifactLocation) -> Result<Self, ArtifactError> {
        match loc.kind_name() {
            Some("raw") => Ok(Self::Raw(raw::RawDriver)),
            Some("local") => Ok(Self::Local(local::LocalDriver)),
            Some(other) => Err(ArtifactError::NoDriver {
                kind: other.to_string(),
            }),
            None => Err(ArtifactError::NoLocation),
        }
    }
}

impl ArtifactDriver for AnyDriver {
    async fn load(&self, loc: &ArtifactLocation, dest: &Path) -> Result<(), ArtifactError> {
        match self {
            Self::Raw(d) => d.load(loc, dest).await,
            Self::Local(d) => d.load(loc, dest).await,
        }
    }
    async fn save(&self, src: &Path, loc: &ArtifactLocation) -> Result<(), ArtifactError> {
        match self {
            Self::Raw(d) => d.save(src, loc).await,
            Self::Local(d) => d.save(src, loc).await,
        }
    }
}
