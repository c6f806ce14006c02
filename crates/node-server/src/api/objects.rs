//! The generic resource handler: create/get/list/watch/update/patch/delete/deletecollection
//! of any stored type the registry serves (built-in or custom), namespaced or
//! cluster-scoped, with its `status` subresource where the type has one. What differs
//! between types is in their [`Rules`]; the PATCH itself is in `patching`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::rules::Rules;
use super::{Api, Target, patching, table, watch};
use crate::http::{Query, Req, Resp, json as json_resp, read_body};
use crate::registry::{Kind, ResourceType};
use crate::selector::Selector;
use crate::status::ApiError;
use crate::store::{assign_name, check_namespace};
use crate::subresource::{self, Write};

/// Largest accepted request body (the API server's 3 MiB).
pub(super) const MAX_BODY: usize = 3 * 1024 * 1024;

/// Whether the client asked for a `Table` (kubectl's printing).
pub(super) fn wants_table(req: &Req) -> bool {
    req.headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

/// Selectors of a list or watch.
pub(super) fn selectors(q: &Query) -> Result<(Selector, Selector), ApiError> {
    let labels = Selector::labels(q.get("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    let fields = Selector::fields(q.get("fieldSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    Ok((labels, fields))
}

/// An object as served at `version` (the store keeps the storage version's `apiVersion`;
/// the versions of one custom resource share one schema here, so only that changes).
pub(super) fn present(kind: &ResourceType, version: &str, o: &Value) -> Value {
    let mut o = o.clone();
    if !version.is_empty() && version != kind.storage_version() {
        o["apiVersion"] = json!(kind.api_version(version));
    }
    o
}

/// `GET` on a collection: a list, a table, or a watch.
pub(super) fn list_or_watch(
    api: &Arc<Api>,
    req: &Req,
    kind: &Kind,
    t: &Target,
    verb: &str,
    q: &Query,
) -> Result<Resp, ApiError> {
    let (labels, fields) = selectors(q)?;
    let table = wants_table(req);
    let ns = t.namespace.clone().filter(|_| kind.namespaced);
    if verb == "watch" {
        let from_pod = req.extensions().get::<crate::faults::FromPod>().is_some();
        let w = watch::WatchOf {
            kind: kind.clone(),
            version: t.version.clone(),
            ns,
            labels,
            fields,
            table,
            from_pod,
        };
        return watch::watch(api, w, q);
    }
    let (items, rv) = api.store.list(kind, ns.as_deref());
    let items: Vec<Value> = items
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
        .map(|o| present(kind, &t.version, &o))
        .collect();
    if table {
        return Ok(json_resp(200, &table::table(kind, &items, Some(rv))));
    }
    Ok(json_resp(
        200,
        &json!({
            "kind": format!("{}List", kind.resource.kind),
            "apiVersion": kind.api_version(&t.version),
            "metadata": {"resourceVersion": rv.to_string()},
            "items": items,
        }),
    ))
}

/// `GET` on one object.
pub(super) fn get(
    api: &Arc<Api>,
    req: &Req,
    kind: &Kind,
    t: &Target,
    ns: &str,
    name: &str,
) -> Result<Resp, ApiError> {
    let o = api
        .store
        .get(kind, ns, name)
        .ok_or_else(|| ApiError::not_found(&kind.resource, name))?;
    let o = present(kind, &t.version, &o);
    if wants_table(req) {
        return Ok(json_resp(200, &table::table(kind, &[o], None)));
    }
    Ok(json_resp(200, &o))
}

/// Read an object body (create, update): JSON, YAML, or the protobuf of the kinds
/// [`crate::protobuf`] decodes.
pub(super) async fn object_body(req: Req) -> Result<Value, ApiError> {
    let ct = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = read_body(req, MAX_BODY).await?;
    let v: Value = if ct.starts_with(crate::protobuf::MEDIA_TYPE) {
        crate::protobuf::decode(&body)?
    } else if ct.contains("yaml") {
        serde_saphyr::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON: {e}")))?
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("the body must be an object"));
    }
    Ok(v)
}

/// Check that a body is of `kind` (a body without `kind` is taken as one), as the API
/// server's decoder checks it against the URL's resource.
pub(super) fn check_kind(body: &Value, kind: &str, api_version: &str) -> Result<(), ApiError> {
    if body["kind"].as_str().is_some_and(|k| k != kind) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected kind: {}",
            body["kind"]
        )));
    }
    Ok(())
}

