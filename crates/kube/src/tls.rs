//! TLS client configuration for the cluster's endpoints: verification always on unless the
//! configuration explicitly says insecure, against one CA bundle, with an ordered list of
//! names the certificate may be valid for.
//!
//! The kubelet case drives the design (k8s-wire-protocols §1.8): the executor dials
//! `status.hostIP`, but a TLS-bootstrapped serving certificate may carry only the node's
//! hostname. [`NameFallbackVerifier`] therefore checks the chain once against the CA bundle
//! and accepts the certificate when it is valid for *any* configured name, in order (the IP
//! first, then `spec.nodeName`) — no DNS lookup, one connection. The CA bundle is re-read
//! when the file changes (CA rotation), keeping the last good bundle if a re-read fails.
//!
//! A failed verification is an error that names the CA bundle and every name tried
//! ([`VerifyFailure`]), so "certificate signed by unknown authority" is never the whole
//! story. `insecure` installs [`AcceptAnyCert`] (signatures are still checked, the chain and
//! names are not) and logs a warning when the configuration is built.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Errors building a TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The CA bundle cannot be read.
    #[error("read CA bundle {}: {error}", path.display())]
    ReadCa {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The CA bundle holds no usable certificate.
    #[error("CA bundle {} holds no usable PEM certificate{reason}", path.display())]
    BadCa {
        /// The file.
        path: PathBuf,
        /// Detail, with a leading separator.
        reason: String,
    },
    /// A configured verify name is neither an IP nor a DNS name.
    #[error("{0:?} is not a valid TLS server name (IP address or DNS name)")]
    BadName(String),
    /// Verification is on but no name to verify was given.
    #[error("no TLS server name to verify the certificate against")]
    NoNames,
}

/// Why a server certificate was refused, with what was tried.
#[derive(Debug, thiserror::Error)]
#[error("x509: the certificate is not valid for {} (names tried in order) with CA bundle {}: {reason}", names.join(", "), ca.display())]
pub struct VerifyFailure {
    /// The CA bundle used.
    pub ca: PathBuf,
    /// The names tried.
    pub names: Vec<String>,
    /// The last verifier error.
    pub reason: String,
}

/// How to verify a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsPolicy {
    /// Verify against the CA bundle at `ca_file`; accept when the certificate is valid for
    /// one of `names` (tried in order).
    Verify {
        /// The PEM CA bundle.
        ca_file: PathBuf,
        /// IP addresses or DNS names.
        names: Vec<String>,
    },
    /// Skip chain and name verification (explicit opt-in only, e.g. `kubeletInsecure`).
    Insecure,
}

impl TlsPolicy {
    /// A rustls client configuration (aws-lc-rs) for this policy.
    ///
    /// # Errors
    /// [`TlsError`] for an unreadable or empty bundle, a bad name or no names.
    pub fn client_config(&self, what: &str) -> Result<rustls::ClientConfig, TlsError> {
        crate::incluster::install_crypto_provider();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("aws-lc-rs supports the default protocol versions");
        let verifier: Arc<dyn ServerCertVerifier> = match self {
            TlsPolicy::Verify { ca_file, names } => {
                Arc::new(NameFallbackVerifier::new(ca_file.clone(), names, provider)?)
            }
            TlsPolicy::Insecure => {
                tracing::warn!(
                    endpoint = what,
                    "TLS verification is OFF for the {what} (configured insecure): any certificate is accepted"
                );
                Arc::new(AcceptAnyCert(provider))
            }
        };
        // No ALPN here: the HTTPS connector sets HTTP/1.1's.
        Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth())
    }
}

/// What identifies one version of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp(u64, u64, u64, Option<SystemTime>);

fn stamp(path: &Path) -> Option<Stamp> {
    std::fs::metadata(path)
        .ok()
        .map(|m| Stamp(m.dev(), m.ino(), m.len(), m.modified().ok()))
}

/// Read a PEM bundle into a root store.
fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let pem = std::fs::read(path).map_err(|error| TlsError::ReadCa {
        path: path.to_path_buf(),
        error,
    })?;
    let bad = |reason: String| TlsError::BadCa {
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!(": {e}")))?;
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(bad(String::new()));
    }
    Ok(roots)
}

