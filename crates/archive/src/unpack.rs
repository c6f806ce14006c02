//! The input-artifact unpack rules of `argoexec init`: placing a downloaded artifact at its
//! path in the container according to the artifact's `archive` strategy.
//!
//! - [`Strategy::None`]: rename the download to `dest` (parents created; falls back to
//!   copy-and-remove across filesystems).
//! - [`Strategy::Tar`]: extract the tarball (gzip or plain, detected by content) into a fresh
//!   `<dest>.tmpdir` beside `dest`; if it held exactly one top-level entry, that entry is
//!   renamed to `dest`, otherwise the temp dir itself becomes `dest`.
//! - [`Strategy::Zip`]: the same with a zip.
//! - [`Strategy::Auto`]: detect by content; tar(.gz) → `Tar`, zip → `Zip`, anything else
//!   → `None`. Argo itself only unzips with an explicit `zip` strategy; auto-detecting zip
//!   too is this crate's choice (a zip is never silently left packed).
//!
//! **Mount points.** When `dest` already exists as an empty directory (typically a volume
//! mounted at the artifact path) an archive's content is moved *into* it instead: the
//! children of a single top-level directory, a single top-level file as `dest/<name>`, or all
//! top-level entries. With `None` strategy an existing directory is an error.
//!
//! **Failure.** On any error nothing is left at `dest` (a mount point is emptied again) and
//! `<dest>.tmpdir` is removed. `downloaded` is removed on success and kept on failure (the
//! caller owns it). A `dest` that exists and is not an empty directory is
//! [`ArchiveError::DestinationExists`] for the archive strategies.

use std::fs;
use std::io::BufReader;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{ArchiveError, Format, detect, extract_tar, extract_tar_gz, extract_zip};

/// How an input artifact is unpacked (Argo's input artifact `archive` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Detect from the content (tar, tar.gz or zip are extracted, anything else is kept).
    Auto,
    /// A tarball, gzip-compressed or plain.
    Tar,
    /// A zip.
    Zip,
    /// Use the file (or directory) as it is.
    None,
}

pub(crate) fn with_suffix(p: &Path, s: &str) -> PathBuf {
    let mut o = p.as_os_str().to_owned();
    o.push(s);
    PathBuf::from(o)
}

/// Remove whatever is at `p` (file, symlink or directory tree), ignoring absence.
pub(crate) fn remove_any(p: &Path) {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            let _ = fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = fs::remove_file(p);
        }
        Err(_) => {}
    }
}

pub(crate) fn is_empty_dir(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) && fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

/// Copy `src` to `dest` (a new path) recursively, keeping symlinks and modes.
fn copy_tree(src: &Path, dest: &Path) -> Result<(), ArchiveError> {
    let m = fs::symlink_metadata(src).map_err(|e| ArchiveError::io("stat", src, e))?;
    if m.file_type().is_symlink() {
        let t = fs::read_link(src).map_err(|e| ArchiveError::io("read link", src, e))?;
        std::os::unix::fs::symlink(t, dest).map_err(|e| ArchiveError::io("create symlink", dest, e))
    } else if m.is_dir() {
        fs::create_dir(dest).map_err(|e| ArchiveError::io("create dir", dest, e))?;
        for e in fs::read_dir(src).map_err(|e| ArchiveError::io("read dir", src, e))? {
            let e = e.map_err(|e| ArchiveError::io("read dir", src, e))?;
            copy_tree(&e.path(), &dest.join(e.file_name()))?;
        }
        fs::set_permissions(dest, fs::Permissions::from_mode(m.permissions().mode()))
            .map_err(|e| ArchiveError::io("set mode of", dest, e))
    } else {
        fs::copy(src, dest)
            .map(|_| ())
            .map_err(|e| ArchiveError::io("copy to", dest, e))
    }
}

/// Rename `src` to the absent path `dest`; across filesystems copy then remove `src`.
pub(crate) fn move_path(src: &Path, dest: &Path) -> Result<(), ArchiveError> {
    match fs::rename(src, dest) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            if let Err(err) = copy_tree(src, dest) {
                remove_any(dest);
                return Err(err);
            }
            remove_any(src);
            Ok(())
        }
        Err(e) => Err(ArchiveError::io("move into place", dest, e)),
    }
}

