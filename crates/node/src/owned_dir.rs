//! Directories owned by one live process, and the sweep of those whose owner died.
//!
//! A node keeps some state as mounts under its state directory (on containerd, the pods'
//! IPC namespaces). A node that crashes cannot undo them, and nodes may share a state
//! directory (the default is one per machine), so a later node may sweep only what no live
//! node owns. Ownership is a `flock(2)` on the directory's `lock` file, held by the owner's
//! open file for its life: the kernel drops it when the process ends however it ends, and
//! a reused PID cannot pass for the owner (as a PID file could). The lock file is locked
//! before it takes its name, and the directory is made under a hidden name and renamed
//! into place once locked, so a sweep never meets a live owner's lock unheld.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

/// The file whose lock is the ownership.
const LOCK: &str = "lock";

/// A directory this process owns until the value drops (which unmounts what is mounted
/// below it and removes it).
#[derive(Debug)]
pub struct OwnedDir {
    path: PathBuf,
    /// Held for the value's life (`None` only in a test that plays a crash).
    lock: Option<File>,
}

impl OwnedDir {
    /// Make `<parent>/<prefix><random>` (and `parent`), owned by this process, mode 0755
    /// whatever the umask (containers of any user find their volumes below it).
    ///
    /// # Errors
    /// The directory, its lock file, the lock or the rename failed.
    pub fn create(parent: &Path, prefix: &str) -> io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(parent)?;
        let name = format!("{prefix}{}", crate::node::new_uid().replace('-', ""));
        let hidden = parent.join(format!(".{name}"));
        std::fs::create_dir(&hidden)?;
        let made = (|| {
            std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o755))?;
            // Locked under another name, then renamed: a sweep that finds `lock` (in the
            // hidden directory too) always finds it held.
            let unlocked = hidden.join(format!("{LOCK}.new"));
            let lock = File::create(&unlocked)?;
            flock(&lock, FlockOperation::NonBlockingLockExclusive)?;
            std::fs::rename(&unlocked, hidden.join(LOCK))?;
            let path = parent.join(&name);
            std::fs::rename(&hidden, &path)?;
            Ok(Self {
                path,
                lock: Some(lock),
            })
        })();
        if made.is_err() {
            let _ = std::fs::remove_dir_all(&hidden);
        }
        made
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        debug_assert!(self.lock.is_some());
        crate::tmpfs::unmount_below(&self.path);
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "could not remove an owned directory");
        }
    }
}

/// The directory of an owner that is gone, locked by this process while the value lives
/// (so that two sweeps do not both act on it).
#[derive(Debug)]
pub struct DeadDir {
    path: PathBuf,
    _lock: File,
}

impl DeadDir {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unmount what is mounted below it, and remove it.
    ///
    /// # Errors
    /// The removal failed.
    pub fn remove(self) -> io::Result<()> {
        crate::tmpfs::unmount_below(&self.path);
        std::fs::remove_dir_all(&self.path)
    }
}

/// The directories of `parent` named `<prefix>…` (or `.<prefix>…`, not yet in place), by
/// whether their owner lives. One without a lock file is in neither list.
#[derive(Debug, Default)]
pub struct Scan {
    /// Those whose owner is gone.
    pub dead: Vec<DeadDir>,
    /// Those whose owner holds the lock.
    pub live: Vec<PathBuf>,
}

/// Look at `parent`'s directories named `<prefix>…` (see [`Scan`]).
pub fn scan(parent: &Path, prefix: &str) -> Scan {
    let mut found = Scan::default();
    let Ok(entries) = std::fs::read_dir(parent) else {
        return found;
    };
    let hidden = format!(".{prefix}");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(prefix) || name.starts_with(&hidden)) {
            continue;
        }
        let path = entry.path();
        let Ok(lock) = File::open(path.join(LOCK)) else {
            continue;
        };
        if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok() {
            found.dead.push(DeadDir { path, _lock: lock });
        } else {
            found.live.push(path);
        }
    }
    found
}

