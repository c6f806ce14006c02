//! [`unpack_input_stream`]: the input-artifact rules of [`crate::unpack_input`] applied to
//! an artifact as it downloads. A tarball (plain, gzip or zstd, detected from the first 64 KiB,
//! or forced by the `tar` strategy) is extracted straight from the stream, so no copy of
//! the archive ever lands on disk; anything else (a zip, whose directory is at its end, or
//! a plain file) is spilled to a file and handed to [`crate::unpack_input`].

use std::io::{BufRead, Read, Write};
use std::path::Path;

use crate::unpack::{is_empty_dir, remove_any, with_suffix};
use crate::{ArchiveError, Format, Strategy, detect_prefix, extract_tar, extract_tar_gz};

const PREFIX: usize = 64 << 10;

/// What [`unpack_input_stream`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpacked {
    /// Extracted from the stream.
    Streamed(Format),
    /// Written to the spill file, then unpacked from it.
    Spilled(Format),
}

/// Unpack the artifact read from `input` to `dest` by `strategy` (see
/// [`crate::unpack_input`] for the rules). `spill` is where a non-tar artifact is written
/// first (removed afterwards).
///
/// # Errors
/// As [`crate::unpack_input`], plus read errors of `input` (a download that failed);
/// nothing is left at `dest` on failure.
pub fn unpack_input_stream(
    mut input: impl BufRead,
    dest: &Path,
    strategy: Strategy,
    spill: &Path,
) -> Result<Unpacked, ArchiveError> {
    for p in [dest.parent(), spill.parent()].into_iter().flatten() {
        if !p.as_os_str().is_empty() {
            std::fs::create_dir_all(p).map_err(|e| ArchiveError::io("create", p, e))?;
        }
    }
    let mut prefix = Vec::with_capacity(PREFIX);
    (&mut input)
        .take(PREFIX as u64)
        .read_to_end(&mut prefix)
        .map_err(|e| ArchiveError::io("download", dest, e))?;
    let format = detect_prefix(&prefix);
    let tarball = matches!(format, Format::Tar | Format::TarGz | Format::TarZst);
    let stream_it = match strategy {
        Strategy::Auto | Strategy::Tar => tarball,
        Strategy::Zip | Strategy::None => false,
    };
    let mut whole = std::io::Cursor::new(prefix).chain(input);
    if !stream_it {
        let mut f = std::fs::File::create(spill).map_err(|e| ArchiveError::io("create", spill, e))?;
        let copied = std::io::copy(&mut whole, &mut f).and_then(|_| f.flush());
        if let Err(e) = copied {
            remove_any(spill);
            return Err(ArchiveError::io("download to", spill, e));
        }
        drop(f);
        let r = crate::unpack_input(spill, dest, strategy);
        if r.is_err() {
            remove_any(spill);
        }
        return r.map(|()| Unpacked::Spilled(format));
    }
    let mount_point = is_empty_dir(dest);
    if !mount_point && std::fs::symlink_metadata(dest).is_ok() {
        return Err(ArchiveError::DestinationExists {
            path: dest.to_path_buf(),
        });
    }
    let tmp = with_suffix(dest, ".tmpdir");
    remove_any(&tmp);
    let result = (|| {
        let tops = match format {
            Format::TarGz => extract_tar_gz(whole, &tmp)?,
            Format::TarZst => crate::extract_tar_zst(whole, &tmp)?,
            _ => extract_tar(whole, &tmp)?,
        };
        crate::unpack::place(&tmp, &tops, dest, mount_point)
    })();
    remove_any(&tmp);
    result.map(|()| Unpacked::Streamed(format))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz_of(dir: &Path) -> Vec<u8> {
        let mut out = Vec::new();
        crate::write_tar_gz(dir, &mut out, Some(1)).unwrap();
        out
    }

    #[test]
    fn tarballs_stream_and_others_spill() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("art");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::write(src.join("sub/f"), "x").unwrap();
        let tgz = tgz_of(&src);
        let spill = d.path().join("spill");
        let dest = d.path().join("out");
        let r = unpack_input_stream(std::io::Cursor::new(&tgz), &dest, Strategy::Auto, &spill).unwrap();
        assert_eq!(r, Unpacked::Streamed(Format::TarGz));
        assert_eq!(std::fs::read_to_string(dest.join("sub/f")).unwrap(), "x");
        assert!(!spill.exists(), "nothing spilled for a tarball");

        let plain = d.path().join("new/parent/plain");
        let r = unpack_input_stream(&b"hello"[..], &plain, Strategy::Auto, &spill).unwrap();
        assert_eq!(r, Unpacked::Spilled(Format::Other));
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "hello");

        let kept = d.path().join("kept.tgz");
        let r = unpack_input_stream(std::io::Cursor::new(&tgz), &kept, Strategy::None, &spill).unwrap();
        assert_eq!(r, Unpacked::Spilled(Format::TarGz));
        assert_eq!(
            std::fs::read(&kept).unwrap(),
            tgz,
            "archive: none keeps the bytes"
        );
    }

    #[test]
    fn a_broken_download_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("art");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("big"), vec![1u8; 1 << 20]).unwrap();
        let tgz = tgz_of(&src);
        struct Broken<'a>(&'a [u8], usize);
        impl Read for Broken<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.1 >= self.0.len() / 2 {
                    return Err(std::io::Error::other("connection reset"));
                }
                let n = buf.len().min(self.0.len() / 2 - self.1).min(4096);
                buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
                self.1 += n;
                Ok(n)
            }
        }
        let dest = d.path().join("out");
        let r = unpack_input_stream(
            std::io::BufReader::new(Broken(&tgz, 0)),
            &dest,
            Strategy::Auto,
            &d.path().join("s"),
        );
        assert!(r.is_err());
        assert!(!dest.exists() && !d.path().join("out.tmpdir").exists());
    }
}
