//! What one request asks about: the artifact's `plugin.configuration`, parsed as YAML, and
//! its `plugin.key`, resolved to a path under the configuration's `root`.
//!
//! ```yaml
//! root: /data            # required, absolute: where the artifacts are kept
//! refuse: [save, list]   # optional test knob: these operations answer that they failed
//! ```
//!
//! Unknown fields are an error (a misspelt knob should not pass silently). A key is a
//! relative path under `root`: an absolute key, a key with a `..` component and a key that
//! names `root` itself (empty, `.`) are refused.

use std::path::{Component, Path, PathBuf};

use argoexec_artifact_plugin::wire;
use serde::Deserialize;

/// An operation the configuration's `refuse` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `Load`.
    Load,
    /// `Save`.
    Save,
    /// `Delete`.
    Delete,
    /// `ListObjects`.
    List,
    /// `IsDirectory`.
    IsDirectory,
    /// `OpenStream`.
    OpenStream,
}

impl Op {
    /// The operation's name as `refuse` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Load => "load",
            Self::Save => "save",
            Self::Delete => "delete",
            Self::List => "list",
            Self::IsDirectory => "is_directory",
            Self::OpenStream => "open_stream",
        }
    }
}

/// The plugin's configuration, from an artifact's `plugin.configuration`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the artifacts are kept; a key `k` is the file or directory `<root>/k`.
    pub root: PathBuf,
    /// Operations that answer that they failed, to test how callers handle it.
    #[serde(default)]
    pub refuse: Vec<Op>,
}

/// Why a request cannot be served (the plugin answers `INVALID_ARGUMENT`).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The request has no artifact.
    #[error("the request carries no artifact")]
    NoArtifact,
    /// The artifact has no plugin location.
    #[error("artifact {0:?} has no plugin location")]
    NoPlugin(String),
    /// The configuration is not valid.
    #[error("invalid configuration {text:?}: {message}")]
    Config {
        /// The configuration as given.
        text: String,
        /// What is wrong with it.
        message: String,
    },
    /// The key cannot be used.
    #[error("key {key:?} {why}")]
    BadKey {
        /// The key as given.
        key: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Another field of the request is missing.
    #[error("the request has no {0}")]
    Missing(&'static str),
}

impl Config {
    /// Parse `text` (YAML).
    ///
    /// # Errors
    /// [`RequestError::Config`] when it is not valid YAML, misses `root`, names an unknown
    /// field or operation, or `root` is not absolute.
    pub fn parse(text: &str) -> Result<Self, RequestError> {
        let bad = |message: String| RequestError::Config {
            text: text.to_string(),
            message,
        };
        let config: Self = serde_saphyr::from_str(text).map_err(|e| bad(e.to_string()))?;
        if !config.root.is_absolute() {
            return Err(bad(format!(
                "root {:?} is not an absolute path",
                config.root.display().to_string()
            )));
        }
        Ok(config)
    }

    /// Whether `refuse` names `op`.
    pub fn refuses(&self, op: Op) -> bool {
        self.refuse.contains(&op)
    }

    /// The path of `key` under `root`.
    ///
    /// # Errors
    /// [`RequestError::BadKey`] for an absolute key, a `..` component or a key that names
    /// `root` itself.
    pub fn key_path(&self, key: &str) -> Result<PathBuf, RequestError> {
        let bad = |why| RequestError::BadKey {
            key: key.to_string(),
            why,
        };
        let mut path = self.root.clone();
        let mut parts = 0;
        for c in Path::new(key).components() {
            match c {
                Component::Normal(part) => {
                    path.push(part);
                    parts += 1;
                }
                Component::CurDir => {}
                Component::ParentDir => return Err(bad("has a `..` component")),
                Component::RootDir | Component::Prefix(_) => return Err(bad("is absolute")),
            }
        }
        if parts == 0 {
            return Err(bad("names no object under the root"));
        }
        Ok(path)
    }
}

/// One request's artifact: its configuration, its key and the key's path.
#[derive(Debug, Clone)]
pub struct Target {
    /// The configuration.
    pub config: Config,
    /// The key as given.
    pub key: String,
    /// `<root>/<key>`.
    pub path: PathBuf,
}

impl Target {
    /// The target of `art` (a request's artifact).
    ///
    /// # Errors
    /// A [`RequestError`] when the artifact, its plugin location, its configuration or its
    /// key is missing or not valid.
    pub fn of(art: Option<&wire::Artifact>) -> Result<Self, RequestError> {
        let art = art.ok_or(RequestError::NoArtifact)?;
        let plugin = art
            .plugin
            .as_ref()
            .ok_or_else(|| RequestError::NoPlugin(art.name.clone()))?;
        let config = Config::parse(&plugin.configuration)?;
        let path = config.key_path(&plugin.key)?;
        Ok(Self {
            config,
            key: plugin.key.clone(),
            path,
        })
    }

    /// The answer of an operation the configuration refuses, if it refuses `op`.
    pub fn refused(&self, op: Op) -> Option<String> {
        self.config.refuses(op).then(|| {
            format!(
                "{} of key {} refused by the configuration (refuse: [{}])",
                op.as_str(),
                self.key,
                op.as_str()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_refuse_are_read_and_mistakes_refused() {
        let c = Config::parse("root: /data\nrefuse: [save, is_directory]\n").unwrap();
        assert_eq!(c.root, Path::new("/data"));
        assert!(c.refuses(Op::Save) && c.refuses(Op::IsDirectory) && !c.refuses(Op::Load));
        assert_eq!(Config::parse("root: /d").unwrap().refuse, []);
        for bad in [
            "",
            "refuse: [save]",
            "root: data",
            "root: /d\nrefuse: [copy]",
            "root: /d\nroots: 1",
        ] {
            let e = Config::parse(bad).unwrap_err();
            assert!(matches!(e, RequestError::Config { .. }), "{bad:?}: {e}");
        }
    }

    #[test]
    fn keys_stay_under_the_root() {
        let c = Config::parse("root: /data").unwrap();
        assert_eq!(
            c.key_path("wf/pod/a.txt").unwrap(),
            Path::new("/data/wf/pod/a.txt")
        );
        assert_eq!(c.key_path("./wf//a/").unwrap(), Path::new("/data/wf/a"));
        for (key, why) in [
            ("/etc/passwd", "is absolute"),
            ("wf/../../etc", "has a `..` component"),
            ("..", "has a `..` component"),
            ("", "names no object under the root"),
            ("./", "names no object under the root"),
        ] {
            let e = c.key_path(key).unwrap_err();
            assert!(e.to_string().ends_with(why), "{key:?}: {e}");
        }
    }
}
