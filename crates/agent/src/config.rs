//! The agent's environment, as the controller's `createAgentPod` sets it (contract §1.4):
//! `ARGO_WORKFLOW_NAME`, `ARGO_WORKFLOW_UID`, `ARGO_PLUGIN_NAMES` and `ARGO_PLUGIN_ADDRESSES`
//! (JSON arrays, or `null` without plugins), `ARGO_AGENT_TASK_WORKERS` (default 16) and
//! `ARGO_AGENT_PATCH_RATE` (a Go duration, default 10 s). Argo exits 1 on a missing name or
//! a bad array and panics on a bad number; here each is an [`ConfigError`] naming the
//! variable and the value it could not read.
//!
//! Beyond Argo's variables: `ARGOEXEC_AGENT_MAX_BODY_BYTES` bounds a response body kept as
//! `outputs.result` (default [`DEFAULT_MAX_BODY`]; Argo reads any size, and a body over the
//! API's object limit then fails the status patch of every result), and
//! `ARGOEXEC_AGENT_CA_DIR` moves the extra CA bundle directory (default [`DEFAULT_CA_DIR`],
//! where the controller mounts `argo-workflows-agent-ca-certificates`).

use std::path::PathBuf;
use std::time::Duration;

use argoexec_core::PodPaths;
use argoexec_core::template::container::parse_go_duration;

/// Default task workers (`ARGO_AGENT_TASK_WORKERS`).
pub const DEFAULT_WORKERS: usize = 16;
/// Default time between status patches (`ARGO_AGENT_PATCH_RATE`, the controller's requeue time).
pub const DEFAULT_PATCH_RATE: Duration = Duration::from_secs(10);
/// Default bound of a response body (1 MiB; the API server refuses objects over about 1.5 MiB).
pub const DEFAULT_MAX_BODY: usize = 1 << 20;
/// Where the controller mounts the optional `argo-workflows-agent-ca-certificates` Secret.
pub const DEFAULT_CA_DIR: &str = "/etc/ssl/certs/ca-certificates";

/// What `agent main` needs from its environment.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// The workflow, whose name the task set has.
    pub workflow_name: String,
    /// The workflow's UID (sent to plugins).
    pub workflow_uid: String,
    /// The workflow's namespace.
    pub namespace: String,
    /// Tasks run at once.
    pub workers: usize,
    /// Time between status patches.
    pub patch_rate: Duration,
    /// The executor plugins, in the controller's order.
    pub plugins: Vec<PluginEndpoint>,
    /// Largest response body kept.
    pub max_body: usize,
    /// Extra trusted CA certificates (every PEM file in it), when the directory exists.
    pub ca_dir: PathBuf,
}

/// One executor plugin's sidecar (`Debug` never shows the token).
#[derive(Clone, PartialEq, Eq)]
pub struct PluginEndpoint {
    /// The sidecar's container name (its token directory's name).
    pub name: String,
    /// `http://localhost:<port>`.
    pub address: String,
    /// The bearer token `agent init` wrote for it.
    pub token: String,
}

