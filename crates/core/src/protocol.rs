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
/// Liveness lock of the wrapper (ours only; Argo's wrappers do not write it): see
/// [`hold_alive`].
pub const ALIVE: &str = "alive";

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

/// The wrapper's side of the liveness lock: an exclusive `flock` on `dir/alive`, held by the
/// returned file until the process ends, however it ends. The kernel releases the lock when
/// the last descriptor closes, so a wrapper killed by SIGKILL or the OOM killer — which
/// never writes `exitcode` (Argo #9083) — is still noticed by [`wait_released`] at once.
/// The file is locked under a temporary name and renamed into place, so `alive` is never
/// seen unlocked while the wrapper lives. The descriptor is close-on-exec: the child does not
/// inherit (and prolong) the lock.
///
/// # Errors
/// Creating, locking or renaming the file.
pub fn hold_alive(dir: &Path) -> io::Result<fs::File> {
    let tmp = dir.join(format!(".{ALIVE}.{}.tmp", std::process::id()));
    let result = (|| {
        let f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o666)
            .open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(0o666))?;
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)?;
        fs::rename(&tmp, dir.join(ALIVE))?;
        Ok(f)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The wait side of the liveness lock: block until no process holds `path` (see
/// [`hold_alive`]), then let go of it at once, so a restarted wrapper can take it again.
/// Blocking: run it on a thread of its own.
///
/// # Errors
/// Opening the file (it does not exist: the wrapper has not started) or `flock` failing.
pub fn wait_released(path: &Path) -> io::Result<()> {
    let f = fs::File::open(path)?;
    loop {
        match rustix::fs::flock(&f, rustix::fs::FlockOperation::LockShared) {
            Ok(()) => break,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rustix::fs::flock(&f, rustix::fs::FlockOperation::Unlock)?;
    Ok(())
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
    fn the_alive_lock_is_released_only_when_its_holder_closes_it() {
        let d = tempfile::tempdir().unwrap();
        let held = hold_alive(d.path()).unwrap();
        let path = d.path().join(ALIVE);
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o666);
        // A second open file description cannot take it while `held` is open.
        let probe = fs::File::open(&path).unwrap();
        assert!(rustix::fs::flock(&probe, rustix::fs::FlockOperation::NonBlockingLockShared).is_err());
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let r = wait_released(&path);
                tx.send(()).unwrap();
                r
            })
        };
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(),
            "released while held"
        );
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("not released after close");
        waiter.join().unwrap().unwrap();
        // And the waiter let go of it again.
        assert!(rustix::fs::flock(&probe, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok());
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temp file left behind"
        );
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
