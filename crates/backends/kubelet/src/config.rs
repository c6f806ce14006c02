//! The kubelet backend's configuration, from the wait container's environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `ARGO_KUBELET_HOST` | the node's IP (downward API `status.hostIP`) | required |
//! | `ARGO_KUBELET_PORT` | kubelet port; `0` or unparsable → 10250 (Argo's rule) | 10250 |
//! | `ARGO_KUBELET_INSECURE` | `true` skips certificate verification (logged at warn) | false |
//! | `ARGO_KUBELET_NODE_NAME` | `spec.nodeName`: the name tried after the IP | unset |
//! | `ARGO_KUBELET_SERVER_NAME` | verify the certificate against only this name | unset |
//! | `ARGO_KUBELET_CA_FILE` | CA bundle for the kubelet's certificate | the SA `ca.crt` |
//! | `ARGOEXEC_KUBELET_EXEC` | `kubelet` or `apiserver`: where exec (kill, file reads) goes | kubelet |
//! | `ARGOEXEC_KUBELET_POLL_MIN` / `_MAX` | bounds of the adaptive `/pods` poll | 50ms / 1s |
//! | `WAIT_CONTAINER_STATUS_CHECK_INTERVAL` | Argo v3's poll interval; used as the max when set | unset |
//!
//! The poll is adaptive: every `elapsed / 20` since the wait began, clamped to the bounds,
//! so the delay between a container's exit and the wait noticing stays within ~5 % of the
//! step's run time, and a step of hours costs one request per second at most.

use std::path::PathBuf;
use std::time::Duration;

use argoexec_core::template::container::parse_go_duration;

/// Where exec calls go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecVia {
    /// The kubelet's `/exec` (needs `nodes/proxy` for exec).
    Kubelet,
    /// The API server's `pods/exec` (needs `pods/exec` get+create): for clusters whose
    /// kubelet grant is meant for read-only paths (logs, pod status).
    ApiServer,
}

/// Errors in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `ARGO_KUBELET_HOST` is unset or empty.
    #[error(
        "ARGO_KUBELET_HOST is empty: the kubelet executor needs the node's address (downward API status.hostIP)"
    )]
    NoHost,
    /// A variable has a bad value.
    #[error("environment variable {name} has invalid value {value:?}: {expected}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
}

/// The adaptive poll of `/pods`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poll {
    /// Shortest interval.
    pub min: Duration,
    /// Longest interval.
    pub max: Duration,
}

impl Default for Poll {
    fn default() -> Self {
        Self {
            min: Duration::from_millis(50),
            max: Duration::from_secs(1),
        }
    }
}

impl Poll {
    /// The pause before the next poll, `elapsed` after the wait began.
    pub fn interval(&self, elapsed: Duration) -> Duration {
        (elapsed / 20).clamp(self.min, self.max.max(self.min))
    }
}

/// The kubelet backend's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletConfig {
    /// The node address.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Skip verification.
    pub insecure: bool,
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// Fixed verify name.
    pub server_name: Option<String>,
    /// CA bundle override.
    pub ca_file: Option<PathBuf>,
    /// Where exec goes.
    pub exec_via: ExecVia,
    /// The poll.
    pub poll: Poll,
}

