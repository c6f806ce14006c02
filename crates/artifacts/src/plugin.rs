//! [`PluginDriver`]: an artifact whose location is `plugin: {name, configuration, key}`
//! (Argo v4.0+), moved by the plugin's own container through its gRPC service on
//! `/tmp/artifact-plugins/<name>/socket`.
//!
//! The plugin reads and writes the paths it is given in its own container, so every path
//! handed to it must be one both containers see: the pod builder mounts the output staging
//! directory (`/tmp/argo/outputs`), the input-artifacts volume and main's volume mirrors
//! into the plugin's container. As Argo, each operation opens its own connection and the
//! plugin's answers are never read as "not found" (an optional input a plugin cannot load
//! fails the step, as it does in Argo).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use argoexec_artifact_plugin::{PluginClient, convert, wire};
use argoexec_core::template::{Artifact, ArtifactLocation};
use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::{ArtifactDriver, ArtifactError, ByteStream, Loaded, Opened, Settings};

/// One artifact of one plugin.
#[derive(Debug, Clone)]
pub struct PluginDriver {
    art: wire::Artifact,
    name: String,
    socket: PathBuf,
    timeout: Duration,
    settings: Arc<Settings>,
}

impl PluginDriver {
    /// The driver for `art` at `location` (its location after relocation onto the archive
    /// location: the plugin receives the artifact's own fields with this location).
    ///
    /// # Errors
    /// [`ArtifactError::Config`] when the location has no plugin name.
    pub fn new(
        art: &Artifact,
        location: &ArtifactLocation,
        settings: &Arc<Settings>,
    ) -> Result<Self, ArtifactError> {
        let mut with = art.clone();
        with.location = location.clone();
        let wire = convert::to_wire(&with);
        let plugin = wire.plugin.clone().unwrap_or_default();
        if plugin.name.is_empty() {
            return Err(ArtifactError::config("plugin", "the location names no plugin"));
        }
        let socket = settings
            .paths
            .rooted(argoexec_artifact_plugin::socket_path(&plugin.name));
        Ok(Self {
            timeout: Duration::from_secs(u64::try_from(plugin.connection_timeout_seconds).unwrap_or(0)),
            name: plugin.name,
            socket,
            art: wire,
            settings: Arc::clone(settings),
        })
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.name
    }

    async fn client(&self) -> Result<PluginClient, ArtifactError> {
        Ok(PluginClient::connect(
            &self.name,
            &self.socket,
            self.timeout,
            self.settings.plugin_socket_wait,
        )
        .await?)
    }
}

/// Bytes and files under `p` (a file: its size, one file).
fn measure(p: &Path) -> Result<(u64, usize, bool), ArtifactError> {
    let meta = std::fs::metadata(p).map_err(|e| ArtifactError::io("stat", p, e))?;
    if !meta.is_dir() {
        return Ok((meta.len(), 1, false));
    }
    let (mut bytes, mut files) = (0, 0);
    for entry in std::fs::read_dir(p).map_err(|e| ArtifactError::io("read", p, e))? {
        let entry = entry.map_err(|e| ArtifactError::io("read", p, e))?;
        let (b, f, _) = measure(&entry.path())?;
        bytes += b;
        files += f;
    }
    Ok((bytes, files, true))
}

impl ArtifactDriver for PluginDriver {
    /// A plugin only writes artifacts to paths (Argo's executor never streams from one).
    async fn open(&self) -> Result<Opened, ArtifactError> {
        Ok(Opened::PathOnly)
    }

    async fn load(&self, dest: &Path) -> Result<Loaded, ArtifactError> {
        self.client().await?.load(self.art.clone(), dest).await?;
        let (bytes, files, dir) = measure(dest)?;
        Ok(if dir {
            Loaded::Directory(files)
        } else {
            Loaded::File(bytes)
        })
    }

    async fn save(&self, src: &Path) -> Result<u64, ArtifactError> {
        let (bytes, _, _) = measure(src)?;
        self.client().await?.save(src, self.art.clone()).await?;
        Ok(bytes)
    }

    /// Spooled to a file in the output staging directory (which the plugin's container
    /// shares), then saved; the file is removed either way.
    async fn save_stream(&self, mut body: ByteStream) -> Result<u64, ArtifactError> {
        let dir = self.settings.paths.output_artifact_staging();
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| ArtifactError::io("create", &dir, e))?;
        let spool = dir.join(format!(".{}.plugin-upload", self.art.name));
        let written = async {
            let mut f = tokio::fs::File::create(&spool)
                .await
                .map_err(|e| ArtifactError::io("create", &spool, e))?;
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| ArtifactError::io("read the upload for", &spool, e))?;
                f.write_all(&chunk)
                    .await
                    .map_err(|e| ArtifactError::io("write", &spool, e))?;
            }
            f.flush()
                .await
                .map_err(|e| ArtifactError::io("write", &spool, e))?;
            self.save(&spool).await
        }
        .await;
        let _ = tokio::fs::remove_file(&spool).await;
        written
    }

    /// Whether the plugin lists anything at the key.
    async fn exists(&self) -> Result<bool, ArtifactError> {
        Ok(!self.list_objects().await?.is_empty())
    }

    async fn list(&self) -> Result<Vec<String>, ArtifactError> {
        let key = self
            .art
            .plugin
            .as_ref()
            .map(|p| p.key.clone())
            .unwrap_or_default();
        let objects = self.list_objects().await?;
        Ok(objects
            .into_iter()
            .map(|o| match o.strip_prefix(key.as_str()) {
                Some(rest) => rest.trim_start_matches('/').to_string(),
                None => o,
            })
            .collect())
    }

    async fn list_objects(&self) -> Result<Vec<String>, ArtifactError> {
        Ok(self.client().await?.list_objects(self.art.clone()).await?)
    }

    async fn delete(&self) -> Result<(), ArtifactError> {
        Ok(self.client().await?.delete(self.art.clone()).await?)
    }
}
