//! Waiting for `successCondition` / `failureCondition`.
//!
//! Argo polls `GET` every `RESOURCE_STATE_CHECK_INTERVAL` (5 s). Here the object is read
//! once, then watched (`fieldSelector=metadata.name=<name>`, resuming from the last
//! `resourceVersion`, read again on 410 Gone or when the watch ends), so a change is seen
//! as soon as it is made; a service account that may `get` but not `watch` (403 on the
//! watch) falls back to Argo's polling at the interval. Each version of the object is
//! judged as Argo judges it: failure requirements first (any match fails the step, naming
//! the requirement), then success (all must match). The object disappearing (404 or a
//! Deleted event) ends the step with an error; transient API errors are retried.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::Client;
use kube::api::{WatchEvent, WatchParams};
use serde_json::Value;

use crate::ResourceError;
use crate::action::{api_err, to_value};
use crate::condition::Condition;
use crate::retry::{is_transient, status, transient};
use crate::target::ObjectRef;

/// Argo's variable for the polling interval.
pub const INTERVAL_ENV: &str = "RESOURCE_STATE_CHECK_INTERVAL";
/// Its default.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// The conditions of a template.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// All must match.
    pub success: Condition,
    /// Any match fails.
    pub failure: Condition,
}

impl Conditions {
    /// Whether there is anything to wait for.
    pub fn is_empty(&self) -> bool {
        self.success.requirements.is_empty() && self.failure.requirements.is_empty()
    }

    /// Judge one version of the object: `Some(Ok)` success, `Some(Err)` failure, `None` wait.
    pub fn judge(&self, obj: &Value) -> Option<Result<(), ResourceError>> {
        if let Some(r) = self.failure.first_match(obj) {
            tracing::info!(condition = %r, "failure condition evaluated true");
            return Some(Err(ResourceError::FailureCondition {
                requirement: r.to_string(),
            }));
        }
        let matched = self
            .success
            .requirements
            .iter()
            .filter(|r| r.matches(obj))
            .count();
        let total = self.success.requirements.len();
        tracing::info!(matched, total, "success conditions matched");
        (matched >= total).then_some(Ok(()))
    }
}

enum Watched {
    Done(Result<Value, ResourceError>),
    /// The watch ended or expired: resume from this version (None: read again).
    Resume(Option<String>),
    Forbidden,
}

/// Wait until `obj` meets the conditions; returns its last version.
///
/// # Errors
/// [`ResourceError::FailureCondition`], [`ResourceError::Deleted`], [`ResourceError::Api`].
pub async fn wait(
    client: &Client,
    obj: &ObjectRef,
    conds: &Conditions,
    interval: Duration,
) -> Result<Value, ResourceError> {
    tracing::info!(object = %obj.describe(), success = %conds.success, failure = %conds.failure, "waiting for conditions");
    let mut version = None;
    loop {
        if version.is_none() {
            let current = read(client, obj).await?;
            if let Some(verdict) = conds.judge(&current) {
                return verdict.map(|()| current);
            }
            version = current
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
        }
        match watch_once(client, obj, conds, version.clone().unwrap_or_default()).await? {
            Watched::Done(r) => return r,
            Watched::Resume(v) => version = v,
            Watched::Forbidden => {
                tracing::info!(?interval, "watch forbidden; polling");
                return poll(client, obj, conds, interval).await;
            }
        }
    }
}

async fn read(client: &Client, obj: &ObjectRef) -> Result<Value, ResourceError> {
    let api = obj.api(client);
    match transient(|| api.get(&obj.name)).await {
        Ok(o) => Ok(to_value(&o)),
        Err(e) if status(&e) == Some(404) => Err(ResourceError::Deleted {
            object: obj.describe(),
        }),
        Err(e) => Err(api_err("get", obj)(e)),
    }
}

async fn poll(
    client: &Client,
    obj: &ObjectRef,
    conds: &Conditions,
    interval: Duration,
) -> Result<Value, ResourceError> {
    loop {
        tokio::time::sleep(interval).await;
        let current = read(client, obj).await?;
        if let Some(verdict) = conds.judge(&current) {
            return verdict.map(|()| current);
        }
    }
}

async fn watch_once(
    client: &Client,
    obj: &ObjectRef,
    conds: &Conditions,
    version: String,
) -> Result<Watched, ResourceError> {
    let api = obj.api(client);
    let wp = WatchParams::default()
        .fields(&format!("metadata.name={}", obj.name))
        .timeout(290);
    let stream = match api.watch(&wp, &version).await {
        Ok(s) => s,
        Err(e) if status(&e) == Some(403) => return Ok(Watched::Forbidden),
        Err(e) if status(&e) == Some(410) => return Ok(Watched::Resume(None)),
        Err(e) if is_transient(&e) => {
            tracing::warn!(error = %e, "watch failed, retrying");
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Ok(Watched::Resume(Some(version)));
        }
        Err(e) => return Err(api_err("watch", obj)(e)),
    };
    let mut stream = stream.boxed();
    let mut last = version;
    loop {
        let event = match stream.try_next().await {
            Ok(Some(ev)) => ev,
            Ok(None) => return Ok(Watched::Resume(Some(last))),
            Err(e) => {
                tracing::warn!(error = %e, "watch stream broke, resuming");
                return Ok(Watched::Resume(Some(last)));
            }
        };
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                let v = to_value(&o);
                if let Some(verdict) = conds.judge(&v) {
                    return Ok(Watched::Done(verdict.map(|()| v)));
                }
                last = o.metadata.resource_version.unwrap_or(last);
            }
            WatchEvent::Deleted(_) => {
                return Ok(Watched::Done(Err(ResourceError::Deleted {
                    object: obj.describe(),
                })));
            }
            WatchEvent::Bookmark(b) => last = b.metadata.resource_version,
            WatchEvent::Error(e) if e.code == 410 => return Ok(Watched::Resume(None)),
            WatchEvent::Error(e) => {
                tracing::warn!(code = e.code, message = %e.message, "watch error event, reading again");
                return Ok(Watched::Resume(None));
            }
        }
    }
}

/// `RESOURCE_STATE_CHECK_INTERVAL` as Argo reads it (a Go duration), else 5 s.
pub fn interval_from(value: Option<&str>) -> Duration {
    value
        .and_then(argoexec_core::template::container::parse_go_duration)
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_INTERVAL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failure_first_then_all_of_success() {
        let conds = Conditions {
            success: Condition::parse("status.succeeded > 2, status.phase == Done").unwrap(),
            failure: Condition::parse("status.failed > 0").unwrap(),
        };
        assert!(
            conds.judge(&json!({"status": {"succeeded": 3}})).is_none(),
            "one of two"
        );
        assert!(matches!(
            conds.judge(&json!({"status": {"succeeded": 3, "phase": "Done"}})),
            Some(Ok(()))
        ));
        let failed = json!({"status": {"succeeded": 3, "phase": "Done", "failed": 1}});
        let e = conds.judge(&failed).unwrap().unwrap_err().to_string();
        assert_eq!(e, "failure condition 'status.failed>0' evaluated true");
        assert!(Conditions::default().is_empty());
    }

    #[test]
    fn interval() {
        assert_eq!(interval_from(None), DEFAULT_INTERVAL);
        assert_eq!(interval_from(Some("250ms")), Duration::from_millis(250));
        assert_eq!(interval_from(Some("bogus")), DEFAULT_INTERVAL);
    }
}
