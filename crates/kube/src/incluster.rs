//! In-cluster configuration: where the API server is and how to talk to it.
//!
//! The address comes from `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT` (the port
//! defaults to 443; IPv6 literals are bracketed), the credentials from the service-account
//! directory: `token`, `ca.crt` and `namespace` (k8s-wire-protocols §4). The directory is
//! `ARGOEXEC_SERVICEACCOUNT_DIR` when set, else [`PodPaths::service_account_dir`]
//! (`/var/run/secrets/kubernetes.io/serviceaccount`, re-rooted by `ARGOEXEC_PATH_ROOT`).
//! The API server counts as configured when the host variable is set and the token file
//! exists ([`InClusterConfig::discover`]).
//!
//! TLS verification is always on, against `ca.crt` only, re-read as soon as the file changes
//! to follow a CA rotation ([`InClusterConfig::connect`]). The bearer token does not
//! go through kube-rs' token-file auth, which re-reads only on a ~60 s timer: a
//! [`TokenSource`] adds the header to every request and re-reads the file whenever its
//! metadata (device, inode, size, mtime — following the projected volume's `..data`
//! symlink) changed, keeping the last good token if a re-read fails. The token is never
//! logged: the header is marked sensitive and [`TokenSource`]'s `Debug` shows the path only.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::SystemTime;

use argoexec_core::PodPaths;
use http::HeaderValue;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

pub use argoexec_core::paths::SERVICE_ACCOUNT_DIR_ENV;
/// The API server's host, injected into every pod.
pub const HOST_ENV: &str = "KUBERNETES_SERVICE_HOST";
/// The API server's port, injected into every pod.
pub const PORT_ENV: &str = "KUBERNETES_SERVICE_PORT";

/// Errors of the in-cluster configuration.
#[derive(Debug, thiserror::Error)]
pub enum InClusterError {
    /// `KUBERNETES_SERVICE_PORT` is not a port number.
    #[error("environment variable {PORT_ENV} has invalid value {value:?}: expected a port number")]
    BadPort {
        /// The value.
        value: String,
    },
    /// The API server address does not make a URL.
    #[error("API server address {url:?} is not a valid URL: {reason}")]
    BadUrl {
        /// The URL built from the environment.
        url: String,
        /// The parse error.
        reason: String,
    },
    /// A service-account file could not be read.
    #[error("read {what} {}: {error}", path.display())]
    Read {
        /// `token` or `CA bundle`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The error (in the message, not a `source`, so chains do not repeat it).
        error: std::io::Error,
    },
    /// `ca.crt` holds no usable PEM certificate.
    #[error("CA bundle {} holds no usable PEM certificate: {reason}", path.display())]
    BadCa {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The token file is empty or not a valid header value.
    #[error("token file {} is empty or not a valid bearer token", path.display())]
    BadToken {
        /// The file.
        path: PathBuf,
    },
    /// No namespace: `ARGO_NAMESPACE` is unset and the namespace file is missing or empty.
    #[error("no namespace: ARGO_NAMESPACE is unset and {} is missing or empty", path.display())]
    NoNamespace {
        /// The namespace file.
        path: PathBuf,
    },
    /// kube-rs refused to build the client.
    #[error("build the API client: {message}")]
    Client {
        /// The error chain.
        message: String,
    },
}

/// Where the API server is and where the service account's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InClusterConfig {
    /// `https://host[:port]`.
    pub server: String,
    /// The service-account directory (`token`, `ca.crt`, `namespace`).
    pub service_account_dir: PathBuf,
}

impl InClusterConfig {
    /// Discover from the process environment; see [`Self::discover`].
    ///
    /// # Errors
    /// See [`Self::discover`].
    pub fn from_env(paths: &PodPaths) -> Result<Option<Self>, InClusterError> {
        Self::discover(|k| std::env::var(k).ok(), paths)
    }