/// Unmount what is mounted below, and remove, every directory of `parent` named
/// `<prefix>…` whose owner is gone ([`scan`]); how many were removed.
pub fn sweep_dead(parent: &Path, prefix: &str) -> usize {
    let mut swept = 0;
    for dead in scan(parent, prefix).dead {
        let path = dead.path().to_path_buf();
        match dead.remove() {
            Ok(()) => swept += 1,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "could not sweep a dead node's directory")
            }
        }
    }
    swept
}

#[cfg(test)]
mod tests {
    use super::*;

    impl OwnedDir {
        /// What a crash leaves: the lock released, the directory and its mounts kept.
        fn abandon(mut self) {
            drop(self.lock.take());
            std::mem::forget(self);
        }
    }

    fn mounted(path: &Path) -> bool {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let path = path.display().to_string();
        info.lines().any(|l| l.split(' ').nth(4) == Some(path.as_str()))
    }

    /// A tmpfs at `<dir>/m`, when this process may mount (the node runs as root).
    fn mount_in(dir: &Path) -> Option<PathBuf> {
        let m = dir.join("m");
        std::fs::create_dir(&m).unwrap();
        crate::tmpfs::mount(&m, Some(1 << 20)).ok().map(|()| m)
    }

    #[test]
    fn a_dead_owners_directory_is_swept_and_a_live_ones_kept() {
        let parent = tempfile::tempdir().unwrap();
        let live = OwnedDir::create(parent.path(), "ipc-").unwrap();
        let dead = OwnedDir::create(parent.path(), "ipc-").unwrap();
        let (live_path, dead_path) = (live.path().to_path_buf(), dead.path().to_path_buf());
        let dead_mount = mount_in(&dead_path);
        dead.abandon();
        // Not ours to judge: another prefix, and a directory without a lock.
        std::fs::create_dir(parent.path().join("other-1")).unwrap();
        std::fs::create_dir(parent.path().join("ipc-nolock")).unwrap();

        let found = scan(parent.path(), "ipc-");
        assert_eq!(found.live, std::slice::from_ref(&live_path));
        assert_eq!(found.dead.len(), 1);
        assert_eq!(found.dead[0].path(), dead_path);
        // A second sweep meanwhile finds the dead one taken.
        assert!(scan(parent.path(), "ipc-").dead.is_empty());
        drop(found);
        assert_eq!(sweep_dead(parent.path(), "ipc-"), 1);
        assert!(!dead_path.exists());
        if let Some(m) = dead_mount {
            assert!(!mounted(&m), "{} still mounted", m.display());
        }
        assert!(live_path.join(LOCK).exists());
        assert!(parent.path().join("other-1").exists() && parent.path().join("ipc-nolock").exists());
        // Once the owner is gone (dropped: it removes its own), nothing is left to sweep.
        drop(live);
        assert!(!live_path.exists());
        assert_eq!(sweep_dead(parent.path(), "ipc-"), 0);
    }

    #[test]
    fn dropping_unmounts_and_removes() {
        let parent = tempfile::tempdir().unwrap();
        let owned = OwnedDir::create(parent.path(), "x-").unwrap();
        let path = owned.path().to_path_buf();
        assert!(path.file_name().unwrap().to_string_lossy().starts_with("x-"));
        let m = mount_in(&path);
        drop(owned);
        assert!(!path.exists());
        if let Some(m) = m {
            assert!(!mounted(&m));
        }
    }

    #[test]
    fn a_half_made_directory_of_a_dead_owner_is_swept() {
        let parent = tempfile::tempdir().unwrap();
        let hidden = parent.path().join(".ipc-halfmade");
        std::fs::create_dir(&hidden).unwrap();
        File::create(hidden.join(LOCK)).unwrap();
        assert_eq!(sweep_dead(parent.path(), "ipc-"), 1);
        assert!(!hidden.exists());
    }
}
