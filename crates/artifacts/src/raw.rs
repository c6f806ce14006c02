//! The raw driver: inline artifact data (`raw: {data: …}`), load only; deleting is a no-op
//! (the data lives in the workflow itself), listing is unsupported (as Argo).

use std::path::Path;

use crate::{ArtifactDriver, ArtifactError, ByteStream, Loaded, Opened};

/// Inline data of one artifact.
#[derive(Debug, Clone)]
pub struct RawDriver {
    data: bytes::Bytes,
}

impl RawDriver {
    /// The driver for this data.
    pub fn new(data: &str) -> Self {
        Self {
            data: bytes::Bytes::copy_from_slice(data.as_bytes()),
        }
    }
}

fn read_only() -> ArtifactError {
    ArtifactError::Unsupported {
        driver: "raw",
        action: "save artifacts (raw artifacts are inline data)",
    }
}

impl ArtifactDriver for RawDriver {
    async fn open(&self) -> Result<Opened, ArtifactError> {
        let data = self.data.clone();
        Ok(Opened::Stream {
            size: Some(data.len() as u64),
            body: Box::pin(futures::stream::iter([Ok(data)])),
        })
    }

    async fn load(&self, dest: &Path) -> Result<Loaded, ArtifactError> {
        if let Some(parent) = dest.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| ArtifactError::io("create", parent, e))?;
        }
        tokio::fs::write(dest, &self.data)
            .await
            .map_err(|e| ArtifactError::io("write raw artifact to", dest, e))?;
        Ok(Loaded::File(self.data.len() as u64))
    }

    async fn save(&self, _src: &Path) -> Result<u64, ArtifactError> {
        Err(read_only())
    }

    async fn save_stream(&self, _body: ByteStream) -> Result<u64, ArtifactError> {
        Err(read_only())
    }

    async fn exists(&self) -> Result<bool, ArtifactError> {
        Ok(true)
    }

    async fn list(&self) -> Result<Vec<String>, ArtifactError> {
        Ok(vec![String::new()])
    }

    async fn list_objects(&self) -> Result<Vec<String>, ArtifactError> {
        Err(ArtifactError::Unsupported {
            driver: "raw",
            action: "list objects (as Argo: ListObjects is not supported for raw artifacts)",
        })
    }

    /// Nothing to delete: the data is inline in the workflow.
    async fn delete(&self) -> Result<(), ArtifactError> {
        Ok(())
    }
}