    /// `Some` when the API server is configured: `KUBERNETES_SERVICE_HOST` is set and the
    /// token file exists; `None` otherwise (use the local sink).
    ///
    /// # Errors
    /// [`InClusterError::BadPort`] for a malformed `KUBERNETES_SERVICE_PORT`.
    pub fn discover(
        get: impl Fn(&str) -> Option<String>,
        paths: &PodPaths,
    ) -> Result<Option<Self>, InClusterError> {
        let opt = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let dir = opt(SERVICE_ACCOUNT_DIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| paths.service_account_dir());
        let Some(host) = opt(HOST_ENV) else {
            return Ok(None);
        };
        if !dir.join("token").is_file() {
            return Ok(None);
        }
        let port = match opt(PORT_ENV) {
            None => 443,
            Some(v) => v
                .parse::<u16>()
                .map_err(|_| InClusterError::BadPort { value: v.clone() })?,
        };
        Ok(Some(Self {
            server: server_url(&host, port),
            service_account_dir: dir,
        }))
    }

    /// The host part of [`Self::server`] (IPv6 without brackets), the name its TLS
    /// certificate is verified against.
    pub fn server_host(&self) -> String {
        let rest = self.server.trim_start_matches("https://");
        let host = match rest.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(v6),
            None => rest.split([':', '/']).next().unwrap_or(rest),
        };
        host.to_string()
    }

    /// `<dir>/token`.
    pub fn token_file(&self) -> PathBuf {
        self.service_account_dir.join("token")
    }

    /// `<dir>/ca.crt`.
    pub fn ca_file(&self) -> PathBuf {
        self.service_account_dir.join("ca.crt")
    }

    /// `<dir>/namespace`.
    pub fn namespace_file(&self) -> PathBuf {
        self.service_account_dir.join("namespace")
    }

    /// The service account's namespace, trimmed.
    ///
    /// # Errors
    /// [`InClusterError::NoNamespace`] when the file is missing or empty.
    pub fn namespace(&self) -> Result<String, InClusterError> {
        let path = self.namespace_file();
        match std::fs::read_to_string(&path) {
            Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            _ => Err(InClusterError::NoNamespace { path }),
        }
    }

    /// The kube-rs configuration: this server, `ca.crt` as the only root (re-read by kube-rs
    /// on rotation), no certificate bypass, no kube-rs auth (see [`TokenSource`]) and no
    /// kube-rs retries (the reporter retries with Argo's backoff).
    ///
    /// # Errors
    /// [`InClusterError::BadUrl`], [`InClusterError::Read`], [`InClusterError::BadCa`].
    pub fn kube_config(&self) -> Result<kube::Config, InClusterError> {
        let url: http::Uri =
            self.server
                .parse()
                .map_err(|e: http::uri::InvalidUri| InClusterError::BadUrl {
                    url: self.server.clone(),
                    reason: e.to_string(),
                })?;
        let ca = self.ca_file();
        let mut config = kube::Config::new(url);
        config.root_cert = Some(load_ca(&ca)?);
        config.root_cert_file = Some(ca);
        config.accept_invalid_certs = false;
        config.default_retry = false;
        if let Ok(ns) = self.namespace() {
            config.default_namespace = ns;
        }
        Ok(config)
    }

    /// A client for this server and the token source for its requests. Installs the
    /// aws-lc-rs rustls provider first when the process has none. Call inside a Tokio
    /// runtime (the client spawns its connection task).
    ///
    /// # Errors
    /// Those of [`Self::kube_config`] and [`TokenSource::new`]; [`InClusterError::Client`].
    ///
    /// The client verifies with [`crate::tls::NameFallbackVerifier`], which re-reads
    /// `ca.crt` as soon as the file changes (kube-rs' own reload waits up to a minute), so a
    /// CA rotated mid-step is followed on the next connection.
    pub fn connect(&self) -> Result<(kube::Client, TokenSource), InClusterError> {
        install_crypto_provider();
        let token = TokenSource::new(self.token_file())?;
        let client = crate::client::Endpoint {
            url: self.server.clone(),
            tls: crate::tls::TlsPolicy::Verify {
                ca_file: self.ca_file(),
                names: vec![self.server_host()],
            },
            token: std::sync::Arc::new(TokenSource::new(self.token_file())?),
            namespace: self.namespace().unwrap_or_else(|_| "default".into()),
            what: "API server",
        }
        .client()
        .map_err(|e| InClusterError::Client {
            message: crate::chain(&e),
        })?;
        Ok((client, token))
    }
}

/// `https://host[:port]`, IPv6 literals bracketed, port omitted when 443.
fn server_url(host: &str, port: u16) -> String {
    let host = match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]"),
        _ => host.to_string(),
    };
    if port == 443 {
        format!("https://{host}")
    } else {
        format!("https://{host}:{port}")
    }
}

