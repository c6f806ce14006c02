//! `data.source.artifactPaths`: the keys under an artifact location, as Argo's
//! `ArtifactDriver.ListObjects` returns them — full keys (`prefix/dir/file`, not relative to
//! the artifact), so a later step can use each as an artifact `key`.
//!
//! Until `crates/artifacts` offers `ArtifactDriver::list_objects` (Argo's `ListObjects`
//! semantics), the keys are built here from [`ArtifactDriver::list`]: the artifact's key
//! joined with each listed relative name; a single object lists as its own key. An empty key
//! (a whole bucket, as Argo's `examples/data-transformations.yaml` lists it) needs
//! `list_objects`; the store drivers refuse an empty key today.

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
    let driver = AnyDriver::for_location(&loc, settings)?;
    // TODO(list_objects): call `driver.list_objects()` (ArtifactDriver::list_objects, Argo's
    // ListObjects with full keys) once crates/artifacts has it, and drop `full_keys`.
    let relative = driver.list().await?;
    Ok(full_keys(&loc.key().unwrap_or_default(), relative))
}

/// `key` joined with each relative name (`""`, a single object, is `key` itself).
pub fn full_keys(key: &str, relative: Vec<String>) -> Vec<String> {
    let base = key.trim_end_matches('/');
    let mut keys: Vec<String> = relative
        .into_iter()
        .map(|rel| match (base.is_empty(), rel.is_empty()) {
            (_, true) => base.to_string(),
            (true, false) => rel,
            (false, false) => format!("{base}/{rel}"),
        })
        .collect();
    keys.sort();
    keys
}

#[cfg(test)]
mod tests {
    use super::full_keys;

    #[test]
    fn keys_are_full() {
        assert_eq!(
            full_keys("wf/out/", vec!["b/c".into(), "a".into()]),
            ["wf/out/a", "wf/out/b/c"]
        );
        assert_eq!(full_keys("wf/x.tgz", vec![String::new()]), ["wf/x.tgz"]);
        assert_eq!(full_keys("", vec!["a".into()]), ["a"]);
    }
}
