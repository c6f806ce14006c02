//! Output-parameter files: which files may become a parameter value, and reading them
//! without ever blocking or holding more than the limit in memory.
//!
//! Every read path uses these rules (the emissary wrapper staging main's file, wait reading a
//! volume through `/mainctrfs`, the pns backend through main's root, the docker backend from
//! the Engine's archive header):
//! - only a **regular file** is a value: a directory, a FIFO, a socket or a device is refused
//!   with its kind named. Files are opened `O_NONBLOCK`, so a FIFO never blocks the open, and
//!   the type is checked with `fstat` on the opened descriptor before any read;
//! - at most [`MAX_PARAMETER_BYTES`] bytes: a larger file is refused with its size and the
//!   limit, reading at most limit + 1 bytes (a file that grows while read, or a `/proc` file
//!   that reports size 0, is still bounded);
//! - bytes that are not UTF-8 are kept the way Argo's Go executor keeps them: the value is the
//!   bytes, and JSON encoding turns each invalid byte into U+FFFD ([`to_value`]).

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Largest output parameter file, and largest sum of all output parameter values of a step
/// (1 MiB): the task result that carries them must fit etcd's 1.5 MiB request limit, next to
/// the script result (at most 256 KiB) and the object's metadata.
pub const MAX_PARAMETER_BYTES: u64 = 1024 * 1024;

/// Why a file cannot be an output parameter value.
#[derive(Debug, thiserror::Error)]
pub enum ParamFileError {
    /// A directory, FIFO, socket or device.
    #[error("{} is {kind}, not a regular file; an output parameter is read from a file (use an output artifact for anything else)", path.display())]
    NotRegular {
        /// The file, as the template names it.
        path: PathBuf,
        /// What it is instead (`a directory`, `a FIFO (named pipe)`, …).
        kind: &'static str,
    },
    /// Larger than [`MAX_PARAMETER_BYTES`].
    #[error(
        "{} is {} bytes, above the {MAX_PARAMETER_BYTES}-byte (1 MiB) limit of an output parameter \
         (the task result carrying it must fit etcd's 1.5 MiB request); save it as an output artifact instead",
        path.display(),
        size.map_or_else(|| format!("more than {MAX_PARAMETER_BYTES}"), |s| s.to_string())
    )]
    TooLarge {
        /// The file, as the template names it.
        path: PathBuf,
        /// Its size, when known (`None`: it grew past the limit while being read).
        size: Option<u64>,
    },
    /// Opening, `fstat` or reading failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file, as the template names it.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl ParamFileError {
    /// True when the file simply does not exist (a parameter's default then applies).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// What a non-regular file is, in words.
pub fn kind_of(ft: &FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Open `path` for reading without blocking on a FIFO and without taking a terminal.
///
/// # Errors
/// The `open(2)` error.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// Check an already-opened file with `fstat` and read it, bounded (see the module rules).
/// `path` is only used in messages.
///
/// # Errors
/// [`ParamFileError`].
pub fn read_bounded(path: &Path, file: File) -> Result<Vec<u8>, ParamFileError> {
    let io_err = |action, source| ParamFileError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let meta = file.metadata().map_err(|e| io_err("stat", e))?;
    check(path, &meta.file_type(), meta.len())?;
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_PARAMETER_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io_err("read", e))?;
    if buf.len() as u64 > MAX_PARAMETER_BYTES {
        return Err(ParamFileError::TooLarge {
            path: path.to_path_buf(),
            size: None,
        });
    }
    Ok(buf)
}

/// Open `path` without blocking and [`read_bounded`] it.
///
/// # Errors
/// [`ParamFileError`]; a missing file is an `Io` error whose [`ParamFileError::is_not_found`]
/// is true.
pub fn read_path(path: &Path) -> Result<Vec<u8>, ParamFileError> {
    let f = open_nonblocking(path).map_err(|source| ParamFileError::Io {
        action: "open",
        path: path.to_path_buf(),
        source,
    })?;
    read_bounded(path, f)
}

