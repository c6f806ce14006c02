//! `argoexec-archive`: archives in Argo's layout — a streaming tar / tar.gz writer with
//! multi-core gzip ([`write_tar_gz`]), a zip writer, secure extractors, content-based format
//! detection and the input-artifact unpack rules of `argoexec init` ([`unpack_input`]).
//!
//! Layout (Argo `util/archive.TarGzToWriter`): the archive's single top-level entry is
//! `basename(src)`; directories are stored recursively (`name/`, `name/sub/`, …, sorted by
//! name), symlinks as links (never followed), empty directories and 0-byte files kept.
//! Nothing here buffers a whole file or archive in memory. The API is synchronous
//! (`std::io`); async callers run it on a blocking thread. Every gzip reader here is
//! `flate2::read::MultiGzDecoder`, so multi-member streams (ours, pigz's) read fully.

mod detect;
mod error;
mod extract;
pub mod pgzip;
mod safety;
mod tree;
mod tree_at;
mod unpack;
mod unpack_stream;
mod write;
mod zipfmt;
mod zst;

pub use detect::{Format, detect, detect_prefix};
pub use error::ArchiveError;
pub use extract::{extract_tar, extract_tar_gz};
pub use pgzip::{GzipOptions, ParallelGzWriter};
pub use safety::sanitize_entry_path;
pub use tree_at::{
    link_target_in_root, open_dir_in_root, open_in_root, open_path_in_root, open_read_in_root,
};
pub use unpack::{Strategy, unpack_input};
pub use unpack_stream::{Unpacked, unpack_input_stream};
pub use write::{write_tar, write_tar_gz, write_tar_gz_following, write_tar_gz_in_root, write_tar_gz_with};
pub use zipfmt::{extract_zip, write_zip};
pub use zst::{extract_tar_zst, write_tar_zst};

/// Map an Argo gzip level to a flate2 level: `None` or any negative value (Argo's -1) is the
/// default 6, 0 is no compression (stored), 1–9 as given, above 9 clamps to 9.
pub fn gzip_level(level: Option<i32>) -> u32 {
    match level {
        None => 6,
        Some(l) if l < 0 => 6,
        Some(l) => l.min(9).unsigned_abs(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gzip_levels() {
        assert_eq!(super::gzip_level(None), 6);
        assert_eq!(super::gzip_level(Some(-1)), 6);
        assert_eq!(super::gzip_level(Some(0)), 0);
        assert_eq!(super::gzip_level(Some(1)), 1);
        assert_eq!(super::gzip_level(Some(9)), 9);
        assert_eq!(super::gzip_level(Some(42)), 9);
    }
}
