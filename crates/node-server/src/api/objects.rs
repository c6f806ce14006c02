//! Handlers shared by the stored kinds (list, get, patch), and [`handle`]: the whole
//! create/get/list/watch/update/patch/delete resource of a kind described by its [`Rules`]
//! — `argoproj.io/v1alpha1` `workflowtaskresults`, `v1` `configmaps` and `secrets`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Api, Target, table, watch};
use crate::configdata::{configmaps, secrets};
use crate::http::{Query, Req, Resp, json as json_resp, read_body};
use crate::patch::{self, PatchType};
use crate::selector::Selector;
use crate::status::{ApiError, Resource};
use crate::store::{Kind, assign_name, check_namespace};

/// Largest accepted request body.
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

/// `GET` on a collection: a list, a table, or a watch.
pub(super) fn list_or_watch(
    api: &Arc<Api>,
    req: &Req,
    kind: Kind,
    t: &Target,
    verb: &str,
    q: &Query,
) -> Result<Resp, ApiError> {
    let (labels, fields) = selectors(q)?;
    let table = wants_table(req);
    if verb == "watch" {
        let from_pod = req.extensions().get::<crate::faults::FromPod>().is_some();
        return watch::watch(api, kind, t.namespace.clone(), q, labels, fields, table, from_pod);
    }
    let (items, rv) = api.store.list(kind, t.namespace.as_deref());
    let items: Vec<Value> = items
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
        .map(|o| (*o).clone())
        .collect();
    if table {
        return Ok(json_resp(200, &table::table(kind, &items, Some(rv))));
    }
    let (api_version, k) = kind.type_meta();
    Ok(json_resp(
        200,
        &json!({
            "kind": format!("{k}List"),
            "apiVersion": api_version,
            "metadata": {"resourceVersion": rv.to_string()},
            "items": items,
        }),
    ))
}

/// `GET` on one object.
pub(super) fn get(api: &Arc<Api>, req: &Req, kind: Kind, ns: &str, name: &str) -> Result<Resp, ApiError> {
    let o = api
        .store
        .get(kind, ns, name)
        .ok_or_else(|| ApiError::not_found(&kind.resource(), name))?;
    if wants_table(req) {
        return Ok(json_resp(200, &table::table(kind, &[(*o).clone()], None)));
    }
    Ok(json_resp(200, &o))
}

/// `PATCH` on one object. `check` may refuse the patched object (e.g. pod spec changes).
pub(super) async fn patch(
    api: &Arc<Api>,
    req: Req,
    kind: Kind,
    ns: &str,
    name: &str,
    check: impl FnOnce(&Value, &mut Value) -> Result<(), ApiError>,
) -> Result<Resp, ApiError> {
    let res = kind.resource();
    let ct = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut accepted = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    // Strategic merge is for built-in kinds only (custom resources answer 415).
    let built_in = kind.resource().group.is_empty();
    if built_in {
        accepted.push("application/strategic-merge-patch+json");
    }
    // The body first, so that an error answer leaves the connection reusable.
    let body = read_body(req, MAX_BODY).await?;
    let pt = PatchType::of(&ct).ok_or_else(|| ApiError::unsupported_media(&accepted))?;
    if pt == PatchType::Strategic && !built_in {
        return Err(ApiError::unsupported_media(&accepted));
    }
    let p: Value = if pt == PatchType::Apply {
        serde_saphyr::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?
    };
    let o = api.store.update(kind, ns, name, |o| {
        let before = o.clone();
        if let Some(rv) = p["metadata"]["resourceVersion"].as_str()
            && Some(rv) != before["metadata"]["resourceVersion"].as_str()
        {
            return Err(ApiError::conflict(&res, name));
        }
        match pt {
            PatchType::Merge | PatchType::Apply => patch::merge(o, &p),
            PatchType::Strategic => patch::strategic(o, &p),
            PatchType::Json => patch::json_patch(o, &p).map_err(|m| invalid_patch(&res, name, &m))?,
        }
        check(&before, o)
    })?;
    Ok(json_resp(200, &o))
}

fn invalid_patch(res: &Resource, name: &str, m: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("{} \"{name}\" is invalid: {m}", res.kind_name()),
    )
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

/// Read a create body that must be of `kind` (a body without `kind` is taken as one), as
/// the API server's decoder checks it against the URL's resource.
pub(super) async fn create_body(req: Req, kind: &str, api_version: &str) -> Result<Value, ApiError> {
    let body = object_body(req).await?;
    if body["kind"].as_str().is_some_and(|k| k != kind) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected kind: {}",
            body["kind"]
        )));
    }
    Ok(body)
}

/// What differs between the kinds [`handle`] serves.
pub(super) struct Rules {
    /// The kind.
    pub kind: Kind,
    /// Check (and normalise) an object about to be stored by a create, update or patch.
    pub admit: fn(&mut Value) -> Result<(), ApiError>,
    /// Check that a stored object may become another (immutable fields).
    pub change: fn(&Value, &Value) -> Result<(), ApiError>,
    /// An update must name the version it replaces (custom resources); core kinds allow
    /// an unconditional one.
    pub update_needs_version: bool,
    /// `deletecollection` is served.
    pub delete_collection: bool,
}

