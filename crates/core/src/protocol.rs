//! The emissary file protocol under `/var/run/argo`, shared by the wrapper (writer of
//! `exitcode`, reader of `signal`) and the wait side (the reverse).
//!
//! Compatible with Argo's layout so wrappers and wait containers of either implementation can
//! be mixed: `exitcode` is a decimal with no newline, `signal` a decimal that the wrapper
//! deletes after reading, directories 0777 and files 0666 under umask 0 so containers with
//! different UIDs can write each other's files. One deliberate difference: both files are
//! written atomically (temporary file + rename), so a reader never sees a half-written value;
//! Argo's readers accept that too, because the final name only appears complete.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// File holding the container's exit code.
pub const EXITCODE: &str = "exitcode";
/// File the wait side writes a signal number into.
pub const SIGNAL: &str = "signal";
/// Tee of the child's stdout.
pub const STDOUT: &str = "stdout";
/// Tee of stdout and stderr, interleaved as written.
pub const COMBINED: &str = "combined";
/// Release file for `ARGO_DEBUG_PAUSE_BEFORE`.
pub const PAUSE_BEFORE: &str = "before";
/// Release file for `ARGO_DEBUG_PAUSE_AFTER`.
pub const PAUSE_AFTER: &str = "after";

/// Parse an `exitcode` file's content.
pub fn parse_exitcode(text: &str) -> Option<i32> {
    text.trim().parse().ok()
}

/// Parse a `signal` file's content: a number > 0.
pub fn parse_signal(text: &str) -> Option<i32> {
    text.trim().parse().ok().filter(|n| *n > 0)
}

/// Write `contents` to `path` atomically: a temporary sibling is written, chmod'ed to `mode`,
/// synced and renamed into place.
///
/// # Errors
/// Any I/O error of the steps above; the temporary file is removed on failure.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Create `dir` (and parents) with mode 0777 regardless of the umask.
///
/// # Errors
/// Creation or chmod failure.
pub fn create_shared_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o777))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parse_files() {
        assert_eq!(parse_exitcode("143"), Some(143));
        assert_eq!(parse_exitcode("x"), None);
        assert_eq!(parse_signal("15\n"), Some(15));
        assert_eq!(parse_signal("0"), None);
        assert_eq!(parse_signal("-9"), None);
    }

    #[test]
    fn atomic_write_sets_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("exitcode");
        write_atomic(&p, b"0", 0o666).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "0");
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o666);
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temp file left behind"
        );
    }
}