/// The type and size rules alone, for readers that learn them from elsewhere (a tar header).
///
/// # Errors
/// [`ParamFileError::NotRegular`] or [`ParamFileError::TooLarge`].
pub fn check(path: &Path, ft: &FileType, size: u64) -> Result<(), ParamFileError> {
    if !ft.is_file() {
        return Err(ParamFileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(ft),
        });
    }
    check_size(path, size)
}

/// The size rule alone.
///
/// # Errors
/// [`ParamFileError::TooLarge`].
pub fn check_size(path: &Path, size: u64) -> Result<(), ParamFileError> {
    if size > MAX_PARAMETER_BYTES {
        return Err(ParamFileError::TooLarge {
            path: path.to_path_buf(),
            size: Some(size),
        });
    }
    Ok(())
}

/// A parameter value from a file's bytes, as Argo's Go executor makes it: valid UTF-8 is kept
/// as is; each byte of an invalid sequence becomes U+FFFD (what Go's JSON encoder does to the
/// byte string). Returns the value and the offset of the first invalid byte, if any.
pub fn to_value(bytes: &[u8]) -> (String, Option<usize>) {
    let mut out = String::with_capacity(bytes.len());
    let mut first_bad = None;
    let mut rest = bytes;
    let mut offset = 0;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return (out, first_bad);
            }
            Err(e) => {
                let good = e.valid_up_to();
                // Safe: `from_utf8` just validated this prefix.
                out.push_str(std::str::from_utf8(&rest[..good]).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len() - good);
                first_bad.get_or_insert(offset + good);
                out.extend(std::iter::repeat_n('\u{FFFD}', bad));
                offset += good + bad;
                rest = &rest[good + bad..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_by_type_and_size() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"value\n").unwrap();
        assert_eq!(read_path(&f).unwrap(), b"value\n");
        let e = read_path(d.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        let fifo = d.path().join("fifo");
        nix_mkfifo(&fifo);
        // Opening a FIFO with no writer would block forever without O_NONBLOCK.
        let e = read_path(&fifo).unwrap_err().to_string();
        assert!(e.contains("is a FIFO (named pipe)"), "{e}");
        let big = d.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(10 * 1024 * 1024)
            .unwrap();
        let e = read_path(&big).unwrap_err().to_string();
        assert!(
            e.contains("is 10485760 bytes, above the 1048576-byte (1 MiB) limit")
                && e.contains("output artifact"),
            "{e}"
        );
        let exact = d.path().join("exact");
        std::fs::write(&exact, vec![b'x'; MAX_PARAMETER_BYTES as usize]).unwrap();
        assert_eq!(read_path(&exact).unwrap().len() as u64, MAX_PARAMETER_BYTES);
        assert!(read_path(&d.path().join("nope")).unwrap_err().is_not_found());
        let e = read_path(Path::new("/dev/null")).unwrap_err().to_string();
        assert!(e.contains("a character device"), "{e}");
    }

    fn nix_mkfifo(p: &Path) {
        let st = std::process::Command::new("mkfifo").arg(p).status().unwrap();
        assert!(st.success());
    }

    #[test]
    fn values_follow_go() {
        assert_eq!(to_value(b"caf\xc3\xa9"), ("café".to_string(), None));
        // Each byte of an invalid sequence is one U+FFFD, as Go's encoder writes it.
        assert_eq!(
            to_value(b"a\xff\xfeb"),
            ("a\u{FFFD}\u{FFFD}b".to_string(), Some(1))
        );
        assert_eq!(
            to_value(b"ab\xe2\x82"),
            ("ab\u{FFFD}\u{FFFD}".to_string(), Some(2))
        );
        assert_eq!(to_value(b"\xe2\x82x"), ("\u{FFFD}\u{FFFD}x".to_string(), Some(0)));
    }
}
