//! Artifact locations: where an artifact's bytes live.
//!
//! Argo inlines exactly one location kind (`s3`, `gcs`, `raw`, `http`, …) into the artifact.
//! This module models the kinds argoexec-rs has drivers for and keeps the others as raw JSON
//! in `extra`, so they round-trip and produce a clear "no driver" error instead of vanishing.
//!
//! `local` is an argoexec-rs extension (no Argo version has it): a path on a filesystem the
//! executor can reach, used by `argoexec run` as its local artifact repository.

use super::Extra;
use serde::{Deserialize, Serialize};

/// Inline artifact data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawArtifact {
    /// The content.
    pub data: String,
}

/// A path on a reachable filesystem (argoexec-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalArtifact {
    /// Absolute path of the file or directory.
    pub path: String,
}

/// A reference to one key of a Kubernetes Secret (Argo's `SecretKeySelector`). The pod
/// builder mounts the secret at `/argo/secret/<name>/<key>` in init and wait.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretKeySelector {
    /// The secret's name.
    #[serde(default)]
    pub name: String,
    /// The key inside the secret.
    #[serde(default)]
    pub key: String,
}

/// Server-side encryption options of an S3 location.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct S3Encryption {
    /// SSE-KMS with this key id.
    #[serde(default, rename = "kmsKeyId", skip_serializing_if = "Option::is_none")]
    pub kms_key_id: Option<String>,
    /// SSE-KMS even without a key id (the bucket's default key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_encryption: Option<bool>,
    /// SSE-C: the customer key (base64 of 32 bytes) in a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_customer_key_secret: Option<SecretKeySelector>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An S3 (or S3-compatible) location, Argo's `S3Artifact`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct S3Artifact {
    /// Object key (a prefix for directory artifacts).
    #[serde(default)]
    pub key: String,
    /// The bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// `host[:port]` (Argo style, no scheme) or a full URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Plain HTTP instead of HTTPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// Access key id secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_secret: Option<SecretKeySelector>,
    /// Secret access key secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_secret: Option<SecretKeySelector>,
    /// Session token secret (temporary credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_token_secret: Option<SecretKeySelector>,
    /// A CA bundle (PEM) for the endpoint's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_secret: Option<SecretKeySelector>,
    /// Role to assume (used with web identity: `AWS_ROLE_ARN`).
    #[serde(default, rename = "roleARN", skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// Use the environment's credential chain (env, web identity, instance metadata).
    #[serde(default, rename = "useSDKCreds", skip_serializing_if = "Option::is_none")]
    pub use_sdk_creds: Option<bool>,
    /// Server-side encryption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_options: Option<S3Encryption>,
    /// argoexec-rs: force path-style (`true`) or virtual-hosted-style (`false`) requests.
    /// Default: virtual-hosted for `*.amazonaws.com` endpoints, path-style otherwise (as
    /// minio-go decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_path_style: Option<bool>,
    /// Everything else (`keyFormat`, `createBucketIfNotPresent`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A Google Cloud Storage location, Argo's `GCSArtifact`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GcsArtifact {
    /// Object key.
    #[serde(default)]
    pub key: String,
    /// The bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// A service-account JSON key in a secret (default: the environment's credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_key_secret: Option<SecretKeySelector>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An Azure Blob Storage location, Argo's `AzureArtifact`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AzureArtifact {
    /// The blob name.
    #[serde(default)]
    pub blob: String,
    /// `https://<account>.blob.core.windows.net` (or an emulator URL ending in the account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The account key in a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_key_secret: Option<SecretKeySelector>,
    /// Use the environment's credential chain.
    #[serde(default, rename = "useSDKCreds", skip_serializing_if = "Option::is_none")]
    pub use_sdk_creds: Option<bool>,
    /// Everything else (`blobNameFormat`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A header of an HTTP location.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpHeader {
    /// Header name.
    pub name: String,
    /// Header value.
    #[serde(default)]
    pub value: String,
}

/// Basic authentication of an HTTP location.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuth {
    /// User name secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username_secret: Option<SecretKeySelector>,
    /// Password secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret: Option<SecretKeySelector>,
}

/// Authentication of an HTTP location (only basic auth has a driver here; others are kept
/// and refused with a clear error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuth {
    /// Basic authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
    /// `oauth2`, `clientCert`, …
    #[serde(flatten)]
    pub extra: Extra,
}

/// An HTTP(S) location, Argo's `HTTPArtifact`: GET to load, PUT to save.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpArtifact {
    /// The URL.
    #[serde(default)]
    pub url: String,
    /// Extra request headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HttpHeader>,
    /// Authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<HttpAuth>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An Artifactory location, Argo's `ArtifactoryArtifact`: HTTP with basic auth.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactoryArtifact {
    /// The artifact's URL.
    #[serde(default)]
    pub url: String,
    /// User name secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username_secret: Option<SecretKeySelector>,
    /// Password secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret: Option<SecretKeySelector>,
    /// Everything else (`repoURL` in repositories).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The location part of an artifact, inlined into [`super::Artifact`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactLocation {
    /// Inline data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawArtifact>,
    /// Local filesystem (argoexec-rs extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalArtifact>,
    /// S3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Artifact>,
    /// Google Cloud Storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcs: Option<GcsArtifact>,
    /// Azure Blob Storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzureArtifact>,
    /// HTTP(S).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpArtifact>,
    /// Artifactory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifactory: Option<ArtifactoryArtifact>,
    /// Everything else, including location kinds without a driver (gcs, http, git, …) and
    /// non-location artifact fields (`from`, `globalName`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Location kinds Argo knows; used to tell "has a location" from "only metadata".