impl std::fmt::Debug for PluginEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEndpoint")
            .field("name", &self.name)
            .field("address", &self.address)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// A variable the agent cannot use.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required variable is absent.
    #[error("{0} is not set (the controller sets it on the agent pod)")]
    Missing(&'static str),
    /// A variable's value does not parse.
    #[error("{name}={value:?} is not {expected}")]
    Bad {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// The plugin names and addresses differ in number.
    #[error("ARGO_PLUGIN_NAMES has {names} entries but ARGO_PLUGIN_ADDRESSES has {addresses}")]
    PluginCount {
        /// Names given.
        names: usize,
        /// Addresses given.
        addresses: usize,
    },
    /// A plugin's token cannot be read.
    #[error("cannot read the token of plugin {name} at {path} (written by `argoexec agent init`)")]
    Token {
        /// The plugin's container name.
        name: String,
        /// The token file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// `ARGO_PLUGIN_NAMES` (or another JSON array of strings): `null` and an absent value are
/// no entries only when `allow_absent`.
///
/// # Errors
/// [`ConfigError::Missing`] or [`ConfigError::Bad`].
pub fn string_array(
    name: &'static str,
    value: Option<String>,
    allow_absent: bool,
) -> Result<Vec<String>, ConfigError> {
    let Some(value) = value else {
        return if allow_absent {
            Ok(Vec::new())
        } else {
            Err(ConfigError::Missing(name))
        };
    };
    let parsed: Option<Vec<String>> = serde_json::from_str(&value).map_err(|_| ConfigError::Bad {
        name,
        value: value.clone(),
        expected: "a JSON array of strings (or null)",
    })?;
    Ok(parsed.unwrap_or_default())
}

/// The token file of plugin container `name`: `/var/run/argo/<name>/token`.
pub fn token_path(paths: &PodPaths, name: &str) -> PathBuf {
    paths.var_run_argo().join(name).join("token")
}

impl AgentConfig {
    /// Read the configuration through `get` (the process environment in the binary), the
    /// plugin tokens under `paths`, in `namespace`.
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable or token file.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
        paths: &PodPaths,
        namespace: String,
    ) -> Result<Self, ConfigError> {
        let workflow_name = get("ARGO_WORKFLOW_NAME").ok_or(ConfigError::Missing("ARGO_WORKFLOW_NAME"))?;
        let workflow_uid = get("ARGO_WORKFLOW_UID").ok_or(ConfigError::Missing("ARGO_WORKFLOW_UID"))?;
        let names = string_array("ARGO_PLUGIN_NAMES", get("ARGO_PLUGIN_NAMES"), true)?;
        let addresses = string_array("ARGO_PLUGIN_ADDRESSES", get("ARGO_PLUGIN_ADDRESSES"), true)?;
        if names.len() != addresses.len() {
            return Err(ConfigError::PluginCount {
                names: names.len(),
                addresses: addresses.len(),
            });
        }
        let mut plugins = Vec::with_capacity(names.len());
        for (name, address) in names.into_iter().zip(addresses) {
            let path = token_path(paths, &name);
            let token = std::fs::read_to_string(&path).map_err(|source| ConfigError::Token {
                name: name.clone(),
                path,
                source,
            })?;
            plugins.push(PluginEndpoint { name, address, token });
        }
        Ok(Self {
            workflow_name,
            workflow_uid,
            namespace,
            workers: number(&get, "ARGO_AGENT_TASK_WORKERS", DEFAULT_WORKERS)?,
            patch_rate: duration(&get, "ARGO_AGENT_PATCH_RATE", DEFAULT_PATCH_RATE)?,
            plugins,
            max_body: number(&get, "ARGOEXEC_AGENT_MAX_BODY_BYTES", DEFAULT_MAX_BODY)?,
            ca_dir: get("ARGOEXEC_AGENT_CA_DIR")
                .filter(|d| !d.is_empty())
                .map_or_else(|| PathBuf::from(DEFAULT_CA_DIR), PathBuf::from),
        })
    }
}

/// A positive integer variable; empty or absent is `default`.
fn number(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: usize,
) -> Result<usize, ConfigError> {
    match get(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v.trim().parse().ok().filter(|n| *n > 0).ok_or(ConfigError::Bad {
            name,
            value: v,
            expected: "a positive integer",
        }),
    }
}

/// A positive Go duration variable; empty or absent is `default`.
fn duration(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match get(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => parse_go_duration(v.trim())
            .filter(|d| !d.is_zero())
            .ok_or(ConfigError::Bad {
                name,
                value: v,
                expected: "a positive Go duration such as 10s or 500ms",
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn defaults_and_plugins_with_their_tokens() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        std::fs::create_dir_all(paths.var_run_argo().join("hello-executor-plugin")).unwrap();
        std::fs::write(token_path(&paths, "hello-executor-plugin"), "tok").unwrap();
        let c = AgentConfig::from_env(
            env(&[
                ("ARGO_WORKFLOW_NAME", "wf"),
                ("ARGO_WORKFLOW_UID", "u"),
                ("ARGO_PLUGIN_NAMES", r#"["hello-executor-plugin"]"#),
                ("ARGO_PLUGIN_ADDRESSES", r#"["http://localhost:4355"]"#),
            ]),
            &paths,
            "ns".into(),
        )
        .unwrap();
        assert_eq!(
            (c.workers, c.patch_rate, c.max_body),
            (16, DEFAULT_PATCH_RATE, DEFAULT_MAX_BODY)
        );
        assert_eq!(c.plugins[0].token, "tok");
        assert_eq!(c.plugins[0].address, "http://localhost:4355");
        assert_eq!(c.ca_dir, PathBuf::from(DEFAULT_CA_DIR));
        assert!(!format!("{c:?}").contains("tok\""), "the token is never printed");
    }

    #[test]
    fn null_plugins_rates_and_refusals() {
        let d = tempfile::tempdir().unwrap();
        let paths = PodPaths::new(d.path());
        let base = [("ARGO_WORKFLOW_NAME", "wf"), ("ARGO_WORKFLOW_UID", "u")];
        let with = |extra: &[(&str, &str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(extra);
            AgentConfig::from_env(env(&all), &paths, "ns".into())
        };
        let c = with(&[
            ("ARGO_PLUGIN_NAMES", "null"),
            ("ARGO_AGENT_PATCH_RATE", "250ms"),
            ("ARGO_AGENT_TASK_WORKERS", "3"),
        ])
        .unwrap();
        assert!(c.plugins.is_empty());
        assert_eq!((c.workers, c.patch_rate), (3, Duration::from_millis(250)));
        let e = with(&[("ARGO_AGENT_PATCH_RATE", "0s")]).unwrap_err().to_string();
        assert!(e.contains("ARGO_AGENT_PATCH_RATE=\"0s\""), "{e}");
        let e = with(&[("ARGO_AGENT_TASK_WORKERS", "many")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive integer"), "{e}");
        let e = with(&[("ARGO_PLUGIN_NAMES", "[\"a\"]")]).unwrap_err().to_string();
        assert!(e.contains("1 entries") && e.contains("has 0"), "{e}");
        let e = with(&[
            ("ARGO_PLUGIN_NAMES", "[\"a\"]"),
            ("ARGO_PLUGIN_ADDRESSES", "[\"http://x\"]"),
        ])
        .unwrap_err();
        assert!(matches!(e, ConfigError::Token { .. }), "{e}");
        let e = AgentConfig::from_env(env(&[]), &paths, "ns".into()).unwrap_err();
        assert!(e.to_string().starts_with("ARGO_WORKFLOW_NAME is not set"), "{e}");
    }
}
