//! The API-server-compatible endpoint: authentication (bearer tokens), RBAC authorization
//! with the real `Forbidden` messages, request counting, and routing: pods to their own
//! handler (they run on Docker), every other type the registry serves (built-in or defined
//! by a CustomResourceDefinition) to the generic one, then discovery and the node's own
//! debug paths.

mod aggregated;
mod crd;
mod discovery;
mod objects;
mod openapi;
mod patching;
mod pods;
mod rules;
mod table;
mod watch;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::Method;
use serde_json::json;

use crate::auth::{Attributes, Decision, Rbac, Subject, Tokens, tokens::bearer};
use crate::counts::Counts;
use crate::faults::Faults;
use crate::http::{Handler, Query, Req, Resp, api_error};
use crate::pods::Pods;
use crate::registry::Registry;
use crate::status::ApiError;
use crate::store::Store;

/// Shared state of the API endpoint.
pub struct Api {
    /// Objects.
    pub store: Arc<Store>,
    /// The served types.
    pub registry: Arc<Registry>,
    /// Pods on the node.
    pub pods: Arc<Pods>,
    /// Tokens.
    pub tokens: Arc<Tokens>,
    /// Policy.
    pub rbac: Arc<Rbac>,
    /// Request counters.
    pub counts: Arc<Counts>,
    /// Injected faults.
    pub faults: Arc<Faults>,
    /// The kubelet endpoint's port (for the Node object).
    pub kubelet_port: u16,
    /// The API endpoint's port (for discovery).
    pub api_port: u16,
}

/// A parsed request target.
#[derive(Debug, Clone, Default)]
pub(crate) struct Target {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parse `/api/v1/...` and `/apis/{group}/{version}/...` resource paths.
pub(crate) fn parse_target(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, r, tail @ ..] => (Some(ns.to_string()), [&[*r][..], tail].concat()),
        other => (None, other.to_vec()),
    };
    let mut t = Target {
        group: group.into(),
        version: version.into(),
        namespace,
        ..Default::default()
    };
    match rest.as_slice() {
        [] => return None,
        [r] => t.resource = r.to_string(),
        [r, n] => {
            t.resource = r.to_string();
            t.name = Some(n.to_string());
        }
        [r, n, s] => {
            t.resource = r.to_string();
            t.name = Some(n.to_string());
            t.subresource = Some(s.to_string());
        }
        _ => return None,
    }
    Some(t)
}

impl Handler for Api {
    fn handle(self: Arc<Self>, req: Req) -> Pin<Box<dyn Future<Output = Resp> + Send>> {
        Box::pin(async move { self.route(req).await })
    }
}

impl Api {
    async fn route(self: Arc<Self>, req: Req) -> Resp {
        let path = req.uri().path().to_string();
        let q = Query::of(&req);
        let auth = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let Some(who) = bearer(auth).and_then(|t| self.tokens.review(t)) else {
            self.counts.add(None, "api", "unauthenticated", &path);
            crate::http::drain(req).await;
            return api_error(&ApiError::unauthorized());
        };
        let mut req = req;
        if who.pod.is_some() {
            req.extensions_mut().insert(crate::faults::FromPod);
        }
        let target = parse_target(&path);
        let verb = verb_of(req.method(), target.as_ref(), &q);
        let pod_of_path = target
            .as_ref()
            .filter(|t| t.resource == "pods")
            .and_then(|t| Some(format!("{}/{}", t.namespace.as_deref()?, t.name.as_deref()?)));
        let pod_key = who
            .pod
            .as_ref()
            .map(|p| format!("{}/{}", p.namespace, p.name))
            .or(pod_of_path);
        self.counts.add(pod_key, "api", verb, &path);
        if who.pod.is_some() {
            if let Some(d) = self.faults.spec.api_delay {
                tokio::time::sleep(d).await;
            }
            if let Some((code, retry_after)) = self.faults.api_error() {
                crate::http::drain(req).await;
                let mut e = match code {
                    429 => ApiError::new(
                        429,
                        "TooManyRequests",
                        "Too many requests, please try again later.",
                    ),
                    503 => ApiError::new(
                        503,
                        "ServiceUnavailable",
                        "the server is currently unable to handle the request",
                    ),
                    _ => ApiError::new(500, "InternalError", "Internal error occurred: injected fault"),
                };
                e.retry_after = retry_after;
                return api_error(&e);
            }
        }
        if let Err(e) = self.authorize(&who, &req, target.as_ref(), verb, &q, &path) {
            crate::http::drain(req).await;
            return api_error(&e);
        }
        let r = match target {
            Some(t) => self.clone().resource(req, t, verb, q, who).await,
            None => self.clone().non_resource(req, &path).await,
        };
        r.unwrap_or_else(|e| api_error(&e))
    }

