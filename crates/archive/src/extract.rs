//! Secure tar extraction (`extract_tar`, `extract_tar_gz`), entry by entry.
//!
//! Every entry is checked before anything is written for it (rules in [`crate::safety`]):
//! absolute names, `..` that would leave the destination, NUL bytes, symlinks or hard links
//! whose target leaves the destination are refused with [`ArchiveError::Unsafe`], and
//! nothing is ever written through a symlink found on disk. Entries accepted before a refused
//! one stay inside the destination; nothing is ever created outside it. Modes (minus
//! setuid/setgid) and mtimes are restored, ownership is not; devices and fifos are skipped
//! with a warning. The root entry `./` is accepted and ignored.

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::ArchiveError;
use crate::safety::{self, DeferredDirs, TopLevel};

/// Extract a gzip-compressed tar (single or multi-member) into `dest_dir`.
///
/// # Errors
/// As [`extract_tar`].
pub fn extract_tar_gz<R: Read>(input: R, dest_dir: &Path) -> Result<Vec<PathBuf>, ArchiveError> {
    extract_tar(flate2::read::MultiGzDecoder::new(input), dest_dir)
}

/// Extract a tar into `dest_dir` (created when missing); returns the distinct top-level names
/// (relative, in archive order).
///
/// # Errors
/// [`ArchiveError::Unsafe`] for a refused entry (nothing is written outside `dest_dir`),
/// [`ArchiveError::Io`] for a corrupt archive or a filesystem failure.
pub fn extract_tar<R: Read>(input: R, dest_dir: &Path) -> Result<Vec<PathBuf>, ArchiveError> {
    fs::create_dir_all(dest_dir).map_err(|e| ArchiveError::io("create", dest_dir, e))?;
    let mut ar = tar::Archive::new(input);
    let mut tops = TopLevel::default();
    let mut dirs = DeferredDirs::default();
    let entries = ar
        .entries()
        .map_err(|e| ArchiveError::io("read archive into", dest_dir, e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| ArchiveError::io("read archive into", dest_dir, e))?;
        let raw_bytes = entry.path_bytes().into_owned();
        let raw = String::from_utf8_lossy(&raw_bytes).into_owned();
        let kind = entry.header().entry_type();
        let rel = match safety::sanitize_entry_path(&raw_bytes)? {
            Some(rel) => rel,
            None if kind.is_dir() => continue, // "./": the destination itself
            None => return Err(ArchiveError::refused(raw, "empty name")),
        };
        let mode = entry.header().mode().unwrap_or(0o644);
        let mtime = entry.header().mtime().ok();
        match kind {
            tar::EntryType::Directory => {
                let out = safety::prepare(dest_dir, &rel, &raw, true)?;
                if !out.is_dir() {
                    fs::create_dir(&out).map_err(|e| ArchiveError::io("create dir", &out, e))?;
                }
                dirs.push(out, mode, mtime);
            }
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
                safety::write_file(dest_dir, &rel, &raw, &mut entry, mode, mtime)?;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .ok_or_else(|| ArchiveError::refused(raw.clone(), "symlink without a target"))?
                    .into_owned();
                safety::check_symlink_target(&raw, &rel, &target)?;
                let out = safety::prepare(dest_dir, &rel, &raw, false)?;
                let target = Path::new(OsStr::from_bytes(&target));
                std::os::unix::fs::symlink(target, &out)
                    .map_err(|e| ArchiveError::io("create symlink", &out, e))?;
            }
            tar::EntryType::Link => {
                let target = entry
                    .link_name_bytes()
                    .ok_or_else(|| ArchiveError::refused(raw.clone(), "hard link without a target"))?
                    .into_owned();
                let src = safety::hardlink_source(dest_dir, &raw, &target)?;
                let out = safety::prepare(dest_dir, &rel, &raw, false)?;
                fs::hard_link(&src, &out).map_err(|e| ArchiveError::io("create hard link", &out, e))?;
            }
            tar::EntryType::XGlobalHeader
            | tar::EntryType::XHeader
            | tar::EntryType::GNULongName
            | tar::EntryType::GNULongLink => continue,
            other => {
                tracing::warn!(entry = %raw, kind = ?other, "skipping a device, fifo or unknown tar entry");
                continue;
            }
        }
        tops.add(&rel);
    }
    dirs.apply()?;
    Ok(tops.into_vec())
}
