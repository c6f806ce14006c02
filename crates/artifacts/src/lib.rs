//! Artifact drivers behind one trait, [`ArtifactDriver`], each bound to one location.
//!
//! [`AnyDriver::for_location`] picks the driver for an Argo artifact location: [`raw`]
//! (inline data, load only), [`local`] (a reachable filesystem path; the argoexec-rs
//! extension used by `argoexec run`), [`s3`], [`gcs`] and [`azure`] (on `object_store`, via
//! the shared [`store`] transfer engine) and [`http`] (HTTP(S) and Artifactory: GET to load,
//! PUT to save) and [`plugin`] (Argo v4.0+ artifact plugins, over their gRPC socket). A
//! location kind without a driver (git, hdfs, oss) is a clear
//! [`ArtifactError::NoDriver`], never a silent skip.
//!
//! Transfers stream: uploads go part by part into multipart uploads with at most
//! part size × parallelism bytes in memory ([`Settings`]); large downloads are fetched as
//! parallel ranges, either written in place ([`ArtifactDriver::load`]) or delivered in order
//! as a stream ([`ArtifactDriver::open`]) for extraction while downloading. Transient errors
//! are retried with backoff; 401/403 become [`ArtifactError::Denied`], absence
//! [`ArtifactError::NotFound`]. A failed save never leaves a complete-looking object.
//!
//! For artifact GC and data templates: [`ArtifactDriver::delete`] removes a whole artifact
//! (store drivers stream their listing into parallel batch deletes and report partial
//! failures as [`ArtifactError::DeleteFailed`]); [`ArtifactDriver::list_objects`] is Argo's
//! `ListObjects` (full keys, each provider as Argo v4.1.2 answers).

mod any;
pub mod azure;
mod client;
mod error;
pub mod gcs;
pub mod http;
pub mod local;
pub mod pipe;
pub mod plugin;
mod progress;
pub mod raw;
pub mod s3;
mod settings;
pub mod store;
pub mod walk;

use std::future::Future;
use std::path::Path;

pub use any::AnyDriver;
pub use error::ArtifactError;
pub use progress::Progress;
pub use settings::{Codec, MIN_PART_SIZE, Settings, UploadChecksum, parse_size};

/// A stream of bytes (an artifact being read, or produced for upload).
pub type ByteStream = futures::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>;

/// What [`ArtifactDriver::open`] found.
pub enum Opened {
    /// A single object, as a stream (in order), with its size when known.
    Stream {
        /// Total size in bytes, when the repository said.
        size: Option<u64>,
        /// The content.
        body: ByteStream,
    },
    /// A directory artifact (a key prefix with objects under it): use
    /// [`ArtifactDriver::load`].
    Directory,
    /// The driver only writes artifacts to a path (an artifact plugin, which may answer with
    /// a file or a directory): use [`ArtifactDriver::load`].
    PathOnly,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stream { size, .. } => f.debug_struct("Stream").field("size", size).finish(),
            Self::Directory => f.write_str("Directory"),
            Self::PathOnly => f.write_str("PathOnly"),
        }
    }
}

/// What [`ArtifactDriver::load`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loaded {
    /// One file, of this many bytes.
    File(u64),
    /// A directory tree with this many files.
    Directory(usize),
}

/// Moves one artifact between its repository location and local paths.
pub trait ArtifactDriver: Send + Sync {
    /// Open the artifact for reading in order (streaming extraction).
    ///
    /// # Errors
    /// [`ArtifactError::NotFound`] when absent, otherwise a driver error.
    fn open(&self) -> impl Future<Output = Result<Opened, ArtifactError>> + Send;

    /// Download the artifact to `dest` (a file, or a directory for directory artifacts);
    /// `dest` must not exist yet. Partial output is removed on failure.
    ///
    /// # Errors
    /// [`ArtifactError::NotFound`] when absent, otherwise a driver error.
    fn load(&self, dest: &Path) -> impl Future<Output = Result<Loaded, ArtifactError>> + Send;

    /// Upload the file or directory `src` (a directory: every regular file under it, each
    /// its own object, in parallel). Returns the bytes sent.
    ///
    /// # Errors
    /// A driver error; nothing is left at the location looking complete.
    fn save(&self, src: &Path) -> impl Future<Output = Result<u64, ArtifactError>> + Send;

    /// Upload a stream of unknown length as one object. Returns the bytes sent.
    ///
    /// # Errors
    /// A driver error, or the stream's own error; nothing is left looking complete.
    fn save_stream(&self, body: ByteStream) -> impl Future<Output = Result<u64, ArtifactError>> + Send;

    /// Whether the artifact exists (a file, or a directory with at least one object).
    ///
    /// # Errors
    /// A driver error other than absence.
    fn exists(&self) -> impl Future<Output = Result<bool, ArtifactError>> + Send;

    /// The files of the artifact, relative to its location (`[""]` for a single file).
    ///
    /// # Errors
    /// [`ArtifactError::NotFound`] when absent.
    fn list(&self) -> impl Future<Output = Result<Vec<String>, ArtifactError>> + Send;

    /// Argo's `ListObjects` (what a data template's `artifactPaths` source outputs): the
    /// **full** keys of the artifact's objects, sorted, each provider as Argo v4.1.2's
    /// driver answers.
    ///
    /// - S3: every object under `key/`, recursively (keys ending in `/`, console "folder"
    ///   markers, skipped). Nothing there: `[]` when an object named exactly the key exists
    ///   (a file artifact), otherwise [`ArtifactError::NotFound`].
    /// - GCS: `[key]` when an object named exactly the key exists; otherwise every object
    ///   under `key/` (folder markers skipped); nothing there is `[]`, not an error.
    /// - Azure: the blob named exactly the key (when it exists) and every blob under
    ///   `key/`; nothing there is `[]`.
    /// - An empty key (store drivers only) lists the whole bucket or container.
    /// - Local (an argoexec-rs extension): the absolute paths of the regular files under the
    ///   directory, sorted; a file lists as itself; absent is NotFound.
    /// - HTTP, Artifactory and raw: [`ArtifactError::Unsupported`], as Argo.
    ///
    /// Deliberate difference: Argo's GCS and Azure drivers list by plain string prefix, so
    /// key `out/run1` also lists `out/run10/…`; here only the key itself and `key/…` are
    /// listed. The listing is paginated (1000 keys a page on S3) and streamed; only the
    /// answer itself grows with the number of objects.
    ///
    /// # Errors
    /// As above, and listing failures.
    fn list_objects(&self) -> impl Future<Output = Result<Vec<String>, ArtifactError>> + Send;

    /// Delete the artifact: a single object, or every object of a directory artifact (the
    /// key itself and everything under `key/`); absent is success.
    ///
    /// Store drivers list and delete at the same time in parallel batches, in memory that
    /// does not grow with the number of objects; a failed object does not stop the others
    /// ([`ArtifactError::DeleteFailed`] counts them and keeps the first). Local: the file or
    /// directory tree. Raw: nothing to delete (success). HTTP and Artifactory:
    /// [`ArtifactError::Unsupported`], as Argo v4.1.2 (its HTTP driver, which also serves
    /// Artifactory, answers `ErrDeleteNotSupported`).
    ///
    /// # Errors
    /// A driver error.
    fn delete(&self) -> impl Future<Output = Result<(), ArtifactError>> + Send;
}

/// Run a blocking filesystem job on tokio's blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ArtifactError> + Send + 'static,
) -> Result<T, ArtifactError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ArtifactError::io(
            "run a blocking job",
            Path::new("-"),
            std::io::Error::other(e.to_string()),
        ))
    })
}