    fn authorize(
        &self,
        who: &Subject,
        req: &Req,
        t: Option<&Target>,
        verb: &str,
        q: &Query,
        path: &str,
    ) -> Result<(), ApiError> {
        let Some(t) = t else {
            let a = Attributes {
                verb: "get",
                path,
                ..Default::default()
            };
            if path.starts_with("/argoexec/") && !who.groups.iter().any(|g| g == "system:masters") {
                return Err(ApiError::new(
                    403,
                    "Forbidden",
                    format!("forbidden: User \"{}\" cannot get path \"{path}\"", who.user),
                ));
            }
            return match self.rbac.authorize(who, &a) {
                Decision::Allow(_) => Ok(()),
                Decision::Deny => Err(ApiError::new(
                    403,
                    "Forbidden",
                    format!("forbidden: User \"{}\" cannot get path \"{path}\"", who.user),
                )),
            };
        };
        // A watch or list pinned to one name by field selector is authorized for that name.
        let pinned = q
            .get("fieldSelector")
            .and_then(|f| crate::selector::Selector::fields(f).ok())
            .and_then(|s| s.pinned_name().map(str::to_string));
        let name = t.name.clone().or(pinned);
        let check = |verb: &str| {
            let a = Attributes {
                verb,
                group: &t.group,
                resource: &t.resource,
                subresource: t.subresource.as_deref(),
                namespace: t.namespace.as_deref(),
                name: name.as_deref(),
                path,
            };
            match self.rbac.authorize(who, &a) {
                Decision::Allow(reason) => {
                    tracing::trace!(user = %who.user, %verb, %reason, "allowed");
                    Ok(())
                }
                Decision::Deny => Err(forbidden(who, t, verb)),
            }
        };
        check(verb)?;
        // WebSocket exec/attach (GET) also needs `create` (AuthorizePodWebsocketUpgradeCreatePermission, 1.35+).
        if req.method() == Method::GET && matches!(t.subresource.as_deref(), Some("exec" | "attach")) {
            check("create")?;
        }
        Ok(())
    }

    async fn resource(
        self: Arc<Self>,
        req: Req,
        t: Target,
        verb: &'static str,
        q: Query,
        who: Arc<Subject>,
    ) -> Result<Resp, ApiError> {
        match (t.group.as_str(), t.version.as_str(), t.resource.as_str()) {
            ("", "v1", "pods") => pods::handle(self, req, t, verb, q).await,
            ("", "v1", "nodes") => {
                crate::http::drain(req).await;
                discovery::nodes(&self, &t)
            }
            ("", "v1", "namespaces") => {
                crate::http::drain(req).await;
                discovery::namespace(&t)
            }
            ("", "v1", "serviceaccounts") if t.subresource.as_deref() == Some("token") => {
                discovery::token_request(&self, req, &t).await
            }
            ("authorization.k8s.io", "v1", "selfsubjectaccessreviews") => {
                discovery::self_review(&self, req, &who).await
            }
            (g, v, r) => match self.registry.resolve(g, v, r) {
                Some(kind) => objects::handle(self.clone(), req, t, verb, q, kind).await,
                None => {
                    crate::http::drain(req).await;
                    Err(ApiError::no_route())
                }
            },
        }
    }