fn accept(_: &mut Value) -> Result<(), ApiError> {
    Ok(())
}

fn any_change(_: &Value, _: &Value) -> Result<(), ApiError> {
    Ok(())
}

/// `workflowtaskresults`: stored as sent.
pub(super) const TASK_RESULTS: Rules = Rules {
    kind: Kind::TaskResult,
    admit: accept,
    change: any_change,
    update_needs_version: true,
    delete_collection: true,
};

/// `configmaps` ([`configmaps::admit`]).
pub(super) const CONFIG_MAPS: Rules = Rules {
    kind: Kind::ConfigMap,
    admit: configmaps::admit,
    change: configmaps::change,
    update_needs_version: false,
    delete_collection: false,
};

/// `secrets` ([`secrets::admit`]: `stringData` merged, `type` defaulted).
pub(super) const SECRETS: Rules = Rules {
    kind: Kind::Secret,
    admit: secrets::admit,
    change: secrets::change,
    update_needs_version: false,
    delete_collection: false,
};

/// Route one request of the kind `rules` describe.
pub(super) async fn handle(
    api: Arc<Api>,
    req: Req,
    t: Target,
    verb: &'static str,
    q: Query,
    rules: &'static Rules,
) -> Result<Resp, ApiError> {
    let kind = rules.kind;
    let ns = t.namespace.clone();
    match (verb, ns.as_deref(), t.name.as_deref(), t.subresource.as_deref()) {
        ("list" | "watch", _, None, None) => list_or_watch(&api, &req, kind, &t, verb, &q),
        ("get", Some(ns), Some(n), None) => get(&api, &req, kind, ns, n),
        ("create", Some(ns), None, None) => create(&api, req, rules, ns).await,
        ("update", Some(ns), Some(n), None) => update(&api, req, rules, ns, n).await,
        ("patch", Some(ns), Some(n), None) => {
            patch(&api, req, kind, ns, n, |before, after| {
                (rules.admit)(after)?;
                (rules.change)(before, after)
            })
            .await
        }
        // An answer given without reading the request's body must still read it, or HTTP/1.1
        // loses the connection for the client's next request (kube-apiserver discards it).
        ("delete", Some(ns), Some(n), None) => {
            crate::http::drain(req).await;
            delete(&api, kind, ns, n)
        }
        ("deletecollection", Some(ns), None, None) if rules.delete_collection => {
            crate::http::drain(req).await;
            delete_collection(&api, kind, ns, &q)
        }
        _ => {
            crate::http::drain(req).await;
            Err(ApiError::method_not_allowed(verb))
        }
    }
}

async fn create(api: &Arc<Api>, req: Req, rules: &Rules, ns: &str) -> Result<Resp, ApiError> {
    let (api_version, kind_name) = rules.kind.type_meta();
    let mut body = create_body(req, kind_name, api_version).await?;
    check_namespace(&body, ns)?;
    assign_name(&mut body, &rules.kind.resource())?;
    (rules.admit)(&mut body)?;
    let o = api.store.create(rules.kind, ns, body)?;
    Ok(json_resp(201, &o))
}

async fn update(api: &Arc<Api>, req: Req, rules: &Rules, ns: &str, name: &str) -> Result<Resp, ApiError> {
    let res = rules.kind.resource();
    let mut body = object_body(req).await?;
    check_namespace(&body, ns)?;
    if body["metadata"]["name"].as_str() != Some(name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            body["metadata"]["name"].as_str().unwrap_or("")
        )));
    }
    (rules.admit)(&mut body)?;
    let o = api.store.update(rules.kind, ns, name, |o| {
        match body["metadata"]["resourceVersion"].as_str() {
            None if rules.update_needs_version => {
                return Err(ApiError::invalid(
                    &res,
                    name,
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                ));
            }
            Some(rv) if Some(rv) != o["metadata"]["resourceVersion"].as_str() => {
                return Err(ApiError::conflict(&res, name));
            }
            _ => {}
        }
        (rules.change)(o, &body)?;
        *o = body.clone();
        Ok(())
    })?;
    Ok(json_resp(200, &o))
}

fn delete(api: &Arc<Api>, kind: Kind, ns: &str, name: &str) -> Result<Resp, ApiError> {
    let res = kind.resource();
    let o = api
        .store
        .delete(kind, ns, name)
        .ok_or_else(|| ApiError::not_found(&res, name))?;
    let mut details = res.details(name);
    details["uid"] = o["metadata"]["uid"].clone();
    Ok(json_resp(
        200,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
    ))
}

fn delete_collection(api: &Arc<Api>, kind: Kind, ns: &str, q: &Query) -> Result<Resp, ApiError> {
    let (labels, fields) = selectors(q)?;
    let (items, _) = api.store.list(kind, Some(ns));
    let mut gone = Vec::new();
    for o in items
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
    {
        if let Some(n) = o["metadata"]["name"].as_str() {
            gone.extend(api.store.delete(kind, ns, n).map(|o| (*o).clone()));
        }
    }
    let (api_version, kind_name) = kind.type_meta();
    Ok(json_resp(
        200,
        &json!({"kind": format!("{kind_name}List"), "apiVersion": api_version, "metadata": {}, "items": gone}),
    ))
}