/// The DER certificates of a PEM bundle.
fn load_ca(path: &Path) -> Result<Vec<Vec<u8>>, InClusterError> {
    let pem = std::fs::read(path).map_err(|error| InClusterError::Read {
        what: "CA bundle",
        path: path.to_path_buf(),
        error,
    })?;
    let bad = |reason: String| InClusterError::BadCa {
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no CERTIFICATE block".into()));
    }
    Ok(certs)
}

/// Make aws-lc-rs the process's rustls provider unless one is installed already.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Fails only if another thread installed one in between: fine either way.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        }
    });
}

/// The bearer token, re-read whenever the file changes.
pub struct TokenSource {
    path: PathBuf,
    cached: Mutex<Option<(Stamp, HeaderValue)>>,
}

/// What identifies one version of the token file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: Option<SystemTime>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl TokenSource {
    /// A source reading `path`, read once now.
    ///
    /// # Errors
    /// [`InClusterError::Read`] or [`InClusterError::BadToken`] when the first read fails.
    pub fn new(path: impl Into<PathBuf>) -> Result<Self, InClusterError> {
        let s = Self {
            path: path.into(),
            cached: Mutex::new(None),
        };
        s.header()?;
        Ok(s)
    }

    /// The token file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Authorization: Bearer <token>` (marked sensitive), re-reading the file when it
    /// changed. A failed re-read keeps the previous token (logged without the token).
    ///
    /// # Errors
    /// When the file cannot be read and no token was read before.
    pub fn header(&self) -> Result<HeaderValue, InClusterError> {
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        let stamp = std::fs::metadata(&self.path).ok().map(|m| Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.modified().ok(),
        });
        if let (Some(s), Some((old, h))) = (&stamp, cached.as_ref())
            && s == old
        {
            return Ok(h.clone());
        }
        match self.read() {
            Ok(h) => {
                if cached.is_some() {
                    tracing::debug!(path = %self.path.display(), "service-account token changed; re-read");
                }
                // Without a stamp (stat failed, read worked) the next call reads again.
                let stamp = stamp.unwrap_or(Stamp {
                    dev: 0,
                    ino: 0,
                    len: u64::MAX,
                    mtime: None,
                });
                *cached = Some((stamp, h.clone()));
                Ok(h)
            }
            Err(e) => match cached.as_ref() {
                Some((_, h)) => {
                    tracing::warn!(error = %e, "cannot re-read the service-account token; keeping the previous one");
                    Ok(h.clone())
                }
                None => Err(e),
            },
        }
    }

    fn read(&self) -> Result<HeaderValue, InClusterError> {
        let text = std::fs::read_to_string(&self.path).map_err(|error| InClusterError::Read {
            what: "token",
            path: self.path.clone(),
            error,
        })?;
        let token = text.trim();
        let bad = || InClusterError::BadToken {
            path: self.path.clone(),
        };
        if token.is_empty() {
            return Err(bad());
        }
        let mut h = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| bad())?;
        h.set_sensitive(true);
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn sa_dir(d: &Path) -> PathBuf {
        let sa = d.join("sa");
        std::fs::create_dir_all(&sa).unwrap();
        std::fs::write(sa.join("token"), "tok-1\n").unwrap();
        std::fs::write(sa.join("namespace"), "argo\n").unwrap();
        sa
    }

    fn ca_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        rcgen::CertificateParams::new(vec!["test-ca".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap()
            .pem()
    }

    #[test]
    fn discovery() {
        let d = tempfile::tempdir().unwrap();
        let sa = sa_dir(d.path());
        let sa_s = sa.to_str().unwrap();
        let paths = PodPaths::new(d.path());
        // Host unset: not configured.
        assert_eq!(
            InClusterConfig::discover(env(&[(SERVICE_ACCOUNT_DIR_ENV, sa_s)]), &paths).unwrap(),
            None
        );
        // Host set, token missing (default dir under the path root is empty).
        assert_eq!(
            InClusterConfig::discover(env(&[(HOST_ENV, "10.0.0.1")]), &paths).unwrap(),
            None
        );
        let c = InClusterConfig::discover(
            env(&[
                (HOST_ENV, "10.0.0.1"),
                (PORT_ENV, "6443"),
                (SERVICE_ACCOUNT_DIR_ENV, sa_s),
            ]),
            &paths,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.server, "https://10.0.0.1:6443");
        assert_eq!(c.token_file(), sa.join("token"));
        assert_eq!(c.ca_file(), sa.join("ca.crt"));
        assert_eq!(c.namespace().unwrap(), "argo");
        // The default directory is the pod path, re-rooted.
        let rooted = paths.service_account_dir();
        std::fs::create_dir_all(&rooted).unwrap();
        std::fs::write(rooted.join("token"), "t").unwrap();
        let c = InClusterConfig::discover(env(&[(HOST_ENV, "fd00::1")]), &paths)
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.server.as_str(), c.service_account_dir),
            ("https://[fd00::1]", rooted)
        );
        let c = InClusterConfig::discover(
            env(&[(HOST_ENV, "kubernetes.default.svc"), (PORT_ENV, "443")]),
            &paths,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.server, "https://kubernetes.default.svc");
        let e = InClusterConfig::discover(env(&[(HOST_ENV, "h"), (PORT_ENV, "https")]), &paths).unwrap_err();
        assert!(
            e.to_string().contains("KUBERNETES_SERVICE_PORT") && e.to_string().contains("https"),
            "{e}"
        );
        std::fs::remove_file(sa.join("namespace")).unwrap();
        let c = InClusterConfig {
            server: "https://h".into(),
            service_account_dir: sa,
        };
        assert!(matches!(c.namespace(), Err(InClusterError::NoNamespace { .. })));
    }

    #[test]
    fn kube_config_verifies_against_ca_only() {
        let d = tempfile::tempdir().unwrap();
        let sa = sa_dir(d.path());
        let c = InClusterConfig {
            server: "https://127.0.0.1:6443".into(),
            service_account_dir: sa.clone(),
        };
        let e = c.kube_config().unwrap_err();
        assert!(
            matches!(
                e,
                InClusterError::Read {
                    what: "CA bundle",
                    ..
                }
            ),
            "{e}"
        );
        std::fs::write(sa.join("ca.crt"), "not pem").unwrap();
        assert!(matches!(c.kube_config(), Err(InClusterError::BadCa { .. })));
        std::fs::write(sa.join("ca.crt"), ca_pem() + &ca_pem()).unwrap();
        let k = c.kube_config().unwrap();
        assert_eq!(k.cluster_url.to_string(), "https://127.0.0.1:6443/");
        assert_eq!(k.root_cert.as_ref().map(Vec::len), Some(2));
        assert_eq!(k.root_cert_file.as_deref(), Some(sa.join("ca.crt").as_path()));
        assert!(!k.accept_invalid_certs && !k.default_retry);
        assert!(k.auth_info.token.is_none() && k.auth_info.token_file.is_none());
        assert_eq!(k.default_namespace, "argo");
    }

    #[test]
    fn token_is_reread_when_the_file_changes() {
        let d = tempfile::tempdir().unwrap();
        let sa = sa_dir(d.path());
        let t = TokenSource::new(sa.join("token")).unwrap();
        let h = t.header().unwrap();
        assert!(h.is_sensitive());
        assert_eq!(h.to_str().unwrap(), "Bearer tok-1");
        // A projected-volume style swap: a new file renamed over the old one.
        std::fs::write(sa.join("token.new"), "tok-2").unwrap();
        std::fs::rename(sa.join("token.new"), sa.join("token")).unwrap();
        assert_eq!(t.header().unwrap().to_str().unwrap(), "Bearer tok-2");
        // In-place rewrite with a different length.
        std::fs::write(sa.join("token"), "tok-333").unwrap();
        assert_eq!(t.header().unwrap().to_str().unwrap(), "Bearer tok-333");
        // Gone: the last good token stays.
        std::fs::remove_file(sa.join("token")).unwrap();
        assert_eq!(t.header().unwrap().to_str().unwrap(), "Bearer tok-333");
        // Debug never shows the token.
        assert!(!format!("{t:?}").contains("tok-"));
        assert!(matches!(
            TokenSource::new(sa.join("token")),
            Err(InClusterError::Read { what: "token", .. })
        ));
        std::fs::write(sa.join("token"), "\n").unwrap();
        assert!(matches!(
            TokenSource::new(sa.join("token")),
            Err(InClusterError::BadToken { .. })
        ));
    }
}
