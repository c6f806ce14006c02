//! The checks shared by the tar and zip extractors: entry-name sanitising, link-target
//! checks, creating parent directories without following symlinks, restoring modes and
//! mtimes, and collecting the top-level names of an archive.
//!
//! Rules (each refusal is [`ArchiveError::Unsafe`]):
//! - names: NUL bytes, absolute names and `..` that would climb above the destination are
//!   refused; `.` and empty components are dropped; `a/../b` is normalised to `b`.
//! - symlinks: absolute targets are refused; a relative target must stay inside the
//!   destination when resolved lexically from the link's directory, and its `..` components
//!   may only come first (`../../lib/x` is fine, `a/../../x` is refused): a `..` after a name
//!   could climb out through another symlink, which lexical resolution cannot see.
//! - hard links: the target name is sanitised like an entry name and no component of it may
//!   be a symlink on disk, so the link always refers to a file inside the destination.
//! - parents: each parent directory of an entry is created one component at a time; a
//!   component that already exists as a symlink (or a file) is refused, and so is a leaf that
//!   is an existing symlink — nothing is ever written through a symlink.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::ArchiveError;

/// Turn an archive entry name into a safe relative path made only of normal components.
///
/// Returns `Ok(None)` when the name denotes the destination itself (`.`, `./`, `a/..`).
///
/// # Errors
/// [`ArchiveError::Unsafe`] for NUL bytes, absolute names or `..` escaping the destination.
pub fn sanitize_entry_path(raw: &[u8]) -> Result<Option<PathBuf>, ArchiveError> {
    let refuse = |reason| ArchiveError::refused(String::from_utf8_lossy(raw), reason);
    if raw.contains(&0) {
        return Err(refuse("NUL byte in name"));
    }
    if raw.starts_with(b"/") {
        return Err(refuse("absolute path"));
    }
    let mut out = PathBuf::new();
    for part in raw.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                if !out.pop() {
                    return Err(refuse("path escapes the destination"));
                }
            }
            name => out.push(OsStr::from_bytes(name)),
        }
    }
    Ok(if out.as_os_str().is_empty() {
        None
    } else {
        Some(out)
    })
}

/// Check a symlink target for the link at relative path `rel` (see the module rules).
pub(crate) fn check_symlink_target(entry: &str, rel: &Path, target: &[u8]) -> Result<(), ArchiveError> {
    let refuse = |reason| ArchiveError::refused(entry, reason);
    if target.is_empty() {
        return Err(refuse("symlink without a target"));
    }
    if target.contains(&0) {
        return Err(refuse("NUL byte in link target"));
    }
    if target.starts_with(b"/") {
        return Err(refuse("symlink target is absolute"));
    }
    let mut depth = rel.parent().map_or(0, |p| p.components().count());
    let mut seen_name = false;
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." if seen_name => return Err(refuse("symlink target has '..' after a name")),
            b".." => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| refuse("symlink target escapes the destination"))?;
            }
            _ => seen_name = true,
        }
    }
    Ok(())
}

