//! `argoexec agent init`: one random token per executor-plugin sidecar, at
//! `/var/run/argo/<container>/token` (directory 0770, file 0440, no newline), which the
//! sidecar reads through its `subPath` mount and the agent sends as its bearer token.
//!
//! As Argo (`NewAgentInitCommand` with apimachinery's `rand.String(32)`): 32 characters from
//! the 27-letter alphabet without vowels or look-alike digits, so a token never spells a
//! word; `<container>` is the sidecar's container name from `ARGO_PLUGIN_NAMES`. Unlike Argo
//! the directory may already exist (a restarted init container) and `/var/run/argo` is made
//! when missing, and a token is written to
//! a temporary file and renamed, so a sidecar never reads half of one.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use argoexec_core::PodPaths;

/// Token length.
pub const TOKEN_LEN: usize = 32;
/// apimachinery's `rand.String` alphabet.
pub const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Why a token could not be written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The system's random source failed.
    #[error("cannot read random bytes for a plugin token")]
    Random(#[source] getrandom::Error),
    /// A directory or file could not be written.
    #[error("cannot write the token of plugin {name} at {path}")]
    Write {
        /// The plugin's container name.
        name: String,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A name that is not one path component.
    #[error("plugin container name {0:?} is not a plain name")]
    BadName(String),
}

/// A fresh token.
///
/// # Errors
/// [`InitError::Random`].
pub fn token() -> Result<String, InitError> {
    // Rejection sampling keeps every letter equally likely: 243 = 9 × 27.
    let limit = (256 / ALPHABET.len() * ALPHABET.len()) as u8;
    let mut out = String::with_capacity(TOKEN_LEN);
    let mut buf = [0u8; 64];
    while out.len() < TOKEN_LEN {
        getrandom::fill(&mut buf).map_err(InitError::Random)?;
        for b in buf.iter().filter(|b| **b < limit) {
            if out.len() == TOKEN_LEN {
                break;
            }
            out.push(ALPHABET[usize::from(*b) % ALPHABET.len()] as char);
        }
    }
    Ok(out)
}

/// Write a token for every name; the paths written.
///
/// # Errors
/// [`InitError`] for the first name that fails.
pub fn write_tokens(paths: &PodPaths, names: &[String]) -> Result<Vec<PathBuf>, InitError> {
    let mut written = Vec::with_capacity(names.len());
    for name in names {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(InitError::BadName(name.clone()));
        }
        let dir = paths.var_run_argo().join(name);
        let err = |path: &Path| {
            let (name, path) = (name.clone(), path.to_path_buf());
            move |source| InitError::Write { name, path, source }
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o770)
            .create(&dir)
            .map_err(err(&dir))?;
        let path = crate::config::token_path(paths, name);
        let tmp = dir.join(".token.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o440)
            .open(&tmp)
            .map_err(err(&tmp))?;
        f.write_all(token()?.as_bytes()).map_err(err(&tmp))?;
        f.sync_all().map_err(err(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(err(&path))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn tokens_use_the_alphabet_and_differ() {
        let a = token().unwrap();
        assert_eq!(a.len(), TOKEN_LEN);
        assert!(a.bytes().all(|b| ALPHABET.contains(&b)), "{a}");
        assert_ne!(a, token().unwrap());
    }

    #[test]
    fn one_token_per_plugin_with_argos_modes_and_again_on_restart() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        std::fs::create_dir_all(paths.var_run_argo()).unwrap();
        let names = vec!["hello-executor-plugin".to_string(), "b".to_string()];
        let written = write_tokens(&paths, &names).unwrap();
        assert_eq!(written.len(), 2);
        let first = std::fs::read_to_string(&written[0]).unwrap();
        assert_eq!(first.len(), TOKEN_LEN, "no newline");
        let mode = std::fs::metadata(&written[0]).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o440);
        // A restarted init container writes new tokens over the old ones.
        write_tokens(&paths, &names).unwrap();
        assert_ne!(std::fs::read_to_string(&written[0]).unwrap(), first);
        assert!(write_tokens(&paths, &["../x".into()]).is_err());
        assert!(write_tokens(&paths, &[]).unwrap().is_empty());
    }
}