/// Route one request of a stored type (anything but pods).
pub(super) async fn handle(
    api: Arc<Api>,
    req: Req,
    t: Target,
    verb: &'static str,
    q: Query,
    kind: Kind,
) -> Result<Resp, ApiError> {
    if !kind.namespaced && t.namespace.is_some() {
        crate::http::drain(req).await;
        return Err(ApiError::no_route());
    }
    let rules = Rules::of(&kind);
    // Cluster-scoped objects live under the namespace "".
    let ns = if kind.namespaced {
        t.namespace.clone()
    } else {
        Some(String::new())
    };
    let sub = match t.subresource.as_deref() {
        None => Some(Write::Main),
        Some("status") if kind.status => Some(Write::Status),
        Some(_) => None,
    };
    match (verb, ns.as_deref(), t.name.as_deref(), sub) {
        ("list" | "watch", _, None, Some(Write::Main)) => list_or_watch(&api, &req, &kind, &t, verb, &q),
        ("get", Some(ns), Some(n), Some(_)) => get(&api, &req, &kind, &t, ns, n),
        ("create", Some(ns), None, Some(Write::Main)) => create(&api, req, &kind, &t, &rules, ns).await,
        ("update", Some(ns), Some(n), Some(w)) => update(&api, req, (&kind, &t, &rules), ns, n, w).await,
        ("patch", Some(ns), Some(n), Some(w)) => {
            let o = patching::patch(
                &api,
                req,
                &q,
                (&kind, &t),
                (ns, n),
                w,
                Some(&rules),
                |before, after| {
                    (rules.admit)(after)?;
                    (rules.change)(before, after)
                },
            )
            .await?;
            if o.0 == 200 {
                (rules.after_write)(&api, &o.1);
            }
            Ok(json_resp(o.0, &present(&kind, &t.version, &o.1)))
        }
        // An answer given without reading the request's body must still read it, or HTTP/1.1
        // loses the connection for the client's next request (kube-apiserver discards it).
        ("delete", Some(ns), Some(n), Some(Write::Main)) => {
            crate::http::drain(req).await;
            delete(&api, &kind, &rules, ns, n)
        }
        ("deletecollection", Some(ns), None, Some(Write::Main)) => {
            crate::http::drain(req).await;
            delete_collection(&api, &kind, &rules, ns, &q)
        }
        (_, _, _, None) => {
            crate::http::drain(req).await;
            Err(ApiError::no_route())
        }
        _ => {
            crate::http::drain(req).await;
            Err(ApiError::method_not_allowed(verb))
        }
    }
}

/// Store a new object as a POST (or a server-side apply of an absent one) does.
pub(super) fn create_object(
    api: &Arc<Api>,
    kind: &Kind,
    rules: &Rules,
    ns: &str,
    mut body: Value,
) -> Result<Arc<Value>, ApiError> {
    if kind.namespaced {
        check_namespace(&body, ns)?;
    }
    assign_name(&mut body, &kind.resource)?;
    subresource::on_create(kind, &mut body);
    (rules.admit)(&mut body)?;
    let o = api.store.create(kind, ns, body)?;
    (rules.after_write)(api, &o);
    Ok(o)
}

async fn create(
    api: &Arc<Api>,
    req: Req,
    kind: &Kind,
    t: &Target,
    rules: &Rules,
    ns: &str,
) -> Result<Resp, ApiError> {
    let body = object_body(req).await?;
    check_kind(&body, &kind.resource.kind, &kind.api_version(&t.version))?;
    let o = create_object(api, kind, rules, ns, body)?;
    Ok(json_resp(201, &present(kind, &t.version, &o)))
}

async fn update(
    api: &Arc<Api>,
    req: Req,
    (kind, t, rules): (&Kind, &Target, &Rules),
    ns: &str,
    name: &str,
    w: Write,
) -> Result<Resp, ApiError> {
    let res = &kind.resource;
    let mut body = object_body(req).await?;
    if kind.namespaced {
        check_namespace(&body, ns)?;
    }
    if body["metadata"]["name"].as_str() != Some(name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            body["metadata"]["name"].as_str().unwrap_or("")
        )));
    }
    let o = api.store.update(kind, ns, name, |o| {
        match body["metadata"]["resourceVersion"].as_str() {
            None if !kind.built_in => {
                return Err(ApiError::invalid(
                    res,
                    name,
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                ));
            }
            Some(rv) if Some(rv) != o["metadata"]["resourceVersion"].as_str() => {
                return Err(ApiError::conflict(res, name));
            }
            _ => {}
        }
        subresource::on_update(kind, w, o, &mut body);
        (rules.admit)(&mut body)?;
        (rules.change)(o, &body)?;
        *o = body.clone();
        Ok(())
    })?;
    (rules.after_write)(api, &o);
    Ok(json_resp(200, &present(kind, &t.version, &o)))
}

fn delete(api: &Arc<Api>, kind: &Kind, rules: &Rules, ns: &str, name: &str) -> Result<Resp, ApiError> {
    let res = &kind.resource;
    let o = api
        .store
        .delete(kind, ns, name)
        .ok_or_else(|| ApiError::not_found(res, name))?;
    (rules.after_delete)(api, &o);
    if kind.delete_returns_object {
        return Ok(json_resp(200, &o));
    }
    let mut details = res.details(name);
    details["uid"] = o["metadata"]["uid"].clone();
    Ok(json_resp(
        200,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
    ))
}

fn delete_collection(
    api: &Arc<Api>,
    kind: &Kind,
    rules: &Rules,
    ns: &str,
    q: &Query,
) -> Result<Resp, ApiError> {
    let (labels, fields) = selectors(q)?;
    let (items, _) = api.store.list(kind, Some(ns));
    let mut gone = Vec::new();
    for o in items
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
    {
        if let Some(n) = o["metadata"]["name"].as_str()
            && let Some(o) = api.store.delete(kind, ns, n)
        {
            (rules.after_delete)(api, &o);
            gone.push((*o).clone());
        }
    }
    let (api_version, kind_name) = kind.type_meta();
    Ok(json_resp(
        200,
        &json!({"kind": format!("{kind_name}List"), "apiVersion": api_version, "metadata": {}, "items": gone}),
    ))
}
