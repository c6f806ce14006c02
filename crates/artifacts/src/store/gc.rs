//! Whole-artifact deletion and Argo's `ListObjects` for the `object_store` drivers, both
//! streaming from a paginated listing so memory does not grow with the number of objects
//! (apart from `list_objects`' own answer).
//!
//! - [`StoreDriver::delete_all`]: the artifact's own key and every object under `key/` are
//!   fed as they are listed into `object_store`'s `delete_stream`: S3 sends `DeleteObjects`
//!   batches of 1000 keys (20 batches in flight), Azure blob batches of 256, GCS one
//!   `DELETE` per object, 10 at once. A missing object is success; a failed object does not
//!   stop the others, and the end result counts the failures and keeps the first
//!   ([`ArtifactError::DeleteFailed`]). S3 reports per-key failures inside a `200`
//!   `DeleteObjects` answer; `object_store` yields them as per-key errors, counted here.
//! - [`StoreDriver::list_full_keys`]: full keys, each provider as Argo v4.1.2's driver does
//!   it (see [`crate::ArtifactDriver::list_objects`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use object_store::path::Path;

use super::{StoreDriver, map_error};
use crate::ArtifactError;

/// Map the failure to delete one object (or one batch) of the artifact at `label`. S3's
/// per-key `AccessDenied` inside a `DeleteObjects` answer comes from `object_store` as a
/// generic error; it is a refusal like a 403 and mapped the same way.
fn delete_error(label: &str, e: object_store::Error) -> ArtifactError {
    let denied = matches!(&e, object_store::Error::Generic { .. })
        && crate::error::chain(&e).contains("(code: AccessDenied)");
    match map_error(label, "delete", e) {
        ArtifactError::Remote {
            location,
            action,
            message,
        } if denied => ArtifactError::Denied {
            location,
            action,
            message,
        },
        other => other,
    }
}

/// What one pass of deletion saw.
struct Tally {
    attempted: usize,
    deleted: usize,
    first: Option<object_store::Error>,
}

impl StoreDriver {
    /// Delete the object at the key and every object under `key/`, listing and deleting at
    /// the same time; absent is success.
    ///
    /// # Errors
    /// [`ArtifactError::Config`] for an empty key (never the whole bucket); when only the
    /// key itself was tried and refused, that error; when some objects could not be
    /// deleted, [`ArtifactError::DeleteFailed`] (the others are deleted); a listing that
    /// fails part-way, after what was listed is deleted, the listing's error.
    pub(super) async fn delete_all(&self) -> Result<(), ArtifactError> {
        let key = self.require_key()?.clone();
        let list_error: Arc<Mutex<Option<object_store::Error>>> = Arc::default();
        let tally = self.delete_listed(&key, list_error.clone()).await;
        let failed = tally.attempted.saturating_sub(tally.deleted);
        tracing::info!(
            location = %self.label,
            attempted = tally.attempted,
            failed,
            "artifact deleted"
        );
        if let Some(first) = tally.first {
            let first = delete_error(&self.label, first);
            if tally.attempted == 1 {
                return Err(first);
            }
            return Err(ArtifactError::DeleteFailed {
                location: self.label.clone(),
                failed: failed.max(1),
                attempted: tally.attempted,
                first: Box::new(first),
            });
        }
        let listed = list_error.lock().map(|mut e| e.take()).unwrap_or(None);
        match listed {
            Some(e) => Err(map_error(&self.label, "list for deletion", e)),
            None => Ok(()),
        }
    }

    /// Feed `key` and the listing of `key/` into the store's `delete_stream` and count.
    /// A listing error ends the listing and is left in `list_error` (NotFound: nothing
    /// there, not an error).
    async fn delete_listed(&self, key: &Path, list_error: Arc<Mutex<Option<object_store::Error>>>) -> Tally {
        let attempted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let listed = {
            let (seen, stop) = (stop.clone(), stop);
            self.store
                .list(Some(key))
                .take_while(move |_| futures::future::ready(!seen.load(Ordering::Relaxed)))
                .filter_map(move |r| {
                    let kept = match r {
                        Ok(m) => Some(m.location),
                        Err(object_store::Error::NotFound { .. }) => None,
                        Err(e) => {
                            stop.store(true, Ordering::Relaxed);
                            if let Ok(mut slot) = list_error.lock() {
                                slot.get_or_insert(e);
                            }
                            None
                        }
                    };
                    futures::future::ready(kept)
                })
        };
        let counter = attempted.clone();
        let input = futures::stream::once(futures::future::ready(key.clone()))
            .chain(listed)
            .inspect(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
            })
            .map(Ok)
            .boxed();
        let mut out = self.store.delete_stream(input);
        let (mut deleted, mut first) = (0usize, None);
        while let Some(r) = out.next().await {
            match r {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => deleted += 1,
                Err(e) => {
                    tracing::warn!(location = %self.label, error = %crate::error::chain(&e), "object not deleted");
                    first.get_or_insert(e);
                }
            }
        }
        Tally {
            attempted: attempted.load(Ordering::Relaxed),
            deleted,
            first,
        }
    }

    /// The full keys of the artifact, as Argo v4.1.2's `ListObjects` of this provider
    /// returns them, sorted (see [`crate::ArtifactDriver::list_objects`]).
    ///
    /// # Errors
    /// S3: [`ArtifactError::NotFound`] when neither the key nor anything under it exists;
    /// any provider: a listing or lookup failure.
    pub(super) async fn list_full_keys(&self) -> Result<Vec<String>, ArtifactError> {
        let whole_bucket = self.key.parts_count() == 0;
        let own = if whole_bucket || self.kind == "s3" {
            None
        } else {
            self.head().await?
        };
        if own.is_some() && self.kind == "gcs" {
            // Argo's GCS listing stops at an object named exactly the key.
            return Ok(vec![self.key.as_ref().to_string()]);
        }
        let mut keys: Vec<String> = own.map(|_| self.key.as_ref().to_string()).into_iter().collect();
        let mut listing = self.store.list((!whole_bucket).then_some(&self.key));
        while let Some(r) = listing.next().await {
            let m = match r {
                Ok(m) => m,
                Err(object_store::Error::NotFound { .. }) => break,
                Err(e) => return Err(map_error(&self.label, "list", e)),
            };
            let k = m.location.as_ref();
            if !k.is_empty() && !k.ends_with('/') {
                keys.push(k.to_string());
            }
        }
        if keys.is_empty() && self.kind == "s3" && !whole_bucket && self.head().await?.is_none() {
            return Err(self.not_found());
        }
        keys.sort_unstable();
        Ok(keys)
    }
}
