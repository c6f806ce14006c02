//! The Azure Blob Storage driver on `object_store`'s `MicrosoftAzure`. Argo's
//! `AzureArtifact`: `endpoint` (`https://<account>.blob.core.windows.net`, or an emulator
//! URL whose last path segment is the account, such as Azurite's
//! `http://127.0.0.1:10000/devstoreaccount1`), `container`, `blob`, and
//! `accountKeySecret`; without the key (or with `useSDKCreds`) the environment's chain
//! (`AZURE_*` variables, workload identity, managed identity).

use std::sync::Arc;

use argoexec_core::template::AzureArtifact;
use object_store::azure::MicrosoftAzureBuilder;

use crate::store::StoreDriver;
use crate::{ArtifactError, Settings};

const KIND: &str = "azure";

/// The account named by an endpoint, and whether it is a custom (emulator) endpoint.
fn account_of(endpoint: &str) -> Option<(String, bool)> {
    let rest = endpoint.split("://").nth(1)?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host_only = host.split(':').next().unwrap_or(host);
    if let Some(acct) = host_only.strip_suffix(".blob.core.windows.net") {
        return Some((acct.to_string(), false));
    }
    let acct = path
        .trim_matches('/')
        .rsplit('/')
        .next()
        .filter(|a| !a.is_empty())?;
    Some((acct.to_string(), true))
}

/// Build the driver for `azure`.
///
/// # Errors
/// [`ArtifactError::Config`] or [`ArtifactError::Secret`].
pub fn driver(az: &AzureArtifact, settings: &Arc<Settings>) -> Result<StoreDriver, ArtifactError> {
    let container = az
        .container
        .as_deref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| ArtifactError::config(KIND, "no container"))?;
    let endpoint = az
        .endpoint
        .as_deref()
        .map(|e| e.trim().trim_end_matches('/'))
        .filter(|e| !e.is_empty())
        .ok_or_else(|| ArtifactError::config(KIND, "no endpoint"))?;
    let (account, custom) = account_of(endpoint)
        .ok_or_else(|| ArtifactError::config(KIND, format!("endpoint {endpoint:?} names no account")))?;
    let mut b = MicrosoftAzureBuilder::from_env()
        .with_account(&account)
        .with_container_name(container)
        .with_retry(crate::client::retry(settings))
        .with_client_options(crate::client::options(
            KIND,
            None,
            endpoint.starts_with("http://"),
        )?);
    if custom {
        b = b.with_endpoint(endpoint.to_string());
    }
    if let Some(sel) = az
        .account_key_secret
        .as_ref()
        .filter(|_| !az.use_sdk_creds.unwrap_or(false))
    {
        b = b.with_access_key(settings.credential(sel)?);
    }
    let store = b
        .build()
        .map_err(|e| ArtifactError::config(KIND, crate::error::chain(&e)))?;
    let label = format!(
        "azure://{account}/{container}/{}",
        az.blob.trim_start_matches('/')
    );
    StoreDriver::new(KIND, Arc::new(store), &az.blob, label, settings.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_from_endpoints() {
        assert_eq!(
            account_of("https://acct.blob.core.windows.net"),
            Some(("acct".into(), false))
        );
        assert_eq!(
            account_of("http://127.0.0.1:10000/devstoreaccount1"),
            Some(("devstoreaccount1".into(), true))
        );
        assert_eq!(account_of("https://example.com"), None);
    }
}
