//! The S3 driver (AWS S3 and S3-compatible servers: MinIO, Ceph, R2, moto) on
//! `object_store`'s `AmazonS3`, with Argo's `S3Artifact` mapped as follows.
//!
//! - `endpoint`: Argo gives `host[:port]` without a scheme; `insecure: true` means
//!   `http://`, otherwise `https://`. A full URL is taken as is. No endpoint, or one under
//!   `amazonaws.com`, is AWS itself (virtual-hosted requests to the bucket's region);
//!   any other endpoint gets path-style requests, as minio-go chooses. `forcePathStyle`
//!   (argoexec-rs) overrides.
//! - `region`: default `us-east-1`.
//! - Credentials: `accessKeySecret` + `secretKeySecret` (+ `sessionTokenSecret`) from the
//!   mounted secrets; otherwise (or with `useSDKCreds`) the environment's chain: `AWS_*`
//!   variables, web identity (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, IRSA; `roleARN`
//!   fills the role), then instance metadata.
//! - `caSecret`: a PEM bundle trusted in addition to the system roots.
//! - `encryptionOptions`: `kmsKeyId` → SSE-KMS, `enableEncryption` alone → SSE-KMS with the
//!   bucket's default key, `serverSideCustomerKeySecret` → SSE-C.
//! - Uploads carry an integrity checksum, SHA-256 by default
//!   ([`crate::UploadChecksum`], `ARGOEXEC_ARTIFACT_S3_CHECKSUM`); Argo's minio-go
//!   sends none.
//! - `createBucketIfNotPresent` is not done: the executor does not create buckets (Argo's
//!   controller-side feature); a missing bucket is a clear NotFound.

use std::sync::Arc;

use argoexec_core::template::S3Artifact;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, Checksum};

use crate::UploadChecksum;
use crate::store::StoreDriver;
use crate::{ArtifactError, Settings};

const KIND: &str = "s3";

/// The scheme-qualified endpoint, or `None` for AWS itself.
fn endpoint_url(s3: &S3Artifact) -> Option<String> {
    let e = s3.endpoint.as_deref().map(str::trim).filter(|e| !e.is_empty())?;
    let url = if e.contains("://") {
        e.trim_end_matches('/').to_string()
    } else {
        let scheme = if s3.insecure.unwrap_or(false) {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{}", e.trim_end_matches('/'))
    };
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or_default()
        .split(['/', ':'])
        .next()
        .unwrap_or_default();
    if host == "amazonaws.com" || host.ends_with(".amazonaws.com") {
        None
    } else {
        Some(url)
    }
}

/// Build the driver for `s3`.
///
/// # Errors
/// [`ArtifactError::Config`] (no bucket, bad key or CA) or [`ArtifactError::Secret`].
pub fn driver(s3: &S3Artifact, settings: &Arc<Settings>) -> Result<StoreDriver, ArtifactError> {
    let bucket = s3.bucket.as_deref().filter(|b| !b.is_empty()).ok_or_else(|| {
        ArtifactError::config(
            KIND,
            "no bucket (set it on the artifact or in the artifact repository)",
        )
    })?;
    let endpoint = endpoint_url(s3);
    let mut b = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_region(
            s3.region
                .as_deref()
                .filter(|r| !r.is_empty())
                .unwrap_or("us-east-1"),
        )
        .with_retry(crate::client::retry(settings));
    match settings.s3_checksum {
        UploadChecksum::Sha256 => b = b.with_checksum_algorithm(Checksum::SHA256),
        UploadChecksum::Crc64Nvme => b = b.with_checksum_algorithm(Checksum::CRC64NVME),
        UploadChecksum::None => {}
    }
    let path_style = s3.force_path_style.unwrap_or(endpoint.is_some());
    b = b.with_virtual_hosted_style_request(!path_style);
    if let Some(url) = &endpoint {
        b = b.with_endpoint(url.clone());
    }
    let explicit = s3.access_key_secret.is_some() || s3.secret_key_secret.is_some();
    if explicit && !s3.use_sdk_creds.unwrap_or(false) {
        let (Some(ak), Some(sk)) = (&s3.access_key_secret, &s3.secret_key_secret) else {
            return Err(ArtifactError::config(
                KIND,
                "accessKeySecret and secretKeySecret go together",
            ));
        };
        b = b
            .with_access_key_id(settings.credential(ak)?)
            .with_secret_access_key(settings.credential(sk)?);
        if let Some(t) = &s3.session_token_secret {
            b = b.with_token(settings.credential(t)?);
        }
    }
    if let Some(role) = s3.role_arn.as_deref().filter(|r| !r.is_empty()) {
        b = b.with_config(AmazonS3ConfigKey::RoleArn, role);
    }
    if let Some(enc) = &s3.encryption_options {
        if let Some(k) = enc.kms_key_id.as_deref().filter(|k| !k.is_empty()) {
            b = b.with_sse_kms_encryption(k);
        } else if enc.enable_encryption.unwrap_or(false) {
            let key: AmazonS3ConfigKey = "aws_server_side_encryption"
                .parse()
                .map_err(|e| ArtifactError::config(KIND, format!("{e}")))?;
            b = b.with_config(key, "aws:kms");
        }
        if let Some(c) = &enc.server_side_customer_key_secret {
            b = b.with_ssec_encryption(settings.credential(c)?);
        }
    }
    let ca = s3
        .ca_secret
        .as_ref()
        .map(|c| settings.secret_bytes(c))
        .transpose()?;
    b = b.with_client_options(crate::client::options(
        KIND,
        ca.as_deref(),
        endpoint.as_deref().is_some_and(|u| u.starts_with("http://")),
    )?);
    let store = b
        .build()
        .map_err(|e| ArtifactError::config(KIND, crate::error::chain(&e)))?;
    let label = format!("s3://{bucket}/{}", s3.key.trim_start_matches('/'));
    StoreDriver::new(KIND, Arc::new(store), &s3.key, label, settings.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(endpoint: Option<&str>, insecure: bool) -> S3Artifact {
        S3Artifact {
            endpoint: endpoint.map(String::from),
            insecure: Some(insecure),
            bucket: Some("b".into()),
            key: "k".into(),
            ..Default::default()
        }
    }

    #[test]
    fn endpoints_follow_argo() {
        assert_eq!(
            endpoint_url(&s3(Some("minio:9000"), true)).as_deref(),
            Some("http://minio:9000")
        );
        assert_eq!(
            endpoint_url(&s3(Some("minio:9000"), false)).as_deref(),
            Some("https://minio:9000")
        );
        assert_eq!(
            endpoint_url(&s3(Some("http://127.0.0.1:5000/"), false)).as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(endpoint_url(&s3(Some("s3.amazonaws.com"), false)), None);
        assert_eq!(endpoint_url(&s3(Some("s3.eu-west-1.amazonaws.com"), false)), None);
        assert_eq!(endpoint_url(&s3(None, false)), None);
    }

    #[test]
    fn config_errors_are_clear() {
        let settings = Arc::new(Settings::default());
        let mut a = s3(Some("x:1"), true);
        a.bucket = None;
        assert!(
            driver(&a, &settings)
                .unwrap_err()
                .to_string()
                .contains("no bucket")
        );
        let mut a = s3(Some("x:1"), true);
        a.key = "a/../b".into();
        assert!(driver(&a, &settings).unwrap_err().to_string().contains("key"));
    }
}
