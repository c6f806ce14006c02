//! Format detection of a downloaded input artifact by content (never by file name):
//! gzip magic whose decompressed start is a valid tar header → [`Format::TarGz`]; a valid
//! tar header (checksum or `ustar` magic) → [`Format::Tar`]; zip local-file or empty-zip
//! signature → [`Format::Zip`]; zstd magic whose decompressed start is a tar header →
//! [`Format::TarZst`]; anything else, an empty file, a directory, or a gzip of a
//! non-tar (including an empty tar, whose first block is all zeros) → [`Format::Other`].

use std::fs;
use std::io::Read;
use std::path::Path;

use crate::ArchiveError;

/// What a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// gzip whose content starts with a valid tar header.
    TarGz,
    /// An uncompressed tar.
    Tar,
    /// zstd whose content starts with a valid tar header (argoexec-rs's opt-in codec).
    TarZst,
    /// A zip.
    Zip,
    /// Anything else.
    Other,
}

/// True when `block` is a tar header: a valid checksum (unsigned or historic signed sum).
fn checksum_ok(block: &[u8]) -> bool {
    let field = &block[148..156];
    let Some(stored) = std::str::from_utf8(field)
        .ok()
        .map(|s| s.trim_matches(|c: char| c == '\0' || c == ' '))
        .and_then(|s| u32::from_str_radix(s, 8).ok())
    else {
        return false;
    };
    let spaces = 8 * u32::from(b' ');
    let unsigned: u32 = block[..148]
        .iter()
        .chain(&block[156..512])
        .map(|b| u32::from(*b))
        .sum::<u32>()
        + spaces;
    let signed: i64 = block[..148]
        .iter()
        .chain(&block[156..512])
        .map(|b| i64::from(*b as i8))
        .sum::<i64>()
        + i64::from(spaces);
    stored == unsigned || i64::from(stored) == signed
}

/// True when `block` (the first 512 bytes) is a tar header.
fn is_tar_header(block: &[u8]) -> bool {
    if block.len() < 512 || block[..512].iter().all(|b| *b == 0) {
        return false;
    }
    let ustar = &block[257..262] == b"ustar";
    ustar || checksum_ok(block)
}

fn read_up_to(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Detect the format from the first bytes of a stream (`prefix` should hold at least the
/// first 64 KiB, or everything when shorter): the same rules as [`detect`].
pub fn detect_prefix(prefix: &[u8]) -> Format {
    if prefix.starts_with(&[0x1f, 0x8b]) {
        let mut gz = flate2::read::MultiGzDecoder::new(prefix);
        let block = read_up_to(&mut gz, 512).unwrap_or_default();
        return if is_tar_header(&block) {
            Format::TarGz
        } else {
            Format::Other
        };
    }
    if prefix.starts_with(&crate::zst::MAGIC) {
        return if is_tar_header(&crate::zst::head(prefix, 512)) {
            Format::TarZst
        } else {
            Format::Other
        };
    }
    if prefix.starts_with(b"PK\x03\x04") || prefix.starts_with(b"PK\x05\x06") {
        return Format::Zip;
    }
    if is_tar_header(prefix) {
        Format::Tar
    } else {
        Format::Other
    }
}

/// Detect the format of `file` from its first bytes.
///
/// # Errors
/// [`ArchiveError::NotFound`] when it does not exist, [`ArchiveError::Io`] when it cannot be
/// read. A corrupt gzip stream is [`Format::Other`], not an error.
pub fn detect(file: &Path) -> Result<Format, ArchiveError> {
    let meta = fs::metadata(file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ArchiveError::NotFound {
            path: file.to_path_buf(),
        },
        _ => ArchiveError::io("stat", file, e),
    })?;
    if !meta.is_file() {
        return Ok(Format::Other);
    }
    let mut f = fs::File::open(file).map_err(|e| ArchiveError::io("open", file, e))?;
    let head = read_up_to(&mut f, 512).map_err(|e| ArchiveError::io("read", file, e))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        let f = fs::File::open(file).map_err(|e| ArchiveError::io("open", file, e))?;
        let mut gz = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(f));
        let block = read_up_to(&mut gz, 512).unwrap_or_default();
        return Ok(if is_tar_header(&block) {
            Format::TarGz
        } else {
            Format::Other
        });
    }
    if head.starts_with(&crate::zst::MAGIC) {
        let mut f = fs::File::open(file).map_err(|e| ArchiveError::io("open", file, e))?;
        let prefix = read_up_to(&mut f, 64 << 10).map_err(|e| ArchiveError::io("read", file, e))?;
        return Ok(detect_prefix(&prefix));
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Ok(Format::Zip);
    }
    Ok(if is_tar_header(&head) {
        Format::Tar
    } else {
        Format::Other
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_block(name: &str) -> Vec<u8> {
        let mut h = tar::Header::new_old();
        h.set_path(name).unwrap();
        h.set_size(0);
        h.set_cksum();
        h.as_bytes().to_vec()
    }

    #[test]
    fn header_checks() {
        let good = header_block("a.txt");
        assert!(checksum_ok(&good));
        assert!(is_tar_header(&good));
        let mut bad = good.clone();
        bad[0] = b'b';
        assert!(!checksum_ok(&bad));
        assert!(
            !is_tar_header(&bad),
            "old-style header without ustar magic needs its checksum"
        );
        assert!(!is_tar_header(&[0u8; 512]));
        assert!(!is_tar_header(&good[..100]));
    }

    #[test]
    fn detects_by_content() {
        let d = tempfile::tempdir().unwrap();
        let put = |name: &str, data: &[u8]| {
            let p = d.path().join(name);
            fs::write(&p, data).unwrap();
            p
        };
        let mut tarball = header_block("x");
        tarball.extend_from_slice(&[0u8; 1024]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tarball).unwrap();
        let tgz = gz.finish().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"just some text, not a tarball").unwrap();
        let text_gz = gz.finish().unwrap();
        assert_eq!(detect(&put("t.tgz", &tgz)).unwrap(), Format::TarGz);
        assert_eq!(detect(&put("t.tar", &tarball)).unwrap(), Format::Tar);
        assert_eq!(detect(&put("z", b"PK\x03\x04rest")).unwrap(), Format::Zip);
        assert_eq!(
            detect(&put("ez", b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0")).unwrap(),
            Format::Zip
        );
        assert_eq!(detect(&put("e", b"")).unwrap(), Format::Other);
        assert_eq!(detect(&put("txt.gz", &text_gz)).unwrap(), Format::Other);
        assert_eq!(
            detect(&put("bad.gz", &[0x1f, 0x8b, 1, 2, 3])).unwrap(),
            Format::Other
        );
        assert_eq!(detect(&put("zeros", &[0u8; 4096])).unwrap(), Format::Other);
        assert_eq!(detect(d.path()).unwrap(), Format::Other);
        assert_eq!(detect_prefix(&tgz), Format::TarGz);
        assert_eq!(detect_prefix(&tarball), Format::Tar);
        assert_eq!(detect_prefix(b"PK\x03\x04rest"), Format::Zip);
        assert_eq!(detect_prefix(&text_gz), Format::Other);
        assert_eq!(detect_prefix(b""), Format::Other);
        assert!(detect(&d.path().join("missing")).unwrap_err().is_not_found());
    }
}
