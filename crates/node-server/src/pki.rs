//! The node's certificates, generated at start with rcgen: a cluster CA, the API server's
//! serving certificate, and the kubelet's serving certificate in one of the three setups
//! real clusters have (k8s-wire-protocols §1.8).

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::ServerError;

/// How the kubelet's serving certificate is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KubeletCert {
    /// Signed by the cluster CA with the node's IP (127.0.0.1) and name as SANs, as with
    /// `serverTLSBootstrap` on a node whose addresses include its IP. The pod's `ca.crt`
    /// verifies it when dialled by IP.
    #[default]
    ClusterCaIp,
    /// Signed by the cluster CA, but the only SAN is the node's hostname: a client dialling
    /// `status.hostIP` must verify against `spec.nodeName`.
    ClusterCaHostname,
    /// Self-signed by the kubelet's own throw-away CA (`<node>-ca@<unix time>`), only the
    /// node's hostname as SAN: the kubelet default without `serverTLSBootstrap`. Clients need
    /// the bundle from [`Pki::kubelet_ca_pem`] (given by configuration) or `insecure`.
    SelfSigned,
}

impl std::str::FromStr for KubeletCert {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ca-ip" => Ok(Self::ClusterCaIp),
            "ca-hostname" => Ok(Self::ClusterCaHostname),
            "self-signed" => Ok(Self::SelfSigned),
            other => Err(format!(
                "unknown kubelet certificate setup {other:?}; one of ca-ip, ca-hostname, self-signed"
            )),
        }
    }
}

/// A certificate with its key, PEM and DER.
pub struct Served {
    /// Certificate chain (leaf first), DER.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key (PKCS#8 DER).
    key: Vec<u8>,
}

impl Served {
    /// A rustls server config for this certificate, offering HTTP/2 and HTTP/1.1.
    ///
    /// # Errors
    /// When rustls refuses the key.
    pub fn server_config(&self, alpn_h2: bool) -> Result<Arc<ServerConfig>, ServerError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone()));
        let mut cfg = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(ServerError::tls)?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), key)
            .map_err(ServerError::tls)?;
        cfg.alpn_protocols = if alpn_h2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Ok(Arc::new(cfg))
    }
}

/// Everything TLS the node serves with.
pub struct Pki {
    node_name: String,
    setup: KubeletCert,
    ca_pem: String,
    kubelet_ca_pem: String,
    /// The API server's certificate.
    pub api: Served,
    /// The kubelet's certificate.
    pub kubelet: Served,
}

impl Pki {
    /// Generate a fresh CA and serving certificates for `node_name`.
    ///
    /// # Errors
    /// When key generation or signing fails.
    pub fn generate(node_name: &str, setup: KubeletCert) -> Result<Self, ServerError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let (ca_key, ca_params) = ca("argoexec-local-ca")?;
        let ca_pem = ca_params.self_signed(&ca_key).map_err(ServerError::cert)?.pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let api = leaf(
            &issuer,
            "kube-apiserver",
            &[
                "127.0.0.1",
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
        )?;
        let (kubelet, kubelet_ca_pem) = match setup {
            KubeletCert::ClusterCaIp => (
                leaf(
                    &issuer,
                    &format!("system:node:{node_name}"),
                    &["127.0.0.1", node_name],
                )?,
                ca_pem.clone(),
            ),
            KubeletCert::ClusterCaHostname => (
                leaf(&issuer, &format!("system:node:{node_name}"), &[node_name])?,
                ca_pem.clone(),
            ),
            KubeletCert::SelfSigned => {
                let (k, p) = ca(&format!("{node_name}-ca@{now}"))?;
                let pem = p.self_signed(&k).map_err(ServerError::cert)?.pem();
                let own = Issuer::new(p, k);
                (leaf(&own, &format!("{node_name}@{now}"), &[node_name])?, pem)
            }
        };
        Ok(Self {
            node_name: node_name.to_string(),
            setup,
            ca_pem,
            kubelet_ca_pem,
            api,
            kubelet,
        })
    }

    /// Rotate the cluster CA (a fault of `crate::faults`): a new CA signs new serving
    /// certificates for the API server (and the kubelet, unless its certificate is
    /// self-signed); the trusted bundle becomes the old CA followed by the new one, as in a
    /// real rotation's middle phase, so clients that re-read `ca.crt` keep working.
    ///
    /// # Errors
    /// When key generation or signing fails.
    pub fn rotate(&mut self) -> Result<(), ServerError> {
        let next = Self::generate(&self.node_name, self.setup)?;
        let bundle = format!("{}{}", self.ca_pem, next.ca_pem);
        if self.setup != KubeletCert::SelfSigned {
            self.kubelet = next.kubelet;
            self.kubelet_ca_pem = bundle.clone();
        }
        self.api = next.api;
        self.ca_pem = bundle;
        Ok(())
    }

    /// The cluster CA (the pods' `ca.crt`, the kubeconfig's authority).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA that signed the kubelet's certificate (the cluster CA unless self-signed).
    pub fn kubelet_ca_pem(&self) -> &str {
        &self.kubelet_ca_pem
    }
}

fn ca(cn: &str) -> Result<(KeyPair, CertificateParams), ServerError> {
    let key = KeyPair::generate().map_err(ServerError::cert)?;
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(ServerError::cert)?;
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok((key, p))
}

fn leaf(issuer: &Issuer<'_, KeyPair>, cn: &str, sans: &[&str]) -> Result<Served, ServerError> {
    let key = KeyPair::generate().map_err(ServerError::cert)?;
    let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
    let mut p = CertificateParams::new(sans).map_err(ServerError::cert)?;
    p.distinguished_name.push(DnType::CommonName, cn);
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = p.signed_by(&key, issuer).map_err(ServerError::cert)?;
    Ok(Served {
        chain: vec![cert.der().clone()],
        key: key.serialize_der(),
    })
}
