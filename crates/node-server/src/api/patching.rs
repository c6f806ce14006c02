//! `PATCH` of any stored type: JSON merge patch, JSON patch, strategic merge patch
//! (built-in types only; custom resources answer 415 as the API server does) and
//! server-side apply (`application/apply-patch+yaml`: `fieldManager` required, an absent
//! object is created). The patched object then goes through the status subresource's
//! rules and the caller's checks before it is stored.

use std::sync::Arc;

use serde_json::Value;

use super::objects::{self, MAX_BODY};
use super::rules::Rules;
use super::{Api, Target};
use crate::http::{Query, Req, read_body};
use crate::patch::{self, PatchType};
use crate::registry::Kind;
use crate::status::{ApiError, Resource};
use crate::store::now_rfc3339;
use crate::subresource::{self, Write};

/// The media types a PATCH of `kind` accepts.
fn accepted(kind: &Kind) -> Vec<&'static str> {
    let mut a = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if kind.built_in {
        a.push("application/strategic-merge-patch+json");
    }
    a
}

fn decode(pt: PatchType, body: &[u8]) -> Result<Value, ApiError> {
    let r = if pt == PatchType::Apply {
        serde_saphyr::from_slice(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice(body).map_err(|e| e.to_string())
    };
    r.map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// Patch one object; returns the HTTP code (201 when an apply created it) and the object.
/// `check` may refuse the patched object (immutable fields, pod spec changes); `rules`,
/// when given, lets an apply create an absent object.
#[allow(clippy::too_many_arguments)]
pub(super) async fn patch(
    api: &Arc<Api>,
    req: Req,
    q: &Query,
    (kind, t): (&Kind, &Target),
    (ns, name): (&str, &str),
    w: Write,
    rules: Option<&Rules>,
    check: impl FnOnce(&Value, &mut Value) -> Result<(), ApiError>,
) -> Result<(u16, Arc<Value>), ApiError> {
    let res = &kind.resource;
    let ct = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    // The body first, so that an error answer leaves the connection reusable.
    let body = read_body(req, MAX_BODY).await?;
    let accepted = accepted(kind);
    let pt = PatchType::of(&ct).ok_or_else(|| ApiError::unsupported_media(&accepted))?;
    if pt == PatchType::Strategic && !kind.built_in {
        return Err(ApiError::unsupported_media(&accepted));
    }
    let p = decode(pt, &body)?;
    let manager = q.get("fieldManager").unwrap_or("").to_string();
    if pt == PatchType::Apply {
        if manager.is_empty() {
            return Err(ApiError::new(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            ));
        }
        if !p.is_object() {
            return Err(ApiError::bad_request(
                "error decoding patch: the applied configuration must be an object",
            ));
        }
        if let Some(rules) = rules.filter(|_| w == Write::Main)
            && api.store.get(kind, ns, name).is_none()
        {
            let mut obj = p.clone();
            obj["metadata"]["name"] = Value::String(name.to_string());
            objects::check_kind(&obj, &kind.resource.kind, &kind.api_version(&t.version))?;
            patch::apply::apply(&mut obj, &p, &manager, &now_rfc3339());
            let o = objects::create_object(api, kind, rules, ns, obj)?;
            return Ok((201, o));
        }
    }
    let o = api.store.update(kind, ns, name, |o| {
        let before = o.clone();
        if let Some(rv) = p["metadata"]["resourceVersion"].as_str()
            && Some(rv) != before["metadata"]["resourceVersion"].as_str()
        {
            return Err(ApiError::conflict(res, name));
        }
        match pt {
            PatchType::Merge => patch::merge(o, &p),
            PatchType::Apply => patch::apply::apply(o, &p, &manager, &now_rfc3339()),
            PatchType::Strategic => {
                patch::strategic(o, &p, &kind.resource.kind).map_err(|m| invalid_patch(res, name, &m))?;
            }
            PatchType::Json => patch::json_patch(o, &p).map_err(|m| invalid_patch(res, name, &m))?,
        }
        subresource::on_update(kind, w, &before, o);
        check(&before, o)
    })?;
    Ok((200, o))
}

fn invalid_patch(res: &Resource, name: &str, m: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("{} \"{name}\" is invalid: {m}", res.kind_name()),
    )
}
