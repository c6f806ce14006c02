//! Helpers shared by the integration tests: tree snapshots and hand-built malicious tars.
#![allow(dead_code, missing_docs)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// (relative path, description) of every path under `root`: kind, mode, content hash or
/// symlink target. Sorted.
pub fn tree(root: &Path) -> Vec<(String, String)> {
    fn walk(base: &Path, p: &Path, out: &mut Vec<(String, String)>) {
        let m = fs::symlink_metadata(p).unwrap();
        let rel = p.strip_prefix(base).unwrap().display().to_string();
        let desc = if m.file_type().is_symlink() {
            format!("link:{}", fs::read_link(p).unwrap().display())
        } else if m.is_dir() {
            for e in fs::read_dir(p).unwrap() {
                walk(base, &e.unwrap().path(), out);
            }
            format!("dir:{:o}", m.permissions().mode() & 0o7777)
        } else {
            let data = fs::read(p).unwrap();
            format!(
                "file:{:o}:{}:{:x}",
                m.permissions().mode() & 0o7777,
                data.len(),
                fnv(&data)
            )
        };
        out.push((rel, desc));
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// mtimes (seconds) of the regular files and dirs under `root`, keyed by relative path.
pub fn mtimes(root: &Path) -> Vec<(String, i64)> {
    use std::os::unix::fs::MetadataExt;
    let mut v: Vec<_> = tree(root)
        .into_iter()
        .filter(|(_, d)| !d.starts_with("link:"))
        .map(|(rel, _)| {
            (
                rel.clone(),
                fs::symlink_metadata(root.join(&rel)).unwrap().mtime(),
            )
        })
        .collect();
    v.sort();
    v
}

pub fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, x| {
        (h ^ u64::from(*x)).wrapping_mul(0x100000001b3)
    })
}

/// Deterministic pseudo-random bytes (xorshift).
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// A directory tree exercising every case: nested dirs, an empty dir, a 0-byte file, unicode
/// names, a name over 100 bytes, a symlink, a restrictive mode, an executable.
pub fn sample_tree(parent: &Path, big: usize) -> PathBuf {
    let src = parent.join("data");
    fs::create_dir_all(src.join("sub/empty")).unwrap();
    fs::write(src.join("sub/a.txt"), "hello").unwrap();
    fs::write(src.join("zero"), "").unwrap();
    fs::create_dir_all(src.join("ünïcødé")).unwrap();
    fs::write(src.join("ünïcødé/日本.txt"), "こんにちは").unwrap();
    let long_dir = src.join("d".repeat(60));
    fs::create_dir_all(&long_dir).unwrap();
    fs::write(long_dir.join("x".repeat(150)), "long name").unwrap();
    std::os::unix::fs::symlink("sub/a.txt", src.join("link")).unwrap();
    std::os::unix::fs::symlink("../zero", src.join("sub/uplink")).unwrap();
    fs::set_permissions(src.join("sub/a.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(src.join("sub/empty"), fs::Permissions::from_mode(0o700)).unwrap();
    if big > 0 {
        fs::write(src.join("big.bin"), random_bytes(big, 42)).unwrap();
    }
    src
}

/// A tar built by hand, with raw (unchecked) names and link targets.
pub fn evil_tar(entries: &[(&str, tar::EntryType, Option<&str>)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, link) in entries {
        let mut h = tar::Header::new_old();
        {
            let raw = h.as_old_mut();
            raw.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(l) = link {
                raw.linkname[..l.len()].copy_from_slice(l.as_bytes());
            }
        }
        h.set_entry_type(*kind);
        h.set_mode(0o644);
        let data: &[u8] = if *kind == tar::EntryType::Regular {
            b"pwned"
        } else {
            b""
        };
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

/// Entry names of a tar stream, in order.
pub fn tar_names(tar: impl std::io::Read) -> Vec<String> {
    let mut ar = tar::Archive::new(tar);
    ar.entries()
        .unwrap()
        .map(|e| String::from_utf8(e.unwrap().path_bytes().into_owned()).unwrap())
        .collect()
}

/// Number of gzip members in `gz`, decoding each one.
pub fn gzip_members(gz: &[u8]) -> usize {
    use std::io::Read;
    let mut rest = gz;
    let mut n = 0;
    while !rest.is_empty() {
        let mut d = flate2::bufread::GzDecoder::new(rest);
        std::io::copy(&mut d.by_ref(), &mut std::io::sink()).unwrap();
        rest = d.into_inner();
        n += 1;
    }
    n
}

pub fn gnu_tar() -> Option<&'static str> {
    Path::new("/usr/bin/tar").exists().then_some("/usr/bin/tar")
}