/// Move the extracted content `src` into the existing empty directory `dest`; on failure,
/// `dest` is emptied again.
pub(crate) fn merge_into(src: &Path, dest: &Path) -> Result<(), ArchiveError> {
    let is_dir = fs::symlink_metadata(src).is_ok_and(|m| m.is_dir());
    let items: Vec<(PathBuf, PathBuf)> = if is_dir {
        let mut v = Vec::new();
        for e in fs::read_dir(src).map_err(|e| ArchiveError::io("read dir", src, e))? {
            let e = e.map_err(|e| ArchiveError::io("read dir", src, e))?;
            v.push((e.path(), dest.join(e.file_name())));
        }
        v
    } else {
        let name = src.file_name().unwrap_or_default();
        vec![(src.to_path_buf(), dest.join(name))]
    };
    for (i, (from, to)) in items.iter().enumerate() {
        if let Err(e) = move_path(from, to) {
            for (_, moved) in &items[..i] {
                remove_any(moved);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Unpack the downloaded file `downloaded` to `dest` by `strategy` (see the module rules).
///
/// # Errors
/// [`ArchiveError::WrongFormat`] when `Tar` is asked for a non-tarball,
/// [`ArchiveError::DestinationExists`], extraction errors (including
/// [`ArchiveError::Unsafe`] for refused entries); `dest` is then left absent (or empty).
pub fn unpack_input(downloaded: &Path, dest: &Path, strategy: Strategy) -> Result<(), ArchiveError> {
    let format = detect(downloaded)?;
    let strategy = match (strategy, format) {
        (Strategy::Auto, Format::TarGz | Format::Tar | Format::TarZst) => Strategy::Tar,
        (Strategy::Auto, Format::Zip) => Strategy::Zip,
        (Strategy::Auto, Format::Other) => Strategy::None,
        (s, _) => s,
    };
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| ArchiveError::io("create", parent, e))?;
    }
    let mount_point = is_empty_dir(dest);
    if strategy == Strategy::None {
        if fs::symlink_metadata(dest).is_ok_and(|m| m.is_dir()) {
            return Err(ArchiveError::DestinationExists {
                path: dest.to_path_buf(),
            });
        }
        return match fs::rename(downloaded, dest) {
            Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
                remove_any(dest);
                move_path(downloaded, dest)
            }
            r => r.map_err(|e| ArchiveError::io("move into place", dest, e)),
        };
    }
    if !mount_point && fs::symlink_metadata(dest).is_ok() {
        return Err(ArchiveError::DestinationExists {
            path: dest.to_path_buf(),
        });
    }
    let tmp = with_suffix(dest, ".tmpdir");
    remove_any(&tmp);
    let result = extract_and_place(downloaded, dest, &tmp, strategy, format, mount_point);
    remove_any(&tmp);
    if result.is_ok() {
        remove_any(downloaded);
    }
    result
}

fn extract_and_place(
    downloaded: &Path,
    dest: &Path,
    tmp: &Path,
    strategy: Strategy,
    format: Format,
    mount_point: bool,
) -> Result<(), ArchiveError> {
    let open = || {
        fs::File::open(downloaded)
            .map(|f| BufReader::with_capacity(256 * 1024, f))
            .map_err(|e| ArchiveError::io("open", downloaded, e))
    };
    let tops = match (strategy, format) {
        (Strategy::Zip, _) => extract_zip(downloaded, tmp)?,
        (_, Format::TarGz) => extract_tar_gz(open()?, tmp)?,
        (_, Format::Tar) => extract_tar(open()?, tmp)?,
        (_, Format::TarZst) => crate::extract_tar_zst(open()?, tmp)?,
        _ => {
            return Err(ArchiveError::WrongFormat {
                path: downloaded.to_path_buf(),
                expected: "tar",
            });
        }
    };
    place(tmp, &tops, dest, mount_point)
}

/// Put what was extracted into `tmp` (top-level entries `tops`) at `dest`: a single
/// top-level entry becomes `dest` itself (Argo's rule), otherwise `tmp` does; into an empty
/// mount point, the content is moved inside it.
///
/// Symlinks were checked against `tmp`. Promoting a single top-level directory makes the
/// allowed tree one level smaller, so a link such as `top/x -> ../y` (inside `tmp`, outside
/// `top`) would now point out of `dest`: such an archive is refused (found by fuzzing).
pub(crate) fn place(
    tmp: &Path,
    tops: &[PathBuf],
    dest: &Path,
    mount_point: bool,
) -> Result<(), ArchiveError> {
    let content = match tops {
        [one] => tmp.join(one),
        _ => tmp.to_path_buf(),
    };
    if content != tmp && content.is_dir() && !content.is_symlink() {
        crate::safety::links_stay_inside(&content)?;
    }
    if mount_point {
        merge_into(&content, dest)
    } else {
        move_path(&content, dest)
    }
}