    async fn non_resource(self: Arc<Self>, req: Req, path: &str) -> Result<Resp, ApiError> {
        match path.trim_end_matches('/') {
            "/argoexec/v1/requests" => {
                let q = Query::of(&req);
                let rows = self.counts.snapshot(q.get("pod"));
                Ok(crate::http::json(200, &json!({"requests": rows})))
            }
            "/argoexec/v1/compact" if req.method() == Method::POST => {
                let rv = self.store.compact();
                Ok(crate::http::json(200, &json!({"compactedAt": rv.to_string()})))
            }
            "/openapi/v2" => Ok(openapi::v2(&req)),
            p => {
                let accept = req
                    .headers()
                    .get(http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                crate::http::drain(req).await;
                discovery::non_resource(&self, p, &accept)
            }
        }
    }
}

/// The Kubernetes verb of a request.
fn verb_of(m: &Method, t: Option<&Target>, q: &Query) -> &'static str {
    let collection = t.is_some_and(|t| t.name.is_none());
    match *m {
        Method::GET | Method::HEAD if q.flag("watch") => "watch",
        Method::GET | Method::HEAD if collection => "list",
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if collection => "deletecollection",
        Method::DELETE => "delete",
        _ => "unknown",
    }
}

/// The RBAC `Forbidden` status in the API server's wording.
fn forbidden(who: &Subject, t: &Target, verb: &str) -> ApiError {
    let qualified = if t.group.is_empty() {
        t.resource.clone()
    } else {
        format!("{}.{}", t.resource, t.group)
    };
    let res = match &t.subresource {
        Some(s) => format!("{}/{s}", t.resource),
        None => t.resource.clone(),
    };
    let subject = match &t.name {
        Some(n) => format!("{qualified} \"{n}\" is forbidden"),
        None => format!("{qualified} is forbidden"),
    };
    let scope = match &t.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".into(),
    };
    let mut details = json!({"kind": t.resource});
    if let Some(n) = &t.name {
        details["name"] = json!(n);
    }
    if !t.group.is_empty() {
        details["group"] = json!(t.group);
    }
    ApiError::new(
        403,
        "Forbidden",
        format!(
            "{subject}: User \"{}\" cannot {verb} resource \"{res}\" in API group \"{}\" {scope}",
            who.user, t.group
        ),
    )
    .with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        let t = parse_target("/api/v1/namespaces/ns/pods/p/exec").unwrap();
        assert_eq!(
            (
                t.namespace.as_deref(),
                t.resource.as_str(),
                t.name.as_deref(),
                t.subresource.as_deref()
            ),
            (Some("ns"), "pods", Some("p"), Some("exec"))
        );
        let t = parse_target("/apis/argoproj.io/v1alpha1/namespaces/ns/workflowtaskresults").unwrap();
        assert_eq!(
            (t.group.as_str(), t.resource.as_str(), t.name),
            ("argoproj.io", "workflowtaskresults", None)
        );
        let t = parse_target("/api/v1/nodes/n").unwrap();
        assert_eq!((t.namespace, t.name.as_deref()), (None, Some("n")));
        let t = parse_target("/api/v1/namespaces/ns").unwrap();
        assert_eq!(
            (t.resource.as_str(), t.name.as_deref()),
            ("namespaces", Some("ns"))
        );
        assert!(parse_target("/api").is_none());
        assert!(parse_target("/version").is_none());
    }

    #[test]
    fn forbidden_messages_have_the_real_shape() {
        let who = Subject::service_account("default", "limited");
        let t = parse_target("/api/v1/namespaces/default/pods/x/exec").unwrap();
        let e = forbidden(&who, &t, "create");
        assert_eq!(
            e.message,
            "pods \"x\" is forbidden: User \"system:serviceaccount:default:limited\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\""
        );
        let t = parse_target("/apis/argoproj.io/v1alpha1/namespaces/wf/workflowtaskresults").unwrap();
        assert_eq!(
            forbidden(&who, &t, "create").message,
            "workflowtaskresults.argoproj.io is forbidden: User \"system:serviceaccount:default:limited\" cannot create resource \"workflowtaskresults\" in API group \"argoproj.io\" in the namespace \"wf\""
        );
    }
}
