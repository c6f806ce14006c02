//! `v1` `configmaps`: create, get, list, watch, update, patch and delete, validated as the
//! API server does ([`crate::configmaps::validate`]).

use std::sync::Arc;

use serde_json::json;

use super::objects::{create_body, get, list_or_watch, object_body, patch};
use super::{Api, Target};
use crate::configmaps::{CONFIG_MAPS, validate};
use crate::http::{Query, Req, Resp, json as json_resp};
use crate::status::ApiError;
use crate::store::Kind;

/// Route one `configmaps` request.
pub(super) async fn handle(
    api: Arc<Api>,
    req: Req,
    t: Target,
    verb: &'static str,
    q: Query,
) -> Result<Resp, ApiError> {
    let kind = Kind::ConfigMap;
    let ns = t.namespace.clone();
    match (verb, ns.as_deref(), t.name.as_deref(), t.subresource.as_deref()) {
        ("list" | "watch", _, None, None) => list_or_watch(&api, &req, kind, &t, verb, &q),
        ("get", Some(ns), Some(n), None) => get(&api, &req, kind, ns, n),
        ("create", Some(ns), None, None) => {
            let mut body = create_body(req, "ConfigMap", "v1").await?;
            if body["metadata"]["name"].as_str().is_none_or(str::is_empty)
                && let Some(g) = body["metadata"]["generateName"].as_str()
            {
                body["metadata"]["name"] = json!(format!("{g}{}", &crate::store::new_uid()[..5]));
            }
            validate(&body)?;
            let o = api.store.create(kind, ns, body)?;
            Ok(json_resp(201, &o))
        }
        ("update", Some(ns), Some(n), None) => {
            let body = object_body(req).await?;
            validate(&body)?;
            let o = api.store.update(kind, ns, n, |o| {
                keep_immutable(o, &body, n)?;
                *o = body.clone();
                Ok(())
            })?;
            Ok(json_resp(200, &o))
        }
        ("patch", Some(ns), Some(n), None) => {
            patch(&api, req, kind, ns, n, |before, after| {
                validate(after)?;
                keep_immutable(before, after, n)
            })
            .await
        }
        ("delete", Some(ns), Some(n), None) => {
            let o = api
                .store
                .delete(kind, ns, n)
                .ok_or_else(|| ApiError::not_found(&CONFIG_MAPS, n))?;
            Ok(json_resp(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": {"name": n, "kind": "configmaps", "uid": o["metadata"]["uid"]}}),
            ))
        }
        _ => Err(ApiError::method_not_allowed(verb)),
    }
}

/// An `immutable` ConfigMap's `data` and `binaryData` may not change.
fn keep_immutable(before: &serde_json::Value, after: &serde_json::Value, name: &str) -> Result<(), ApiError> {
    if before["immutable"] == true
        && (before["data"] != after["data"] || before["binaryData"] != after["binaryData"])
    {
        return Err(ApiError::invalid(
            &CONFIG_MAPS,
            name,
            "data",
            "Forbidden: field is immutable when `immutable` is set",
        ));
    }
    Ok(())
}
