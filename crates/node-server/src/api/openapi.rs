//! The OpenAPI documents kubectl reads before `apply`, `create` and `patch`, with no
//! schemas: `/openapi/v3` lists every served group/version, and each one's document has,
//! per kind, a `patch` operation that takes `fieldValidation` (so kubectl ≥ 1.27 leaves
//! validation to the server) and declares no request body types (so kubectl's
//! client-side apply computes strategic merge patches from its compiled-in types for
//! built-in kinds, and JSON merge patches for custom resources). `/openapi/v2` is an empty
//! document, in protobuf when asked (kubectl ≤ 1.28's apply).

use std::sync::Arc;

use serde_json::{Value, json};

use super::Api;
use crate::http::{Req, Resp, full, json as json_resp};
use crate::registry::ResourceType;
use crate::status::ApiError;

/// `api/v1` or `apis/<group>/<version>`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The object path of `t` at `version`, as OpenAPI names it.
fn object_path(t: &ResourceType, version: &str) -> String {
    let ns = if t.namespaced {
        "namespaces/{namespace}/"
    } else {
        ""
    };
    format!(
        "/{}/{ns}{}/{{name}}",
        gv_path(&t.resource.group, version),
        t.resource.plural
    )
}

/// A short hash of what a group/version serves, so that kubectl's cache of the document
/// is renewed when a CRD changes it (FNV-1a).
fn hash(types: &[Arc<ResourceType>], version: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for t in types {
        for b in object_path(t, version).bytes().chain(t.resource.kind.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// `/openapi/v3` and `/openapi/v3/<gv>`.
///
/// # Errors
/// 404 for a group/version not served.
pub(super) fn v3(api: &Api, path: &str) -> Result<Resp, ApiError> {
    let mut gvs: Vec<(String, String)> = Vec::new();
    for t in api.registry.all() {
        for v in &t.versions {
            let gv = (t.resource.group.to_string(), v.clone());
            if !gvs.contains(&gv) {
                gvs.push(gv);
            }
        }
    }
    let rest = path.trim_start_matches("/openapi/v3").trim_matches('/');
    if rest.is_empty() {
        let paths: serde_json::Map<String, Value> = gvs
            .iter()
            .map(|(g, v)| {
                let p = gv_path(g, v);
                let h = hash(&api.registry.in_group_version(g, v), v);
                (
                    p.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={h}")}),
                )
            })
            .collect();
        return Ok(json_resp(200, &json!({"paths": paths})));
    }
    let (g, v) = gvs
        .into_iter()
        .find(|(g, v)| gv_path(g, v) == rest)
        .ok_or_else(ApiError::no_route)?;
    Ok(json_resp(
        200,
        &document(&api.registry.in_group_version(&g, &v), &v),
    ))
}

/// The document of one group/version.
fn document(types: &[Arc<ResourceType>], version: &str) -> Value {
    let param = json!({"name": "fieldValidation", "in": "query", "schema": {"type": "string"}});
    let paths: serde_json::Map<String, Value> = types
        .iter()
        .map(|t| {
            let gvk = json!({"group": t.resource.group, "version": version, "kind": t.resource.kind});
            let ops = json!({
                "get": {"x-kubernetes-group-version-kind": gvk, "responses": {}},
                "patch": {"x-kubernetes-group-version-kind": gvk, "parameters": [param], "responses": {}}
            });
            (object_path(t, version), ops)
        })
        .collect();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "argoexec local node", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": {}}
    })
}

/// An OpenAPI v2 document without paths or definitions. kubectl before 1.30 downloads it
/// (as protobuf) to validate manifests; with no schema for a kind it skips client-side
/// validation, and the server accepts the object as it is.
pub(super) fn v2(req: &Req) -> Resp {
    let proto = req
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("protobuf"));
    if proto {
        // gnostic openapi_v2.Document { swagger (1): "2.0", info (2): { title (1), version (2) } }
        let title = b"argoexec local node";
        let version = b"v1.33.0";
        let mut info = vec![0x0a, title.len() as u8];
        info.extend_from_slice(title);
        info.extend_from_slice(&[0x12, version.len() as u8]);
        info.extend_from_slice(version);
        let mut doc = vec![0x0a, 3, b'2', b'.', b'0', 0x12, info.len() as u8];
        doc.extend_from_slice(&info);
        return full(200, "application/octet-stream", doc);
    }
    json_resp(
        200,
        &json!({"swagger": "2.0", "info": {"title": "argoexec local node", "version": "v1.33.0"}, "paths": {}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{CRDS, PODS};

    #[test]
    fn documents_name_each_kinds_patch_with_field_validation() {
        let (pods, crds): (Arc<ResourceType>, Arc<ResourceType>) = (PODS.clone(), CRDS.clone());
        let d = document(std::slice::from_ref(&pods), "v1");
        let op = &d["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert_eq!(op["parameters"][0]["name"], "fieldValidation");
        assert!(op.get("requestBody").is_none());
        let d = document(std::slice::from_ref(&crds), "v1");
        assert!(
            d["paths"]["/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"].is_object(),
            "{d}"
        );
        assert_ne!(
            hash(std::slice::from_ref(&pods), "v1"),
            hash(std::slice::from_ref(&crds), "v1")
        );
    }
}
