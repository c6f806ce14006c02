//! The transfer engine shared by the `object_store` drivers (S3, GCS, Azure): one
//! [`StoreDriver`] per artifact location, bound to a store and a key.
//!
//! - `open`: `HEAD`; an object up to one part is one `GET` stream, a larger one parallel
//!   ranges in order ([`download::ordered`]); no object but objects under `key/` is a
//!   directory.
//! - `load`: a file by parallel ranges written in place ([`download::to_file`]); a
//!   directory object by object, `parallelism` at a time, each key checked before it is
//!   written (no absolute paths, no `..`).
//! - `save`: a file or a stream through [`upload::upload`]; a directory file by file in
//!   parallel, all sharing one memory budget.
//!
//! - `delete` and `list_objects`: streaming from a paginated listing ([`gc`]).
//!
//! An empty key (the whole bucket) is accepted only by `list_objects` (Argo's data
//! templates list whole buckets); every other operation refuses it.
//!
//! Errors: the store's NotFound, 401/403 and the rest are mapped to [`ArtifactError`] with
//! the location (`s3://bucket/key`) in the message.

pub mod download;
mod gc;
pub mod upload;

use std::ops::Range;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::{ArtifactDriver, ArtifactError, ByteStream, Loaded, Opened, Progress, Settings};
use download::RangeSource;
use upload::Budget;

/// One artifact location in an object store.
#[derive(Debug, Clone)]
pub struct StoreDriver {
    kind: &'static str,
    store: Arc<dyn ObjectStore>,
    key: Path,
    label: String,
    settings: Arc<Settings>,
}

/// Map an object store error for `action` on `label` (object_store itself turns 401 into
/// `Unauthenticated` and 403 into `PermissionDenied`).
pub fn map_error(label: &str, action: &'static str, e: object_store::Error) -> ArtifactError {
    match e {
        object_store::Error::NotFound { .. } => ArtifactError::NotFound {
            location: label.to_string(),
        },
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            ArtifactError::Denied {
                location: label.to_string(),
                action,
                message: crate::error::chain(&e),
            }
        }
        _ => ArtifactError::Remote {
            location: label.to_string(),
            action,
            message: crate::error::chain(&e),
        },
    }
}

struct StoreRange {
    store: Arc<dyn ObjectStore>,
    key: Path,
    label: String,
}

impl RangeSource for StoreRange {
    fn fetch(&self, range: Range<u64>) -> BoxFuture<'static, Result<Bytes, ArtifactError>> {
        let (store, key, label) = (self.store.clone(), self.key.clone(), self.label.clone());
        Box::pin(async move {
            store
                .get_range(&key, range)
                .await
                .map_err(|e| map_error(&label, "download", e))
        })
    }
}

impl StoreDriver {
    /// Bind `store` and `key` (a `/`-separated object key; a leading `/` is ignored; empty
    /// only for `list_objects`). `kind` (`s3`, `gcs`, `azure`) picks Argo's listing style;
    /// `label` names the location in logs and errors (`s3://bucket/key`).
    ///
    /// # Errors
    /// [`ArtifactError::Config`] for a key with empty, `.` or `..` segments.
    pub fn new(
        kind: &'static str,
        store: Arc<dyn ObjectStore>,
        key: &str,
        label: String,
        settings: Arc<Settings>,
    ) -> Result<Self, ArtifactError> {
        let trimmed = key.trim_start_matches('/').trim_end_matches('/');
        let key =
            Path::parse(trimmed).map_err(|e| ArtifactError::config(kind, format!("key {key:?}: {e}")))?;
        Ok(Self {
            kind,
            store,
            key,
            label,
            settings,
        })
    }

    /// The location, readable.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The key, refused when empty (the whole bucket).
    fn require_key(&self) -> Result<&Path, ArtifactError> {
        if self.key.parts_count() == 0 {
            return Err(ArtifactError::config(self.kind, "the key is empty"));
        }
        Ok(&self.key)
    }

