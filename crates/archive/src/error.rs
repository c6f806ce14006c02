//! The crate's single error type, [`ArchiveError`]: every variant names the action and the
//! path (or archive entry) concerned.

use std::path::PathBuf;

/// Errors of archive operations, each naming the path or entry concerned.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The source path does not exist (callers skip optional artifacts on this).
    #[error("{} does not exist", path.display())]
    NotFound {
        /// The missing path.
        path: PathBuf,
    },
    /// An archive entry would land outside the destination, or is otherwise refused.
    #[error("refused archive entry {entry:?}: {reason}")]
    Unsafe {
        /// The entry name as stored in the archive (lossily decoded).
        entry: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// An I/O failure while doing `action` on `path`.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. "create dir".
        action: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A malformed zip archive, or a failure of the zip writer.
    #[error("{action} zip {}: {source}", path.display())]
    Zip {
        /// What was being done, e.g. "read" or "write".
        action: &'static str,
        /// The zip file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: zip::result::ZipError,
    },
    /// The file is not in the format the unpack strategy asked for.
    #[error("{} is not a {expected} archive", path.display())]
    WrongFormat {
        /// The downloaded file.
        path: PathBuf,
        /// The format the strategy expected ("tar" or "zip").
        expected: &'static str,
    },
    /// The destination of an unpack already exists and is not an empty directory.
    #[error("{} already exists", path.display())]
    DestinationExists {
        /// The destination.
        path: PathBuf,
    },
}

impl ArchiveError {
    /// True for [`ArchiveError::NotFound`]: the source is missing (an optional artifact).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// True for [`ArchiveError::Unsafe`]: an entry was refused by the extraction checks.
    pub fn is_unsafe(&self) -> bool {
        matches!(self, Self::Unsafe { .. })
    }

    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn zip(action: &'static str, path: impl Into<PathBuf>, source: zip::result::ZipError) -> Self {
        Self::Zip {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn refused(entry: impl Into<String>, reason: &'static str) -> Self {
        Self::Unsafe {
            entry: entry.into(),
            reason,
        }
    }
}
