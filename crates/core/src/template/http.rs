//! HTTP templates (`template.http`, Argo v3.2+), run by the agent pod's `argoexec agent main`
//! rather than in a pod of their own. Field names as Argo's `workflow_types.go` (`HTTP`,
//! `HTTPHeader`, `HTTPHeaderSource`, `HTTPBodySource`); `bodyFrom.bytes` is a Go `[]byte`,
//! so base64 in JSON.

use serde::{Deserialize, Serialize};

use super::Extra;

/// `template.http`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpTemplate {
    /// The request method (`GET` when empty, as Go's `http.NewRequest` takes it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub method: String,
    /// The URL to call.
    #[serde(default)]
    pub url: String,
    /// Request headers, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HttpRequestHeader>,
    /// The request deadline in seconds (Argo's client default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// An expression over `request` and `response` deciding success (2xx when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub success_condition: String,
    /// The request body as text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// The request body as bytes (takes the place of `body`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_from: Option<HttpBodySource>,
    /// Skip TLS verification of the server.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_verify: bool,
    /// Everything else, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One request header: a literal value or one read from a Secret.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpRequestHeader {
    /// The header name.
    #[serde(default)]
    pub name: String,
    /// The literal value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Where the value comes from instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<HttpHeaderSource>,
}

/// `headers[].valueFrom`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpHeaderSource {
    /// A key of a Secret in the workflow's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
}

/// A Kubernetes `SecretKeySelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// The Secret's name.
    #[serde(default)]
    pub name: String,
    /// The key in its data.
    #[serde(default)]
    pub key: String,
    /// Whether a missing Secret or key is allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// `bodyFrom`: the body as bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpBodySource {
    /// The bytes (base64 in JSON, as Go encodes a `[]byte`).
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub bytes: Vec<u8>,
}

impl HttpTemplate {
    /// The body to send: `bodyFrom.bytes` when given, else `body`.
    pub fn body_bytes(&self) -> Vec<u8> {
        match &self.body_from {
            Some(b) => b.bytes.clone(),
            None => self.body.as_bytes().to_vec(),
        }
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_argos_http_template_and_round_trips() {
        let text = r#"{"method":"POST","url":"https://example.com/x","timeoutSeconds":20,
            "headers":[{"name":"X-A","value":"1"},
                       {"name":"Authorization","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],
            "successCondition":"response.statusCode == 201","bodyFrom":{"bytes":"aGk="},
            "insecureSkipVerify":true}"#;
        let h: HttpTemplate = serde_json::from_str(text).unwrap();
        assert_eq!(h.method, "POST");
        assert_eq!(h.timeout_seconds, Some(20));
        assert_eq!(h.body_bytes(), b"hi");
        let r = h.headers[1]
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!((r.name.as_str(), r.key.as_str()), ("s", "k"));
        assert!(h.insecure_skip_verify);
        let back: HttpTemplate = serde_json::from_value(serde_json::to_value(&h).unwrap()).unwrap();
        assert_eq!(back, h);
        assert_eq!(serde_json::to_value(&h).unwrap()["bodyFrom"]["bytes"], "aGk=");
    }

    #[test]
    fn body_is_the_text_without_body_from() {
        let h: HttpTemplate = serde_json::from_str(r#"{"url":"http://x","body":"{}"}"#).unwrap();
        assert_eq!(h.body_bytes(), b"{}");
        assert_eq!(h.method, "");
        assert!(serde_json::from_str::<HttpTemplate>(r#"{"bodyFrom":{"bytes":"%%"}}"#).is_err());
    }
}
