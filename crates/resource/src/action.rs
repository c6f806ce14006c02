//! The six actions over dynamic objects, one object at a time, with kubectl's rules:
//! create is a POST (an existing object is an error), replace a PUT carrying the current
//! `resourceVersion`, delete ignores a missing object (Argo passes `--ignore-not-found`) and
//! waits until it is gone unless `--wait=false`, get fails on a missing object unless
//! `--ignore-not-found`, patch sends the manifest as a strategic merge (built-in kinds only),
//! JSON merge or JSON patch. Apply is in [`crate::apply`].

use std::str::FromStr;
use std::time::Duration;

use kube::Client;
use kube::api::{DeleteParams, DynamicObject, PatchParams, PostParams, PropagationPolicy};
use serde_json::Value;

use crate::ResourceError;
use crate::flags::{DryRun, Flags, Validate};
use crate::retry::{status, transient};
use crate::target::ObjectRef;

/// A resource template's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read the object.
    Get,
    /// POST it.
    Create,
    /// Client-side (or `--server-side`) apply.
    Apply,
    /// DELETE it.
    Delete,
    /// PUT it.
    Replace,
    /// PATCH it with the manifest.
    Patch,
}

impl FromStr for Action {
    type Err = ResourceError;

    fn from_str(s: &str) -> Result<Self, ResourceError> {
        Ok(match s {
            "get" => Self::Get,
            "create" => Self::Create,
            "apply" => Self::Apply,
            "delete" => Self::Delete,
            "replace" => Self::Replace,
            "patch" => Self::Patch,
            other => return Err(ResourceError::UnknownAction(other.to_string())),
        })
    }
}

impl Action {
    /// The verb for logs and the `done` list of a partial failure (`created`, …).
    pub fn past(self) -> &'static str {
        match self {
            Self::Get => "got",
            Self::Create => "created",
            Self::Apply => "applied",
            Self::Delete => "deleted",
            Self::Replace => "replaced",
            Self::Patch => "patched",
        }
    }
}

/// `patch`'s strategy (`mergeStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
}

impl FromStr for Strategy {
    type Err = ResourceError;

    fn from_str(s: &str) -> Result<Self, ResourceError> {
        match s {
            "strategic" => Ok(Self::Strategic),
            "merge" => Ok(Self::Merge),
            "json" => Ok(Self::Json),
            other => Err(ResourceError::Flag {
                flag: format!("mergeStrategy: {other}"),
                reason: "expected strategic, merge or json".into(),
            }),
        }
    }
}

pub(crate) fn api_err<'a>(
    action: &'static str,
    obj: &'a ObjectRef,
) -> impl FnOnce(kube::Error) -> ResourceError + 'a {
    move |source| ResourceError::Api {
        action,
        object: obj.describe(),
        source: Box::new(source),
    }
}

pub(crate) fn to_dynamic(doc: &Value, obj: &ObjectRef) -> Result<DynamicObject, ResourceError> {
    serde_json::from_value(doc.clone()).map_err(|e| ResourceError::BadObject {
        index: 0,
        reason: format!("{}: {e}", obj.describe()),
    })
}

