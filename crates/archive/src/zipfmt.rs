//! Zip archives (Argo's `archive: zip` strategy): `write_zip` in the same layout as the tar
//! writer (top-level entry `basename(src)`, directories as `name/`, deflate, Unix modes,
//! symlinks as symlink entries) and `extract_zip` under the same safety rules as tar
//! extraction (zip-slip names and escaping symlinks are refused). Every name and symlink
//! target is validated before anything is written, so a zip refused for those reasons leaves
//! the destination untouched.

use std::fs;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use zip::write::SimpleFileOptions;

use crate::ArchiveError;
use crate::safety::{self, DeferredDirs, TopLevel};
use crate::tree::{self, Kind, Node};

const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A zip (DOS, UTC) timestamp of Unix seconds; out-of-range times clamp to 1980/2107.
fn zip_time(secs: i64) -> zip::DateTime {
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let fit = |v: i64| u8::try_from(v).unwrap_or(0);
    let year = u16::try_from(y.clamp(1980, 2107)).unwrap_or(1980);
    zip::DateTime::from_date_and_time(
        year,
        fit(mo),
        fit(d),
        fit(s / 3600),
        fit(s / 60 % 60),
        fit(s % 60),
    )
    .unwrap_or_default()
}

/// Unix seconds of a zip timestamp (taken as UTC).
fn unix_time(t: zip::DateTime) -> Option<u64> {
    let days = days_from_civil(i64::from(t.year()), i64::from(t.month()), i64::from(t.day()));
    let secs =
        days * 86_400 + i64::from(t.hour()) * 3600 + i64::from(t.minute()) * 60 + i64::from(t.second());
    u64::try_from(secs).ok()
}

/// Write a zip of `src` (top-level entry `basename(src)`) to `dest_file`.
///
/// # Errors
/// [`ArchiveError::NotFound`] when `src` is missing, otherwise I/O or zip errors.
pub fn write_zip(src: &Path, dest_file: &Path) -> Result<(), ArchiveError> {
    tree::resolve(src)?;
    let f = fs::File::create(dest_file).map_err(|e| ArchiveError::io("create", dest_file, e))?;
    let mut z = zip::ZipWriter::new(BufWriter::with_capacity(256 * 1024, f));
    tree::walk(src, &mut |node| add(&mut z, node, dest_file))?;
    let mut w = z
        .finish()
        .map_err(|e| ArchiveError::zip("finish", dest_file, e))?;
    w.flush().map_err(|e| ArchiveError::io("write", dest_file, e))
}

fn add<W: Write + Seek>(z: &mut zip::ZipWriter<W>, node: Node<'_>, dest: &Path) -> Result<(), ArchiveError> {
    let zerr = |e| ArchiveError::zip("write", dest, e);
    let mtime = node
        .meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok());
    let opts = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(node.meta.permissions().mode() & 0o7777)
        .last_modified_time(zip_time(mtime.map_or(0, |d| d.as_secs() as i64)));
    let name = node.name.to_string_lossy();
    match node.kind {
        Kind::Symlink(target) => z.add_symlink(name, target.to_string_lossy(), opts).map_err(zerr),
        Kind::Dir => z.add_directory(format!("{name}/"), opts).map_err(zerr),
        Kind::File(len, mut f) => {
            z.start_file(name, opts.large_file(len >= u64::from(u32::MAX)))
                .map_err(zerr)?;
            std::io::copy(&mut f, z).map_err(|e| ArchiveError::io("zip", node.path, e))?;
            Ok(())
        }
    }
}

/// One validated zip entry.
struct Planned {
    index: usize,
    raw: String,
    rel: PathBuf,
    is_dir: bool,
    /// The target, for a symlink entry (already checked).
    link: Option<Vec<u8>>,
    mode: u32,
    mtime: Option<u64>,
}

/// Extract `zip_file` into `dest_dir` (created when missing); returns the distinct top-level
/// names (relative, in archive order).
///
/// # Errors
/// [`ArchiveError::Unsafe`] for zip-slip names or escaping symlinks (nothing is written
/// outside `dest_dir`), otherwise I/O or zip errors.
pub fn extract_zip(zip_file: &Path, dest_dir: &Path) -> Result<Vec<PathBuf>, ArchiveError> {
    let zerr = |e| ArchiveError::zip("read", zip_file, e);
    let f = fs::File::open(zip_file).map_err(|e| ArchiveError::io("open", zip_file, e))?;
    let mut ar = zip::ZipArchive::new(BufReader::new(f)).map_err(zerr)?;
    // validate every name first: a refused archive writes nothing
    let mut plan = Vec::with_capacity(ar.len());
    for index in 0..ar.len() {
        let mut e = ar.by_index(index).map_err(zerr)?;
        let raw_bytes = e.name_raw().to_vec();
        let raw = String::from_utf8_lossy(&raw_bytes).into_owned();
        let Some(rel) = safety::sanitize_entry_path(&raw_bytes)? else {
            continue;
        };
        let mode = e.unix_mode().unwrap_or(if e.is_dir() { 0o755 } else { 0o644 });
        let link = if mode & S_IFMT == S_IFLNK && !e.is_dir() {
            let mut target = Vec::new();
            e.by_ref()
                .take(64 * 1024)
                .read_to_end(&mut target)
                .map_err(|err| ArchiveError::io("read symlink of", zip_file, err))?;
            safety::check_symlink_target(&raw, &rel, &target)?;
            Some(target)
        } else {
            None
        };
        let mtime = e.last_modified().and_then(unix_time);
        plan.push(Planned {
            index,
            raw,
            rel,
            is_dir: e.is_dir(),
            link,
            mode: mode & 0o7777,
            mtime,
        });
    }
    fs::create_dir_all(dest_dir).map_err(|e| ArchiveError::io("create", dest_dir, e))?;
    let mut tops = TopLevel::default();
    let mut dirs = DeferredDirs::default();
    for p in plan {
        if p.is_dir {
            let out = safety::prepare(dest_dir, &p.rel, &p.raw, true)?;
            if !out.is_dir() {
                fs::create_dir(&out).map_err(|e| ArchiveError::io("create dir", &out, e))?;
            }
            dirs.push(out, p.mode, p.mtime);
        } else if let Some(target) = &p.link {
            let out = safety::prepare(dest_dir, &p.rel, &p.raw, false)?;
            std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), &out)
                .map_err(|e| ArchiveError::io("create symlink", &out, e))?;
        } else {
            let mut e = ar.by_index(p.index).map_err(zerr)?;
            safety::write_file(dest_dir, &p.rel, &p.raw, &mut e, p.mode, p.mtime)?;
        }
        tops.add(&p.rel);
    }
    dirs.apply()?;
    Ok(tops.into_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_conversions_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        for d in (3_650..50_000).step_by(37) {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
        let t = 1_700_000_000; // 2023-11-14 22:13:20 UTC
        assert_eq!(unix_time(zip_time(t)), Some(t as u64));
    }
}