    fn err(&self, action: &'static str) -> impl Fn(object_store::Error) -> ArtifactError + '_ {
        move |e| map_error(&self.label, action, e)
    }

    fn ranges(&self, key: &Path, label: String) -> Arc<dyn RangeSource> {
        Arc::new(StoreRange {
            store: self.store.clone(),
            key: key.clone(),
            label,
        })
    }

    fn progress(&self, what: &'static str, label: &str, total: Option<u64>) -> Arc<Progress> {
        Arc::new(Progress::new(what, label, total, self.settings.progress_interval))
    }

    async fn head(&self) -> Result<Option<ObjectMeta>, ArtifactError> {
        match self.store.head(&self.key).await {
            Ok(m) => Ok(Some(m)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(map_error(&self.label, "look up", e)),
        }
    }

    /// The objects under `key/`, with their keys relative to it.
    async fn children(&self) -> Result<Vec<(String, ObjectMeta)>, ArtifactError> {
        let metas: Vec<ObjectMeta> = self
            .store
            .list(Some(&self.key))
            .try_collect()
            .await
            .map_err(self.err("list"))?;
        let mut out = Vec::with_capacity(metas.len());
        for m in metas {
            let Some(parts) = m.location.prefix_match(&self.key) else {
                continue;
            };
            let rel = parts
                .map(|p| p.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/");
            if rel.is_empty() {
                continue;
            }
            out.push((rel, m));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn not_found(&self) -> ArtifactError {
        ArtifactError::NotFound {
            location: self.label.clone(),
        }
    }

    async fn load_object(
        &self,
        key: &Path,
        label: String,
        size: u64,
        dest: &FsPath,
    ) -> Result<u64, ArtifactError> {
        let progress = self.progress("download", &label, Some(size));
        if size <= self.settings.range_size as u64 {
            let bytes = download::retrying(&self.settings, &label, || async {
                let r = self
                    .store
                    .get(key)
                    .await
                    .map_err(|e| map_error(&label, "download", e))?;
                r.bytes().await.map_err(|e| map_error(&label, "download", e))
            })
            .await?;
            tokio::fs::write(dest, &bytes)
                .await
                .map_err(|e| ArtifactError::io("write", dest, e))?;
            progress.add(bytes.len() as u64);
        } else {
            download::to_file(
                self.ranges(key, label),
                size,
                dest,
                self.settings.clone(),
                progress.clone(),
            )
            .await?;
        }
        Ok(progress.finish())
    }

    async fn load_dir(
        &self,
        children: Vec<(String, ObjectMeta)>,
        dest: &FsPath,
    ) -> Result<usize, ArtifactError> {
        tokio::fs::create_dir_all(dest)
            .await
            .map_err(|e| ArtifactError::io("create", dest, e))?;
        let n = children.len();
        futures::stream::iter(children)
            .map(|(rel, meta)| async move {
                let rel = crate::walk::safe_relative(&rel).map_err(|m| ArtifactError::Remote {
                    location: self.label.clone(),
                    action: "download",
                    message: m,
                })?;
                let out: PathBuf = dest.join(rel);
                if let Some(parent) = out.parent() {
                    tokio::fs::create_dir_all(parent)
                        .await
                        .map_err(|e| ArtifactError::io("create", parent, e))?;
                }
                let label = format!("{}/{rel}", self.label);
                self.load_object(&meta.location, label, meta.size, &out).await
            })
            .buffer_unordered(self.settings.parallelism)
            .try_collect::<Vec<u64>>()
            .await?;
        Ok(n)
    }

    async fn upload(
        &self,
        key: &Path,
        label: &str,
        body: ByteStream,
        size: Option<u64>,
        budget: &Budget,
    ) -> Result<u64, ArtifactError> {
        let progress = self.progress("upload", label, size);
        let owned = label.to_string();
        let map = move |action: &'static str, e: object_store::Error| map_error(&owned, action, e);
        upload::upload(
            self.store.clone(),
            key,
            body,
            size,
            &self.settings,
            budget,
            &progress,
            &map,
        )
        .await?;
        Ok(progress.finish())
    }

    async fn upload_file(
        &self,
        src: &FsPath,
        key: &Path,
        label: &str,
        size: u64,
        budget: &Budget,
    ) -> Result<u64, ArtifactError> {
        let f = tokio::fs::File::open(src)
            .await
            .map_err(|e| ArtifactError::io("open", src, e))?;
        let body = tokio_util::io::ReaderStream::with_capacity(f, 1 << 20);
        self.upload(key, label, Box::pin(body), Some(size), budget).await
    }
}

impl ArtifactDriver for StoreDriver {
    async fn open(&self) -> Result<Opened, ArtifactError> {
        self.require_key()?;
        match self.head().await? {
            Some(meta) if meta.size <= self.settings.range_size as u64 => {
                let r = self.store.get(&self.key).await.map_err(self.err("download"))?;
                let label = self.label.clone();
                let body = r
                    .into_stream()
                    .map_err(move |e| std::io::Error::other(map_error(&label, "download", e)));
                Ok(Opened::Stream {
                    size: Some(meta.size),
                    body: Box::pin(body),
                })
            }
            Some(meta) => {
                let progress = self.progress("download", &self.label, Some(meta.size));
                let body = download::ordered(
                    self.ranges(&self.key, self.label.clone()),
                    meta.size,
                    0,
                    self.settings.clone(),
                    progress,
                );
                Ok(Opened::Stream {
                    size: Some(meta.size),
                    body,
                })
            }
            None if !self.children().await?.is_empty() => Ok(Opened::Directory),
            None => Err(self.not_found()),
        }
    }

    async fn load(&self, dest: &FsPath) -> Result<Loaded, ArtifactError> {
        self.require_key()?;
        if let Some(meta) = self.head().await? {
            if let Some(parent) = dest.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| ArtifactError::io("create", parent, e))?;
            }
            let n = self
                .load_object(&self.key, self.label.clone(), meta.size, dest)
                .await;
            if n.is_err() {
                let _ = tokio::fs::remove_file(dest).await;
            }
            return n.map(Loaded::File);
        }
        let children = self.children().await?;
        if children.is_empty() {
            return Err(self.not_found());
        }
        let r = self.load_dir(children, dest).await;
        if r.is_err() {
            let _ = tokio::fs::remove_dir_all(dest).await;
        }
        r.map(Loaded::Directory)
    }

    async fn save(&self, src: &FsPath) -> Result<u64, ArtifactError> {
        self.require_key()?;
        let meta = tokio::fs::metadata(src)
            .await
            .map_err(|e| ArtifactError::io("stat", src, e))?;
        let budget = Budget::new(self.settings.memory_budget());
        if !meta.is_dir() {
            return self
                .upload_file(src, &self.key, &self.label, meta.len(), &budget)
                .await;
        }
        let root = src.to_path_buf();
        let files = crate::blocking(move || crate::walk::files(&root)).await?;
        let sizes: Vec<u64> = futures::stream::iter(files)
            .map(|f| {
                let budget = budget.clone();
                async move {
                    let key = Path::parse(format!("{}/{}", self.key, f.rel)).map_err(|e| {
                        ArtifactError::Remote {
                            location: self.label.clone(),
                            action: "upload",
                            message: format!("file {:?} makes no valid key: {e}", f.rel),
                        }
                    })?;
                    let label = format!("{}/{}", self.label, f.rel);
                    self.upload_file(&f.path, &key, &label, f.size, &budget).await
                }
            })
            .buffer_unordered(self.settings.parallelism)
            .try_collect()
            .await?;
        Ok(sizes.iter().sum())
    }

    async fn save_stream(&self, body: ByteStream) -> Result<u64, ArtifactError> {
        self.require_key()?;
        let budget = Budget::new(self.settings.memory_budget());
        self.upload(&self.key, &self.label, body, None, &budget).await
    }

    async fn exists(&self) -> Result<bool, ArtifactError> {
        self.require_key()?;
        Ok(self.head().await?.is_some() || !self.children().await?.is_empty())
    }

    async fn list(&self) -> Result<Vec<String>, ArtifactError> {
        self.require_key()?;
        if self.head().await?.is_some() {
            return Ok(vec![String::new()]);
        }
        let c = self.children().await?;
        if c.is_empty() {
            return Err(self.not_found());
        }
        Ok(c.into_iter().map(|(rel, _)| rel).collect())
    }

    async fn list_objects(&self) -> Result<Vec<String>, ArtifactError> {
        self.list_full_keys().await
    }

    async fn delete(&self) -> Result<(), ArtifactError> {
        self.delete_all().await
    }
}
