//! One artifact's deletion, and the retries around it and around the API calls.
//!
//! Argo wraps each `Delete` in `waitutil.Backoff(retry.DefaultRetry)`: 5 attempts, waits of
//! 10, 20, 40 and 80 ms. Argo retries every error; here only failures another attempt may
//! fix are retried (a remote failure left after the driver's own retries, a local I/O
//! error) — a refused credential, a missing secret or a location without a driver answer
//! the same 150 ms later. The API calls (list, status patch) are retried on 429, 5xx and
//! connection failures, 4 attempts (client-go's `DefaultBackoff`, as the resource step).

use std::sync::Arc;
use std::time::Duration;

use argoexec_artifacts::{AnyDriver, ArtifactDriver, ArtifactError, Settings};
use argoexec_core::artifact_gc::ArtifactResult;
use argoexec_core::template::{Artifact, ArtifactLocation, RelocateError};

/// Attempts per delete (Argo's `RETRY_BACKOFF_STEPS` default).
pub const DELETE_STEPS: u32 = 5;
/// The first wait between delete attempts; each next one doubles.
pub const DELETE_FIRST_WAIT: Duration = Duration::from_millis(10);

/// Why one artifact could not be deleted (the text goes into its status entry).
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// The artifact's location could not be completed from the archive location.
    #[error("cannot relocate artifact onto the archive location")]
    Relocate(#[source] RelocateError),
    /// The artifact goes through a plugin this pod has no sidecar for (its
    /// `ARGO_ARTIFACT_PLUGIN_NAMES` does not list `artifact-plugin-<plugin>`): waiting for
    /// its socket could only time out.
    #[error(
        "artifact plugin {plugin:?} has no sidecar in this pod (artifact-plugin-{plugin} is not in ARGO_ARTIFACT_PLUGIN_NAMES); \
         is it in the controller's artifactDrivers?"
    )]
    NoPluginSidecar {
        /// The plugin.
        plugin: String,
    },
    /// Building the driver or deleting failed.
    #[error(transparent)]
    Driver(#[from] ArtifactError),
}

/// Delete `art` (relocated onto `archive` when it is key-only); absent is success.
/// `sidecars`: the plugin sidecars the pod has (`None`: unknown, every plugin is tried).
pub async fn delete(
    name: &str,
    art: &Artifact,
    archive: Option<&ArtifactLocation>,
    settings: &Arc<Settings>,
    sidecars: Option<&[String]>,
) -> ArtifactResult {
    match try_delete(art, archive, settings, sidecars).await {
        Ok(()) => {
            tracing::info!(artifact = name, "artifact deleted");
            ArtifactResult {
                name: name.to_string(),
                success: true,
                error: None,
            }
        }
        Err(e) => {
            let text = chain(&e);
            tracing::warn!(artifact = name, error = %text, "artifact not deleted");
            ArtifactResult {
                name: name.to_string(),
                success: false,
                error: Some(text),
            }
        }
    }
}

