//! The raw driver: inline artifact data (`raw: {data: …}`), load only.

use super::{ArtifactDriver, ArtifactError};
use argoexec_core::template::ArtifactLocation;
use std::path::Path;

/// Writes inline data to the destination.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawDriver;

impl ArtifactDriver for RawDriver {
    async fn load(&self, loc: &ArtifactLocation, dest: &Path) -> Result<(), ArtifactError> {
        let raw = loc.raw.as_ref().ok_or(ArtifactError::NoLocation)?;
        if let Some(parent) = dest.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| ArtifactError::io("create", parent, e))?;
        }
        tokio::fs::write(dest, raw.data.as_bytes())
            .await
            .map_err(|e| ArtifactError::io("write raw artifact to", dest, e))
    }

    async fn save(&self, _src: &Path, _loc: &ArtifactLocation) -> Result<(), ArtifactError> {
        Err(ArtifactError::Unsupported {
            driver: "raw",
            action: "save artifacts",
        })
    }
}
