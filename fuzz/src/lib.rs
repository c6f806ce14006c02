//! Helpers shared by the archive fuzz targets: a scratch directory with a destination and a
//! canary beside it, and the checks that extraction stayed inside the destination.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// `<tmp>/fuzz-XXXX/` holding `dest` (absent until extracted into) and `canary/file`.
pub struct Sandbox {
    dir: tempfile::TempDir,
    /// Where archives are extracted.
    pub dest: PathBuf,
    canary_ino: u64,
}

const CANARY: &[u8] = b"canary: nothing may touch me";

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// A fresh sandbox under `$TMPDIR` (use a tmpfs such as /dev/shm for speed).
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("argoexec-fuzz-")
            .tempdir()
            .expect("create the sandbox");
        fs::create_dir(dir.path().join("canary")).expect("create canary dir");
        let f = dir.path().join("canary/file");
        fs::write(&f, CANARY).expect("write canary");
        let canary_ino = fs::metadata(&f).expect("stat canary").ino();
        let dest = dir.path().join("dest");
        Self {
            dir,
            dest,
            canary_ino,
        }
    }

    /// The sandbox directory (the parent of `dest`).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Assert that nothing outside `dest` changed: the sandbox holds only `canary`, `dest`
    /// and the names in `also`; the canary directory holds only its untouched file, with
    /// one link; every entry under `dest` that resolves at all resolves inside `dest`, and
    /// no symlink there is absolute or climbs out lexically.
    pub fn check(&self, also: &[&str]) {
        for e in fs::read_dir(self.root()).expect("list sandbox") {
            let name = e.expect("sandbox entry").file_name();
            let name = name.to_string_lossy();
            assert!(
                name == "canary" || name == "dest" || also.contains(&name.as_ref()),
                "extraction created {name:?} beside the destination"
            );
        }
        let canary_dir: Vec<_> = fs::read_dir(self.root().join("canary"))
            .expect("list canary")
            .map(|e| e.expect("canary entry").file_name())
            .collect();
        assert_eq!(canary_dir, ["file"], "the canary directory changed");
        let f = self.root().join("canary/file");
        let m = fs::symlink_metadata(&f).expect("stat canary");
        assert!(
            m.is_file() && m.nlink() == 1 && m.ino() == self.canary_ino,
            "canary replaced or linked"
        );
        assert_eq!(fs::read(&f).expect("read canary"), CANARY, "canary rewritten");
        if fs::symlink_metadata(&self.dest).is_ok_and(|m| m.is_dir()) {
            let real_dest = fs::canonicalize(&self.dest).expect("canonical dest");
            self.walk(&self.dest, &real_dest);
        }
    }

    fn walk(&self, dir: &Path, real_dest: &Path) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd {
            let p = e.expect("dest entry").path();
            let m = fs::symlink_metadata(&p).expect("stat dest entry");
            assert_ne!(m.ino(), self.canary_ino, "{p:?} is a hard link to the canary");
            if let Ok(real) = fs::canonicalize(&p) {
                assert!(
                    real.starts_with(real_dest),
                    "{p:?} resolves to {real:?}, outside the destination"
                );
            }
            if m.file_type().is_symlink() {
                let target = fs::read_link(&p).expect("read link");
                let rel = p.strip_prefix(&self.dest).expect("under dest");
                assert!(stays_inside(rel, &target), "{p:?} -> {target:?} points outside");
            } else if m.is_dir() {
                self.walk(&p, real_dest);
            }
        }
    }
}

/// Whether symlink `link` (relative to the destination) with `target` resolves lexically
/// inside the destination.
pub fn stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth = link.parent().map_or(0, |p| p.components().count()) as i64;
    for c in target.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// Gzip `data` (level 1).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).expect("gzip to memory");
    e.finish().expect("gzip to memory")
}

/// Rewrite the checksum of every tar header in `data` (found by walking the headers' size
/// fields the way a reader does), so that mutated headers are read instead of refused for
/// their checksum. Stops at the first size it cannot read.
pub fn fix_tar_checksums(data: &mut [u8]) {
    let mut pos = 0usize;
    while pos + 512 <= data.len() {
        let h = &mut data[pos..pos + 512];
        if h.iter().all(|b| *b == 0) {
            pos += 512;
            continue;
        }
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
        let field = format!("{sum:06o}\0 ");
        h[148..156].copy_from_slice(&field.as_bytes()[..8]);
        let size = &h[124..136];
        let size = if size[0] & 0x80 != 0 {
            size[4..].iter().fold(0u64, |a, b| (a << 8) | u64::from(*b))
        } else {
            let s = String::from_utf8_lossy(size);
            match u64::from_str_radix(s.trim_matches(|c: char| c == '\0' || c == ' '), 8) {
                Ok(n) => n,
                Err(_) => return,
            }
        };
        let Some(next) = usize::try_from(size)
            .ok()
            .and_then(|s| s.checked_add(511))
            .map(|s| s / 512 * 512)
            .and_then(|s| s.checked_add(pos + 512))
        else {
            return;
        };
        pos = next;
    }
}
