//! `data.source.artifactPaths`: the keys under an artifact location, as Argo's
//! `ArtifactDriver.ListObjects` returns them — full keys (`prefix/dir/file`, not relative to
//! the artifact), so a later step can use each as an artifact `key`. The driver's
//! [`ArtifactDriver::list_objects`] has Argo's per-provider rules (an S3 file key lists as
//! `[]`, nothing there is NotFound; an empty key lists the whole bucket, as Argo's
//! `examples/data-transformations.yaml` does).

use std::sync::Arc;

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, Settings};
use argoexec_core::template::{Artifact, ArtifactLocation, RelocateError};

/// Why the keys could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The artifact is key-only and could not take the archive location.
    #[error("cannot relocate the artifact onto the archive location")]
    Relocate(#[source] RelocateError),
    /// The driver could not be built or could not list.
    #[error(transparent)]
    Driver(#[from] ArtifactError),
}

/// The full keys under `artifact` (relocated onto `archive` when key-only), sorted.
///
/// # Errors
/// [`SourceError`]; an absent location is the driver's NotFound, as Argo's.
pub async fn artifact_paths(
    artifact: &Artifact,
    archive: Option<&ArtifactLocation>,
    settings: &Arc<Settings>,
) -> Result<Vec<String>, SourceError> {
    let loc = artifact
        .location
        .relocate(archive)
        .map_err(SourceError::Relocate)?;
    // A plugin source is listed through the plugin's socket, as Argo's `ListObjects`; no
    // controller version gives a data pod a plugin sidecar, so without one this is the
    // socket wait's failure naming the socket (Argo's behaviour, kept).
    let driver = AnyDriver::for_artifact(artifact, &loc, settings)?;
    Ok(driver.list_objects().await?)
}
