//! The Google Cloud Storage driver on `object_store`'s `GoogleCloudStorage`. Argo's
//! `GCSArtifact`: `bucket`, `key`, and `serviceAccountKeySecret` (a service-account JSON
//! key, read from its mounted secret); without it, the environment's credentials
//! (`GOOGLE_APPLICATION_CREDENTIALS`, then GKE Workload Identity via the metadata server).
//! `ARGOEXEC_GCS_BASE_URL` ([`Settings::gcs_base_url`]) points the client at another endpoint
//! (an emulator); plain `http://` is allowed only there.

use std::sync::Arc;

use argoexec_core::template::GcsArtifact;
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};

use crate::store::StoreDriver;
use crate::{ArtifactError, Settings};

const KIND: &str = "gcs";

/// Build the driver for `gcs`.
///
/// # Errors
/// [`ArtifactError::Config`] or [`ArtifactError::Secret`].
pub fn driver(gcs: &GcsArtifact, settings: &Arc<Settings>) -> Result<StoreDriver, ArtifactError> {
    let bucket = gcs
        .bucket
        .as_deref()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| ArtifactError::config(KIND, "no bucket"))?;
    let base_url = settings.gcs_base_url.as_deref().filter(|u| !u.is_empty());
    let mut b = GoogleCloudStorageBuilder::from_env()
        .with_bucket_name(bucket)
        .with_retry(crate::client::retry(settings))
        .with_client_options(crate::client::options(
            KIND,
            None,
            base_url.is_some_and(|u| u.starts_with("http://")),
        )?);
    if let Some(sel) = &gcs.service_account_key_secret {
        let key = settings.secret_bytes(sel)?;
        let key = String::from_utf8(key).map_err(|_| {
            ArtifactError::config(
                KIND,
                format!("secret {:?} key {:?} is not UTF-8 JSON", sel.name, sel.key),
            )
        })?;
        b = b.with_service_account_key(key);
    }
    if let Some(url) = base_url {
        b = b.with_config(GoogleConfigKey::BaseUrl, url);
    }
    let store = b
        .build()
        .map_err(|e| ArtifactError::config(KIND, crate::error::chain(&e)))?;
    let label = format!("gs://{bucket}/{}", gcs.key.trim_start_matches('/'));
    StoreDriver::new(KIND, Arc::new(store), &gcs.key, label, settings.clone())
}