/// Check every symlink below `root` (not followed) against the rules of
/// [`check_symlink_target`] with `root` as the destination.
///
/// # Errors
/// [`ArchiveError::Unsafe`] naming the first link that points out of `root`, or I/O errors.
pub(crate) fn links_stay_inside(root: &Path) -> Result<(), ArchiveError> {
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        for entry in fs::read_dir(&dir).map_err(|e| ArchiveError::io("read", &dir, e))? {
            let entry = entry.map_err(|e| ArchiveError::io("read", &dir, e))?;
            let child = rel.join(entry.file_name());
            let kind = entry
                .file_type()
                .map_err(|e| ArchiveError::io("stat", root.join(&child), e))?;
            if kind.is_dir() {
                stack.push(child);
            } else if kind.is_symlink() {
                let at = root.join(&child);
                let target = fs::read_link(&at).map_err(|e| ArchiveError::io("read link", &at, e))?;
                let name = child.to_string_lossy();
                check_symlink_target(&name, &child, target.as_os_str().as_encoded_bytes()).map_err(|_| {
                    ArchiveError::refused(
                        name.into_owned(),
                        "symlink target escapes the single top-level directory that becomes the destination",
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// Resolve a hard-link target to a path inside `dest` that passes through no symlink.
pub(crate) fn hardlink_source(dest: &Path, entry: &str, target: &[u8]) -> Result<PathBuf, ArchiveError> {
    let rel = sanitize_entry_path(target)
        .ok()
        .flatten()
        .ok_or_else(|| ArchiveError::refused(entry, "hard link target escapes the destination"))?;
    let mut cur = dest.to_path_buf();
    for c in rel.components() {
        cur.push(c);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(ArchiveError::refused(
                    entry,
                    "hard link target passes through a symlink",
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(ArchiveError::io("find hard link target", &cur, e)),
        }
    }
    Ok(cur)
}

/// Create the parents of `dest/rel` without following symlinks and make sure the leaf is not
/// an existing symlink or directory-vs-file clash; returns `dest/rel`.
pub(crate) fn prepare(dest: &Path, rel: &Path, entry: &str, want_dir: bool) -> Result<PathBuf, ArchiveError> {
    let mut cur = dest.to_path_buf();
    if let Some(parent) = rel.parent() {
        for c in parent.components() {
            cur.push(c);
            match fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(ArchiveError::refused(entry, "a parent directory is a symlink"));
                }
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(ArchiveError::refused(entry, "a parent directory is a file")),
                Err(_) => fs::create_dir(&cur).map_err(|e| ArchiveError::io("create dir", &cur, e))?,
            }
        }
    }
    let leaf = dest.join(rel);
    match fs::symlink_metadata(&leaf) {
        Ok(m) if m.file_type().is_symlink() => {
            // replace the link itself, never write through it
            fs::remove_file(&leaf).map_err(|e| ArchiveError::io("replace symlink", &leaf, e))?;
        }
        Ok(m) if m.is_dir() && !want_dir => {
            return Err(ArchiveError::refused(
                entry,
                "a directory already exists at this name",
            ));
        }
        Ok(m) if !m.is_dir() && !want_dir => {
            // an earlier entry of the same name: replace it (don't write into a hard link)
            fs::remove_file(&leaf).map_err(|e| ArchiveError::io("replace", &leaf, e))?;
        }
        Ok(m) if !m.is_dir() => {
            return Err(ArchiveError::refused(entry, "a file already exists at this name"));
        }
        _ => {}
    }
    Ok(leaf)
}

/// Permission bits restored on extraction: rwx for all plus sticky; setuid/setgid dropped.
pub(crate) fn restored_mode(mode: u32) -> u32 {
    mode & 0o1777
}

/// Create the regular file `rel` under `dest` (never through a symlink: `O_NOFOLLOW`,
/// `O_EXCL`), stream `content` into it, then restore its mtime and mode.
pub(crate) fn write_file(
    dest: &Path,
    rel: &Path,
    entry: &str,
    content: &mut impl std::io::Read,
    mode: u32,
    mtime: Option<u64>,
) -> Result<(), ArchiveError> {
    use std::os::unix::fs::OpenOptionsExt;
    let out = prepare(dest, rel, entry, false)?;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&out)
        .map_err(|e| ArchiveError::io("create", &out, e))?;
    std::io::copy(content, &mut f).map_err(|e| ArchiveError::io("extract", &out, e))?;
    finish_file(&f, &out, mode, mtime)
}

/// Set the mtime (seconds since the epoch) of an open file, then its mode. An mtime beyond
/// what `SystemTime` holds (a tar's base-256 field goes up to 2^64 - 1 s) is left unset.
pub(crate) fn finish_file(
    f: &fs::File,
    path: &Path,
    mode: u32,
    mtime: Option<u64>,
) -> Result<(), ArchiveError> {
    use std::os::unix::fs::PermissionsExt;
    let mtime = mtime.and_then(|t| std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(t)));
    if let Some(t) = mtime {
        f.set_modified(t)
            .map_err(|e| ArchiveError::io("set mtime of", path, e))?;
    }
    f.set_permissions(fs::Permissions::from_mode(restored_mode(mode)))
        .map_err(|e| ArchiveError::io("set mode of", path, e))
}

/// Directory modes and mtimes, applied after all entries (deepest first) so that a
/// read-only directory does not block its own contents and writes do not bump its mtime.
#[derive(Default)]
pub(crate) struct DeferredDirs(Vec<(PathBuf, u32, Option<u64>)>);

impl DeferredDirs {
    pub(crate) fn push(&mut self, path: PathBuf, mode: u32, mtime: Option<u64>) {
        self.0.push((path, mode, mtime));
    }

    pub(crate) fn apply(mut self) -> Result<(), ArchiveError> {
        self.0.sort_by(|a, b| b.0.cmp(&a.0));
        for (path, mode, mtime) in self.0 {
            let f = fs::File::open(&path).map_err(|e| ArchiveError::io("open dir", &path, e))?;
            finish_file(&f, &path, mode, mtime)?;
        }
        Ok(())
    }
}

/// The distinct top-level names of the extracted entries, in first-seen order.
#[derive(Default)]
pub(crate) struct TopLevel {
    seen: BTreeSet<PathBuf>,
    order: Vec<PathBuf>,
}

impl TopLevel {
    pub(crate) fn add(&mut self, rel: &Path) {
        if let Some(Component::Normal(top)) = rel.components().next() {
            let top = PathBuf::from(top);
            if self.seen.insert(top.clone()) {
                self.order.push(top);
            }
        }
    }

    pub(crate) fn into_vec(self) -> Vec<PathBuf> {
        self.order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sanitized_paths_stay_inside(
            parts in proptest::collection::vec("(\\.\\.|\\.|[a-zé]{1,3}|)", 1..12),
            abs in any::<bool>(),
        ) {
            let raw = format!("{}{}", if abs { "/" } else { "" }, parts.join("/"));
            // an independent model: count depth, never below zero
            let mut depth: i64 = 0;
            let mut escapes = raw.starts_with('/');
            for p in &parts {
                match p.as_str() {
                    "" | "." => {}
                    ".." => { depth -= 1; if depth < 0 { escapes = true; } }
                    _ => depth += 1,
                }
            }
            match sanitize_entry_path(raw.as_bytes()) {
                Ok(Some(p)) => {
                    prop_assert!(!escapes, "{raw:?} accepted as {p:?}");
                    prop_assert!(p.components().all(|c| matches!(c, Component::Normal(_))));
                    prop_assert!(Path::new("/dest").join(&p).starts_with("/dest"));
                    prop_assert_eq!(p.components().count() as i64, depth);
                }
                Ok(None) => prop_assert!(!escapes && depth == 0),
                Err(e) => prop_assert!(escapes && e.is_unsafe(), "{raw:?} refused: {e}"),
            }
        }

        #[test]
        fn accepted_symlinks_resolve_inside(
            dir in proptest::collection::vec("[a-c]", 0..4),
            target in proptest::collection::vec("(\\.\\.|\\.|[a-c]|)", 1..8),
        ) {
            let rel: PathBuf = dir.iter().collect::<PathBuf>().join("link");
            let t = target.join("/");
            if check_symlink_target("e", &rel, t.as_bytes()).is_ok() {
                // resolve lexically: must never go above the root
                let mut depth = dir.len() as i64;
                for p in &target {
                    match p.as_str() {
                        ".." => depth -= 1,
                        "" | "." => {}
                        _ => depth += 1,
                    }
                    prop_assert!(depth >= 0, "{t:?} from {rel:?} escapes");
                }
            }
        }
    }

    #[test]
    fn sanitize_cases() {
        for bad in ["../evil", "a/../../evil", "/abs", "a\0b", "..", "./../x"] {
            assert!(
                sanitize_entry_path(bad.as_bytes()).unwrap_err().is_unsafe(),
                "{bad}"
            );
        }
        assert_eq!(
            sanitize_entry_path(b"./a/./b/../c").unwrap().unwrap(),
            Path::new("a/c")
        );
        assert_eq!(sanitize_entry_path(b"a//b/").unwrap().unwrap(), Path::new("a/b"));
        assert_eq!(sanitize_entry_path(b"./").unwrap(), None);
        assert_eq!(sanitize_entry_path(b"a/..").unwrap(), None);
    }

    /// Found by the `extract_tar` fuzzer: a base-256 mtime past `SystemTime`'s range
    /// panicked in `UNIX_EPOCH + Duration` ("overflow when adding duration to SystemTime").
    #[test]
    fn out_of_range_mtimes_are_skipped() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let mut tar = tar::Builder::new(Vec::new());
        for (name, mtime) in [("huge", u64::MAX), ("big", 1 << 63), ("ok", 1_700_000_000)] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(1);
            h.set_mode(0o640);
            h.set_mtime(mtime);
            tar.append_data(&mut h, name, &b"x"[..]).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
        h.set_mode(0o750);
        h.set_mtime(u64::MAX);
        tar.append_data(&mut h, "dir/", std::io::empty()).unwrap();
        let bytes = tar.into_inner().unwrap();
        let dest = d.path().join("out");
        crate::extract_tar(&bytes[..], &dest).unwrap();
        let m = fs::metadata(dest.join("huge")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o640);
        assert_eq!(
            fs::metadata(dest.join("dir")).unwrap().permissions().mode() & 0o777,
            0o750
        );
        let ok = fs::metadata(dest.join("ok")).unwrap().modified().unwrap();
        assert_eq!(
            ok,
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)
        );
    }

    #[test]
    fn symlink_target_cases() {
        let at = |rel: &str, t: &str| check_symlink_target("e", Path::new(rel), t.as_bytes()).is_ok();
        assert!(at("a/b/link", "../../x"));
        assert!(at("a/link", "b/c"));
        assert!(at("link", "."));
        assert!(!at("link", "../x"));
        assert!(!at("a/link", "../../x"));
        assert!(!at("link", "/etc"));
        assert!(!at("a/b/link", "c/../../x"));
        assert!(!at("link", ""));
    }
}
