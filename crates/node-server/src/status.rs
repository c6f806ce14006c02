//! `metav1.Status` error bodies of the API server (k8s-wire-protocols §2.8) and the
//! plain-text errors of the kubelet (§1.4–1.7), as values a handler returns.

use std::borrow::Cow;

use serde_json::{Value, json};

/// An API-server error: becomes a `metav1.Status` JSON body with the same code.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code (and `code` in the body).
    pub code: u16,
    /// `reason`, e.g. `NotFound`.
    pub reason: &'static str,
    /// `message`.
    pub message: String,
    /// `details`, when there are any.
    pub details: Option<Value>,
    /// `Retry-After` seconds (429).
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// A bare error with a code, reason and message.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// Attach `details` (`name`, `group`, `kind`, …).
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// 400 `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 `Unauthorized`.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 404 `NotFound` for an object: `<resource> "<name>" not found`.
    pub fn not_found(resource: &Resource, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", resource.qualified()),
        )
        .with_details(resource.details(name))
    }

    /// 404 for a path the server does not serve.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// 405 `MethodNotAllowed`.
    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
    }

    /// 409 `AlreadyExists`.
    pub fn already_exists(resource: &Resource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", resource.qualified()),
        )
        .with_details(resource.details(name))
    }

    /// 409 `Conflict` on a stale `resourceVersion`.
    pub fn conflict(resource: &Resource, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                resource.qualified()
            ),
        )
        .with_details(resource.details(name))
    }

    /// 410 `Expired` for a too-old resource version.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 415 `UnsupportedMediaType`.
    pub fn unsupported_media(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 422 `Invalid` with one cause.
    pub fn invalid(resource: &Resource, name: &str, field: &str, detail: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!(
                "{} \"{name}\" is invalid: {field}: {detail}",
                resource.kind_name()
            ),
        )
        .with_details(json!({
            "name": name,
            "group": resource.group,
            "kind": resource.kind,
            "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}],
        }))
    }

    /// 413 `RequestEntityTooLarge` for a request body over `limit` bytes, in the API
    /// server's words (its limit is 3 MiB).
    pub fn request_too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// What the API server answers when etcd refuses an object over its 1.5 MiB request
    /// limit: etcd's error passed through as a 500 without a reason.
    pub fn object_too_large() -> Self {
        Self::new(500, "", "etcdserver: request is too large")
    }

    /// 500 `InternalError`.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        let err = err.to_string();
        Self::new(500, "InternalError", format!("Internal error occurred: {err}"))
            .with_details(json!({"causes": [{"message": err}]}))
    }

    /// The `metav1.Status` body, fields in the API server's order.
    pub fn body(&self) -> Value {
        serde_json::to_value(self.wire()).unwrap_or(Value::Null)
    }

    /// The body's bytes, fields in the API server's order
    /// (`kind, apiVersion, metadata, status, message, reason, details, code`).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.wire()).unwrap_or_default()
    }

    fn wire(&self) -> WireStatus<'_> {
        WireStatus {
            kind: "Status",
            api_version: "v1",
            metadata: Empty {},
            status: "Failure",
            message: &self.message,
            reason: self.reason,
            details: self.details.as_ref(),
            code: self.code,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct WireStatus<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: Empty,
    status: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Value>,
    code: u16,
}

#[derive(serde::Serialize)]
struct Empty {}

/// A resource kind as errors name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    /// API group (`""` for core).
    pub group: Cow<'static, str>,
    /// Plural resource name, e.g. `pods`.
    pub plural: Cow<'static, str>,
    /// Kind, e.g. `Pod`.
    pub kind: Cow<'static, str>,
}

impl Resource {
    /// A resource known at compile time.
    pub const fn of(group: &'static str, plural: &'static str, kind: &'static str) -> Self {
        Self {
            group: Cow::Borrowed(group),
            plural: Cow::Borrowed(plural),
            kind: Cow::Borrowed(kind),
        }
    }

    /// A resource defined at run time (a custom resource).
    pub fn owned(group: &str, plural: &str, kind: &str) -> Self {
        Self {
            group: Cow::Owned(group.to_string()),
            plural: Cow::Owned(plural.to_string()),
            kind: Cow::Owned(kind.to_string()),
        }
    }

    /// `pods` or `workflowtaskresults.argoproj.io`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Pod` or `WorkflowTaskResult.argoproj.io` (used by `Invalid`).
    pub fn kind_name(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// `details` naming one object.
    pub fn details(&self, name: &str) -> Value {
        let mut d = json!({"name": name});
        if !self.group.is_empty() {
            d["group"] = json!(self.group);
        }
        d["kind"] = json!(self.plural);
        d
    }
}

/// Core `pods`.
pub const PODS: Resource = Resource::of("", "pods", "Pod");

/// Argo's `workflowtaskresults.argoproj.io`.
pub const TASK_RESULTS: Resource = Resource::of("argoproj.io", "workflowtaskresults", "WorkflowTaskResult");

/// Core `configmaps`.
pub const CONFIG_MAPS: Resource = Resource::of("", "configmaps", "ConfigMap");

/// Core `secrets`.
pub const SECRETS: Resource = Resource::of("", "secrets", "Secret");

/// Core `nodes`.
pub const NODES: Resource = Resource::of("", "nodes", "Node");

/// A kubelet error: a plain-text body (go-restful), never Status JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletError {
    /// HTTP status.
    pub code: u16,
    /// Body text.
    pub text: String,
}

impl KubeletError {
    /// An error with a code and text.
    pub fn new(code: u16, text: impl Into<String>) -> Self {
        Self {
            code,
            text: text.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_shape_has_fields_in_order_and_code_last() {
        let e = ApiError::not_found(&PODS, "p");
        let s = String::from_utf8(e.to_bytes()).unwrap();
        assert_eq!(
            s,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"p\" not found","reason":"NotFound","details":{"kind":"pods","name":"p"},"code":404}"#
        );
    }

    #[test]
    fn custom_resources_are_qualified_by_group() {
        let e = ApiError::already_exists(&TASK_RESULTS, "n1");
        assert_eq!(e.message, "workflowtaskresults.argoproj.io \"n1\" already exists");
        assert_eq!(e.body()["details"]["group"], "argoproj.io");
    }
}