pub const KNOWN_KINDS: &[&str] = &[
    "raw",
    "local",
    "s3",
    "gcs",
    "azure",
    "http",
    "git",
    "hdfs",
    "oss",
    "artifactory",
    "plugin",
];

impl ArtifactLocation {
    /// True when some location kind is present.
    pub fn has_location(&self) -> bool {
        self.kind_name().is_some()
    }

    /// Every secret this location reads credentials from (the pod builder mounts each at
    /// `/argo/secret/<name>/<key>`).
    pub fn secret_refs(&self) -> Vec<&SecretKeySelector> {
        let mut v: Vec<Option<&SecretKeySelector>> = Vec::new();
        if let Some(s3) = &self.s3 {
            v.extend([
                s3.access_key_secret.as_ref(),
                s3.secret_key_secret.as_ref(),
                s3.session_token_secret.as_ref(),
                s3.ca_secret.as_ref(),
            ]);
            if let Some(e) = &s3.encryption_options {
                v.push(e.server_side_customer_key_secret.as_ref());
            }
        }
        if let Some(g) = &self.gcs {
            v.push(g.service_account_key_secret.as_ref());
        }
        if let Some(a) = &self.azure {
            v.push(a.account_key_secret.as_ref());
        }
        if let Some(b) = self
            .http
            .as_ref()
            .and_then(|h| h.auth.as_ref()?.basic_auth.as_ref())
        {
            v.extend([b.username_secret.as_ref(), b.password_secret.as_ref()]);
        }
        if let Some(a) = &self.artifactory {
            v.extend([a.username_secret.as_ref(), a.password_secret.as_ref()]);
        }
        v.into_iter().flatten().filter(|s| !s.name.is_empty()).collect()
    }

    /// The name of the location kind present (`raw`, `local`, `s3`, `gcs`, …).
    pub fn kind_name(&self) -> Option<&str> {
        if self.raw.is_some() {
            Some("raw")
        } else if self.local.is_some() {
            Some("local")
        } else if self.s3.is_some() {
            Some("s3")
        } else if self.gcs.is_some() {
            Some("gcs")
        } else if self.azure.is_some() {
            Some("azure")
        } else if self.http.is_some() {
            Some("http")
        } else if self.artifactory.is_some() {
            Some("artifactory")
        } else {
            KNOWN_KINDS.iter().copied().find(|k| self.extra.contains_key(*k))
        }
    }

    /// Derive the location of an output called `file_name` under this archive location:
    /// the key (or path) becomes `<key>/<file_name>`, as Argo does for artifacts without a
    /// key. Returns `None` when this location has no keyed kind we model.
    pub fn child(&self, file_name: &str) -> Option<ArtifactLocation> {
        let join = |base: &str| {
            let base = base.trim_end_matches('/');
            if base.is_empty() {
                file_name.to_string()
            } else {
                format!("{base}/{file_name}")
            }
        };
        if let Some(l) = &self.local {
            return Some(ArtifactLocation {
                local: Some(LocalArtifact { path: join(&l.path) }),
                ..Default::default()
            });
        }
        let mut out = ArtifactLocation::default();
        if let Some(s3) = &self.s3 {
            out.s3 = Some(S3Artifact {
                key: join(&s3.key),
                ..s3.clone()
            });
        } else if let Some(g) = &self.gcs {
            out.gcs = Some(GcsArtifact {
                key: join(&g.key),
                ..g.clone()
            });
        } else if let Some(a) = &self.azure {
            out.azure = Some(AzureArtifact {
                blob: join(&a.blob),
                ..a.clone()
            });
        } else if let Some(h) = &self.http {
            out.http = Some(HttpArtifact {
                url: join(&h.url),
                ..h.clone()
            });
        } else if let Some(a) = &self.artifactory {
            out.artifactory = Some(ArtifactoryArtifact {
                url: join(&a.url),
                ..a.clone()
            });
        } else {
            // The kinds kept as raw JSON: an artifact plugin's (v4.0) and OSS's `key`, HDFS's `path`.
            let (kind, field, mut value) = [("plugin", "key"), ("oss", "key"), ("hdfs", "path")]
                .into_iter()
                .find_map(|(k, f)| Some((k, f, self.extra.get(k)?.as_object()?.clone())))?;
            let base = value
                .get(field)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string();
            value.insert(field.into(), join(&base).into());
            out.extra.insert(kind.into(), value.into());
        }
        Some(out)
    }
}

/// `archiveLocation` of a template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveLocation {
    /// Archive the main container logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_logs: Option<bool>,
    /// The repository location outputs default to.
    #[serde(flatten)]
    pub location: ArtifactLocation,
}