fn duration_var(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<Duration>, ConfigError> {
    match get(name) {
        None => Ok(None),
        Some(v) => parse_go_duration(&v).map(Some).ok_or(ConfigError::Invalid {
            name,
            value: v.clone(),
            expected: "a duration such as 100ms or 2s",
        }),
    }
}

impl KubeletConfig {
    /// Read the settings through `get` (the process environment in production).
    ///
    /// # Errors
    /// [`ConfigError`] naming the variable.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let host = get("ARGO_KUBELET_HOST").ok_or(ConfigError::NoHost)?;
        let port = match get("ARGO_KUBELET_PORT").and_then(|p| p.parse::<u16>().ok()) {
            None | Some(0) => 10250,
            Some(p) => p,
        };
        let insecure = match get("ARGO_KUBELET_INSECURE").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(v) => {
                return Err(ConfigError::Invalid {
                    name: "ARGO_KUBELET_INSECURE",
                    value: v.into(),
                    expected: "true or false",
                });
            }
        };
        let exec_via = match get("ARGOEXEC_KUBELET_EXEC").as_deref() {
            None | Some("kubelet") => ExecVia::Kubelet,
            Some("apiserver") => ExecVia::ApiServer,
            Some(v) => {
                return Err(ConfigError::Invalid {
                    name: "ARGOEXEC_KUBELET_EXEC",
                    value: v.into(),
                    expected: "kubelet or apiserver",
                });
            }
        };
        let mut poll = Poll::default();
        if let Some(d) = duration_var(&get, "WAIT_CONTAINER_STATUS_CHECK_INTERVAL")? {
            poll.max = d;
        }
        if let Some(d) = duration_var(&get, "ARGOEXEC_KUBELET_POLL_MIN")? {
            poll.min = d;
        }
        if let Some(d) = duration_var(&get, "ARGOEXEC_KUBELET_POLL_MAX")? {
            poll.max = d;
        }
        Ok(Self {
            host,
            port,
            insecure,
            node_name: get("ARGO_KUBELET_NODE_NAME"),
            server_name: get("ARGO_KUBELET_SERVER_NAME"),
            ca_file: get("ARGO_KUBELET_CA_FILE").map(PathBuf::from),
            exec_via,
            poll,
        })
    }

    /// `https://host:port`, IPv6 bracketed.
    pub fn url(&self) -> String {
        match self.host.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V6(ip)) => format!("https://[{ip}]:{}", self.port),
            _ => format!("https://{}:{}", self.host, self.port),
        }
    }

    /// The names the certificate may be valid for, in order: the fixed server name alone
    /// when set, else the host, then the node name.
    pub fn verify_names(&self) -> Vec<String> {
        if let Some(n) = &self.server_name {
            return vec![n.clone()];
        }
        let mut v = vec![self.host.clone()];
        if let Some(n) = &self.node_name
            && *n != self.host
        {
            v.push(n.clone());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<KubeletConfig, ConfigError> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        KubeletConfig::from_env(move |k| m.get(k).cloned())
    }

    #[test]
    fn defaults_and_argo_rules() {
        assert_eq!(cfg(&[]), Err(ConfigError::NoHost));
        let c = cfg(&[("ARGO_KUBELET_HOST", "10.0.0.5"), ("ARGO_KUBELET_PORT", "0")]).unwrap();
        assert_eq!(
            (c.url(), c.insecure, c.exec_via),
            ("https://10.0.0.5:10250".into(), false, ExecVia::Kubelet)
        );
        assert_eq!(
            cfg(&[("ARGO_KUBELET_HOST", "h"), ("ARGO_KUBELET_PORT", "x")])
                .unwrap()
                .port,
            10250
        );
        assert_eq!(c.verify_names(), ["10.0.0.5"]);
        let c = cfg(&[
            ("ARGO_KUBELET_HOST", "fd00::5"),
            ("ARGO_KUBELET_PORT", "10255"),
            ("ARGO_KUBELET_NODE_NAME", "node-a"),
            ("ARGO_KUBELET_INSECURE", "true"),
            ("ARGOEXEC_KUBELET_EXEC", "apiserver"),
            ("WAIT_CONTAINER_STATUS_CHECK_INTERVAL", "5s"),
            ("ARGOEXEC_KUBELET_POLL_MIN", "10ms"),
        ])
        .unwrap();
        assert_eq!(c.url(), "https://[fd00::5]:10255");
        assert_eq!(c.verify_names(), ["fd00::5", "node-a"]);
        assert!(c.insecure);
        assert_eq!(c.exec_via, ExecVia::ApiServer);
        assert_eq!(
            c.poll,
            Poll {
                min: Duration::from_millis(10),
                max: Duration::from_secs(5)
            }
        );
        let c = cfg(&[
            ("ARGO_KUBELET_HOST", "h"),
            ("ARGO_KUBELET_NODE_NAME", "n"),
            ("ARGO_KUBELET_SERVER_NAME", "kubelet.example"),
        ])
        .unwrap();
        assert_eq!(c.verify_names(), ["kubelet.example"]);
        let e = cfg(&[("ARGO_KUBELET_HOST", "h"), ("ARGO_KUBELET_INSECURE", "yes")]).unwrap_err();
        assert!(e.to_string().contains("ARGO_KUBELET_INSECURE"), "{e}");
        let e = cfg(&[("ARGO_KUBELET_HOST", "h"), ("ARGOEXEC_KUBELET_POLL_MAX", "soon")]).unwrap_err();
        assert!(e.to_string().contains("ARGOEXEC_KUBELET_POLL_MAX"), "{e}");
    }

    #[test]
    fn poll_adapts_to_elapsed_time() {
        let p = Poll::default();
        assert_eq!(p.interval(Duration::ZERO), Duration::from_millis(50));
        assert_eq!(p.interval(Duration::from_secs(4)), Duration::from_millis(200));
        assert_eq!(p.interval(Duration::from_secs(3600)), Duration::from_secs(1));
    }
}