/// Verifies against a (re-read on change) CA bundle, accepting any of several names.
#[derive(Debug)]
pub struct NameFallbackVerifier {
    ca_file: PathBuf,
    names: Vec<ServerName<'static>>,
    shown: Vec<String>,
    provider: Arc<CryptoProvider>,
    current: Mutex<(Option<Stamp>, Arc<WebPkiServerVerifier>)>,
}

impl NameFallbackVerifier {
    /// A verifier for `names` (IPs or DNS names) against the bundle `ca_file`.
    ///
    /// # Errors
    /// [`TlsError`] for a bad bundle or name, or no names.
    pub fn new(ca_file: PathBuf, names: &[String], provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        if names.is_empty() {
            return Err(TlsError::NoNames);
        }
        let parsed = names
            .iter()
            .map(|n| {
                ServerName::try_from(n.trim_matches(|c| c == '[' || c == ']'))
                    .map(|s| s.to_owned())
                    .map_err(|_| TlsError::BadName(n.clone()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let st = stamp(&ca_file);
        let inner = Self::build(&ca_file, &provider)?;
        Ok(Self {
            ca_file,
            names: parsed,
            shown: names.to_vec(),
            provider,
            current: Mutex::new((st, inner)),
        })
    }

    fn build(ca: &Path, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, TlsError> {
        let roots = load_roots(ca)?;
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| TlsError::BadCa {
                path: ca.to_path_buf(),
                reason: format!(": {e}"),
            })
    }

    /// The inner verifier, rebuilt when the bundle changed.
    fn inner(&self) -> Arc<WebPkiServerVerifier> {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let now = stamp(&self.ca_file);
        if now.is_some() && now != cur.0 {
            match Self::build(&self.ca_file, &self.provider) {
                Ok(v) => {
                    tracing::info!(ca = %self.ca_file.display(), "CA bundle changed; re-read");
                    *cur = (now, v);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot re-read the CA bundle; keeping the previous one")
                }
            }
        }
        cur.1.clone()
    }

    /// A `General` error carrying [`VerifyFailure`]'s text: rustls shows `Other` errors
    /// with their `Debug` form, and the message must read well in a step's error.
    fn failure(&self, reason: String) -> rustls::Error {
        let f = VerifyFailure {
            ca: self.ca_file.clone(),
            names: self.shown.clone(),
            reason: reason
                .trim_start_matches("invalid peer certificate: ")
                .to_string(),
        };
        rustls::Error::General(f.to_string())
    }
}

fn is_name_mismatch(e: &rustls::Error) -> bool {
    matches!(
        e,
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        )
    )
}

impl ServerCertVerifier for NameFallbackVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _dialled: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let inner = self.inner();
        let mut last = String::new();
        for name in &self.names {
            match inner.verify_server_cert(end_entity, intermediates, name, ocsp, now) {
                Ok(v) => return Ok(v),
                Err(e) if is_name_mismatch(&e) => last = e.to_string(),
                Err(e) => return Err(self.failure(e.to_string())),
            }
        }
        Err(self.failure(last))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner().supported_verify_schemes()
    }
}

/// Accepts any certificate chain and name; handshake signatures are still verified.
#[derive(Debug)]
pub struct AcceptAnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_errors_name_the_problem() {
        let d = tempfile::tempdir().unwrap();
        let ca = d.path().join("ca.crt");
        let p = |names: &[&str]| TlsPolicy::Verify {
            ca_file: ca.clone(),
            names: names.iter().map(|s| s.to_string()).collect(),
        };
        let e = p(&["127.0.0.1"]).client_config("kubelet").unwrap_err();
        assert!(matches!(e, TlsError::ReadCa { .. }), "{e}");
        std::fs::write(&ca, "junk").unwrap();
        let e = p(&["127.0.0.1"]).client_config("kubelet").unwrap_err();
        assert!(e.to_string().contains("no usable PEM"), "{e}");
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec![]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        std::fs::write(&ca, params.self_signed(&key).unwrap().pem()).unwrap();
        assert!(matches!(p(&[]).client_config("kubelet"), Err(TlsError::NoNames)));
        assert!(matches!(
            p(&["not a name!"]).client_config("kubelet"),
            Err(TlsError::BadName(_))
        ));
        p(&["127.0.0.1", "node-a", "[::1]"])
            .client_config("kubelet")
            .unwrap();
        TlsPolicy::Insecure.client_config("kubelet").unwrap();
    }
}
