//! [`ArtifactError`]: what can go wrong moving an artifact, with the location in every
//! message (credentials never appear in one).

use std::path::{Path, PathBuf};

/// Errors of artifact drivers.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The artifact does not exist in the repository (optional artifacts are skipped).
    #[error("artifact not found at {location}")]
    NotFound {
        /// The location, readable (`s3://bucket/key`, a URL, a path).
        location: String,
    },
    /// The location kind has no driver in this build.
    #[error(
        "no artifact driver for {kind:?} locations in this build (available: raw, local, s3, gcs, azure, http, artifactory, plugin)"
    )]
    NoDriver {
        /// The kind (`git`, `hdfs`, …).
        kind: String,
    },
    /// The artifact has no location at all.
    #[error("artifact has no location (raw, local, s3, gcs, azure, http, artifactory, plugin)")]
    NoLocation,
    /// The driver cannot do this (e.g. save to raw).
    #[error("the {driver} driver cannot {action}")]
    Unsupported {
        /// Driver name.
        driver: &'static str,
        /// The operation.
        action: &'static str,
    },
    /// The location is incomplete or invalid (no bucket, a bad endpoint URL, …).
    #[error("invalid {kind} location: {message}")]
    Config {
        /// The kind.
        kind: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A credential could not be read from its mounted secret.
    #[error(
        "cannot read secret {name:?} key {key:?} at {}: {source} (the pod builder mounts every secret an artifact location names into init and wait)",
        path.display()
    )]
    Secret {
        /// Secret name.
        name: String,
        /// Key.
        key: String,
        /// Where it was looked for.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The repository refused the credentials or the operation (HTTP 401/403).
    #[error("access denied at {location} ({action}): {message}")]
    Denied {
        /// The location.
        location: String,
        /// What was being done.
        action: &'static str,
        /// The server's answer, shortened.
        message: String,
    },
    /// Any other repository failure, after retries.
    #[error("{action} {location}: {message}")]
    Remote {
        /// The location.
        location: String,
        /// What was being done.
        action: &'static str,
        /// The error chain.
        message: String,
    },
    /// Deleting a directory artifact left objects behind: the others were deleted (deletion
    /// goes on past a failure), this counts the failures and keeps the first one.
    #[error(
        "{failed} of {attempted} objects at {location} could not be deleted (the others were); the first failure"
    )]
    DeleteFailed {
        /// The artifact's location.
        location: String,
        /// How many objects (the artifact's own key included) could not be deleted.
        failed: usize,
        /// How many objects deletion was attempted on.
        attempted: usize,
        /// The first failure, which names its key.
        #[source]
        first: Box<ArtifactError>,
    },
    /// An artifact plugin failed (its socket never appeared, no connection, or it answered
    /// that the call failed): Argo's `plugin <name> <op> failed: …` wording.
    #[error(transparent)]
    Plugin(#[from] argoexec_artifact_plugin::PluginError),
    /// A local I/O failure.
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

    pub(crate) fn config(kind: &'static str, message: impl Into<String>) -> Self {
        Self::Config {
            kind,
            message: message.into(),
        }
    }
}

/// The full `source()` chain of an error, joined with ": " (object_store and reqwest keep
/// the useful part, such as the HTTP status or the connection error, at the end).
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    if s.len() > 600 {
        let mut cut = 600;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}