pub(crate) fn to_value(o: &DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

/// PatchParams from the flags.
pub(crate) fn patch_params(flags: &Flags) -> PatchParams {
    let mut pp = PatchParams {
        dry_run: flags.dry_run == DryRun::Server,
        field_manager: flags.field_manager.clone(),
        ..Default::default()
    };
    pp.field_validation = Some(match flags.validate {
        Validate::Strict => kube::api::ValidationDirective::Strict,
        Validate::Warn => kube::api::ValidationDirective::Warn,
        Validate::Ignore => kube::api::ValidationDirective::Ignore,
    });
    pp
}

fn post_params(flags: &Flags) -> PostParams {
    PostParams {
        dry_run: flags.dry_run == DryRun::Server,
        field_manager: flags.field_manager.clone(),
    }
}

/// GET; `None` for a missing object when `ignore_missing`.
///
/// # Errors
/// [`ResourceError::Api`].
pub async fn get(
    client: &Client,
    obj: &ObjectRef,
    ignore_missing: bool,
) -> Result<Option<Value>, ResourceError> {
    let api = obj.api(client);
    match transient(|| api.get(&obj.name)).await {
        Ok(o) => Ok(Some(to_value(&o))),
        Err(e) if ignore_missing && status(&e) == Some(404) => Ok(None),
        Err(e) => Err(api_err("get", obj)(e)),
    }
}

/// POST `doc`; with `--save-config` the last-applied annotation is recorded as apply does.
///
/// # Errors
/// [`ResourceError::Api`] (409 AlreadyExists included).
pub async fn create(
    client: &Client,
    obj: &ObjectRef,
    doc: &Value,
    flags: &Flags,
) -> Result<Value, ResourceError> {
    let mut doc = doc.clone();
    if flags.save_config {
        crate::apply::annotate_last_applied(&mut doc);
    }
    let api = obj.api(client);
    let body = to_dynamic(&doc, obj)?;
    let pp = post_params(flags);
    let created = transient(|| api.create(&pp, &body))
        .await
        .map_err(api_err("create", obj))?;
    Ok(to_value(&created))
}

/// PUT `doc` with the current `resourceVersion` unless the manifest has one.
///
/// # Errors
/// [`ResourceError::Api`] (404 when the object does not exist, as kubectl).
pub async fn replace(
    client: &Client,
    obj: &ObjectRef,
    doc: &Value,
    flags: &Flags,
) -> Result<Value, ResourceError> {
    let api = obj.api(client);
    let mut body = to_dynamic(doc, obj)?;
    if body.metadata.resource_version.is_none() {
        let current = transient(|| api.get(&obj.name))
            .await
            .map_err(api_err("get", obj))?;
        body.metadata.resource_version = current.metadata.resource_version;
    }
    let pp = post_params(flags);
    let replaced = transient(|| api.replace(&obj.name, &pp, &body))
        .await
        .map_err(api_err("replace", obj))?;
    Ok(to_value(&replaced))
}

/// DELETE; a missing object is fine. With `--wait` (the default) wait until it is gone.
///
/// # Errors
/// [`ResourceError::Api`].
pub async fn delete(client: &Client, obj: &ObjectRef, flags: &Flags) -> Result<(), ResourceError> {
    let api = obj.api(client);
    let dp = DeleteParams {
        dry_run: flags.dry_run == DryRun::Server,
        grace_period_seconds: flags.grace_period,
        propagation_policy: flags.cascade.as_deref().map(|c| match c {
            "Foreground" => PropagationPolicy::Foreground,
            "Orphan" => PropagationPolicy::Orphan,
            _ => PropagationPolicy::Background,
        }),
        ..Default::default()
    };
    match transient(|| api.delete(&obj.name, &dp)).await {
        Ok(_) => {}
        Err(e) if status(&e) == Some(404) => {
            tracing::info!(object = %obj.describe(), "already absent");
            return Ok(());
        }
        Err(e) => return Err(api_err("delete", obj)(e)),
    }
    if !flags.wait || flags.dry_run == DryRun::Server {
        return Ok(());
    }
    // Finalizers may hold the object a while: poll as kubectl's --wait does.
    while get(client, obj, true).await?.is_some() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}

/// PATCH with `body` (the manifest) by `strategy`.
///
/// # Errors
/// [`ResourceError::StrategicOnCustomResource`]; [`ResourceError::Api`].
pub async fn patch(
    client: &Client,
    obj: &ObjectRef,
    body: &Value,
    strategy: Strategy,
    flags: &Flags,
) -> Result<Value, ResourceError> {
    let api = obj.api(client);
    let pp = patch_params(flags);
    let patched = match strategy {
        Strategy::Strategic if !obj.target.is_builtin() => {
            return Err(ResourceError::StrategicOnCustomResource {
                group: obj.target.resource.group.clone(),
                kind: obj.target.resource.kind.clone(),
            });
        }
        Strategy::Strategic => {
            let p = kube::api::Patch::Strategic(body);
            transient(|| api.patch(&obj.name, &pp, &p)).await
        }
        Strategy::Merge => {
            let p = kube::api::Patch::Merge(body);
            transient(|| api.patch(&obj.name, &pp, &p)).await
        }
        Strategy::Json => transient(|| json_patch(client, obj, body, &pp)).await,
    };
    Ok(to_value(&patched.map_err(api_err("patch", obj))?))
}

/// A JSON patch (RFC 6902) sent as is.
async fn json_patch(
    client: &Client,
    obj: &ObjectRef,
    body: &Value,
    pp: &PatchParams,
) -> Result<DynamicObject, kube::Error> {
    let mut url = format!(
        "{}/{}",
        obj.target.collection_path(obj.namespace.as_deref()),
        obj.name
    );
    let mut query = Vec::new();
    if pp.dry_run {
        query.push("dryRun=All".to_string());
    }
    if let Some(fm) = &pp.field_manager {
        query.push(format!("fieldManager={fm}"));
    }
    if !query.is_empty() {
        url = format!("{url}?{}", query.join("&"));
    }
    let req = http::Request::patch(url)
        .header(http::header::CONTENT_TYPE, "application/json-patch+json")
        .header(http::header::ACCEPT, "application/json")
        .body(serde_json::to_vec(body).unwrap_or_default())
        .map_err(kube::Error::HttpError)?;
    client.request::<DynamicObject>(req).await
}