async fn try_delete(
    art: &Artifact,
    archive: Option<&ArtifactLocation>,
    settings: &Arc<Settings>,
    sidecars: Option<&[String]>,
) -> Result<(), DeleteError> {
    let loc = art.location.relocate(archive).map_err(DeleteError::Relocate)?;
    if let Some(plugin) = loc
        .extra
        .get("plugin")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        && let Some(have) = sidecars
        && !have.iter().any(|s| s == &format!("artifact-plugin-{plugin}"))
    {
        return Err(DeleteError::NoPluginSidecar {
            plugin: plugin.to_string(),
        });
    }
    // A plugin location is deleted through the plugin's sidecar in the GC pod (its socket
    // at /tmp/artifact-plugins/<plugin>/socket).
    let driver = AnyDriver::for_artifact(art, &loc, settings)?;
    let mut wait = DELETE_FIRST_WAIT;
    let mut attempt = 1;
    loop {
        match driver.delete().await {
            Ok(()) => return Ok(()),
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) if attempt < DELETE_STEPS && may_pass(&e) => {
                tracing::debug!(error = %e, attempt, "delete failed, retrying");
                tokio::time::sleep(wait).await;
                wait *= 2;
                attempt += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether another delete attempt may succeed.
pub fn may_pass(e: &ArtifactError) -> bool {
    matches!(e, ArtifactError::Remote { .. } | ArtifactError::Io { .. })
}

/// The error and its sources, joined with ": " (what the controller shows the user).
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !text.contains(&t) {
            text.push_str(": ");
            text.push_str(&t);
        }
        cur = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Arc<Settings> {
        Arc::new(Settings::default())
    }

    fn artifact(v: serde_json::Value) -> Artifact {
        serde_json::from_value(v).unwrap()
    }

    #[tokio::test]
    async fn local_file_deleted_and_absent_is_success() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("out.tgz");
        std::fs::write(&f, "x").unwrap();
        let art = artifact(serde_json::json!({"name": "out", "local": {"path": f}}));
        let r = delete("out", &art, None, &settings(), None).await;
        assert!(r.success && r.error.is_none(), "{r:?}");
        assert!(!f.exists());
        let again = delete("out", &art, None, &settings(), None).await;
        assert!(again.success, "absent is success: {again:?}");
    }

    #[tokio::test]
    async fn key_only_artifact_is_relocated_onto_the_archive_location() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("repo/wf/n1/out.tgz");
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, "x").unwrap();
        // A local archive location's key is its path: the S3 key-only artifact lands on the
        // archive's kind with its key.
        let archive: ArtifactLocation =
            serde_json::from_value(serde_json::json!({"local": {"path": d.path().join("repo")}})).unwrap();
        let key_only = artifact(serde_json::json!({"name": "o", "s3": {"key": target}}));
        let r = delete("o", &key_only, Some(&archive), &settings(), None).await;
        assert!(r.success, "{r:?}");
        assert!(!target.exists());
    }

    #[tokio::test]
    async fn plugin_and_relocation_failures_are_per_artifact_errors() {
        let plugin = artifact(
            serde_json::json!({"name": "p", "plugin": {"name": "my-plugin", "configuration": "{}", "key": "k"}}),
        );
        let r = delete("p", &plugin, None, &settings(), Some(&[])).await;
        assert!(!r.success);
        assert!(r.error.as_deref().unwrap().contains("my-plugin"), "{r:?}");
        assert!(r.error.as_deref().unwrap().contains("no sidecar"), "{r:?}");
        let key_only = artifact(serde_json::json!({"name": "k", "s3": {"key": "a/b"}}));
        let r = delete("k", &key_only, None, &settings(), None).await;
        assert!(!r.success);
        assert!(r.error.as_deref().unwrap().contains("archiveLocation"), "{r:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_delete_is_tried_five_times_then_reported() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("file"), "x").unwrap();
        // A path through a regular file: ENOTDIR, a real I/O failure even for root.
        let art = artifact(serde_json::json!({"name": "x", "local": {"path": d.path().join("file/child")}}));
        let started = tokio::time::Instant::now();
        let r = delete("x", &art, None, &settings(), None).await;
        assert!(!r.success);
        let text = r.error.unwrap();
        assert!(
            text.contains("file/child") && text.to_lowercase().contains("not a directory"),
            "{text}"
        );
        // Waits of 10 + 20 + 40 + 80 ms between the five attempts.
        assert_eq!(started.elapsed(), Duration::from_millis(150));
    }

    #[test]
    fn only_remote_and_io_failures_are_retried() {
        assert!(may_pass(&ArtifactError::Remote {
            location: "s3://b/k".into(),
            action: "delete",
            message: "503".into()
        }));
        assert!(!may_pass(&ArtifactError::Denied {
            location: "s3://b/k".into(),
            action: "delete",
            message: "403".into()
        }));
        assert!(!may_pass(&ArtifactError::NoLocation));
    }
}
