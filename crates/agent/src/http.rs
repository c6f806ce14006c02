//! HTTP tasks (`template.http`), as Argo's `executeHTTPTemplate` runs them (contract §1.4;
//! behaviour read from Argo v4.1.2 `workflow/executor/agent.go`):
//!
//! - the method as given (empty is GET), headers in order, literal or read from a Secret of
//!   the workflow's namespace, the body from `bodyFrom.bytes` or `body`;
//! - `timeoutSeconds` bounds everything (secret reads, connecting, the request and reading
//!   the body); absent means no bound, as Argo's code (its docs promise 30 s; the code,
//!   which users depend on for long calls, wins);
//! - redirects followed as Go's client does (its 10th ends the call with `stopped after 10
//!   redirects`), 301/302/303 as GET, credentials dropped across hosts;
//! - TLS verified against the system roots plus every PEM file of the agent's CA directory
//!   (Argo mounts `argo-workflows-agent-ca-certificates` there but Go never reads a
//!   sub-directory of `/etc/ssl/certs`; here the mount works), unless `insecureSkipVerify`;
//! - success is a 2xx status, or `successCondition` over `request` and `response`; the body
//!   is `outputs.result` either way. Every failure is phase `Failed` with Argo's wording;
//!   the agent never retries an HTTP call.
//!
//! Beyond Argo: a body over [`crate::AgentConfig::max_body`] fails the node with a message
//! naming the limit instead of being kept whole (Argo's whole body would then fail the status
//! patch of every result); the response is not gzip-negotiated, so `response.headers` keeps
//! the server's `Content-Length`. Known differences: a `Host` header is sent as given, also
//! after a redirect to another host (Go keeps it only for relative redirects), and one
//! merge patch may still exceed the API's object limit when several large bodies finish in
//! the same patch period (then every result of that patch becomes an `Error` node, as Argo).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use argoexec_core::task_set::{NodeResult, phase};
use argoexec_core::template::{HttpRequestHeader, HttpTemplate, Outputs};
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Map, Value, json};

/// Why an HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A CA file could not be read.
    #[error("cannot read CA certificates from {path}")]
    Ca {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A CA file is not PEM certificates.
    #[error("{path} holds no PEM certificate the agent can use")]
    CaPem {
        /// The file.
        path: std::path::PathBuf,
        /// The parser's error.
        #[source]
        source: reqwest::Error,
    },
    /// reqwest refused the configuration.
    #[error("cannot build the HTTP client")]
    Build(#[source] reqwest::Error),
}

/// Runs HTTP tasks.
#[derive(Clone)]
pub struct HttpRunner {
    verified: reqwest::Client,
    insecure: reqwest::Client,
    secrets: kube::Api<Secret>,
    max_body: usize,
}

impl std::fmt::Debug for HttpRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRunner")
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

/// Every certificate of every regular file in `dir` (none when it does not exist).
///
/// # Errors
/// [`ClientError::Ca`] or [`ClientError::CaPem`] naming the file.
pub fn extra_roots(dir: &Path) -> Result<Vec<reqwest::Certificate>, ClientError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    let mut certs = Vec::new();
    for path in files {
        // Secret volumes hold `..data` links and dot-directories beside the keys.
        if !path.is_file()
            || path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        let pem = std::fs::read(&path).map_err(|source| ClientError::Ca {
            path: path.clone(),
            source,
        })?;
        certs.extend(
            reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|source| ClientError::CaPem { path, source })?,
        );
    }
    Ok(certs)
}

impl HttpRunner {
    /// Clients for verified and unverified TLS, secrets read from `secrets` (the workflow's
    /// namespace), bodies up to `max_body` bytes, extra roots from `ca_dir`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn new(secrets: kube::Api<Secret>, max_body: usize, ca_dir: &Path) -> Result<Self, ClientError> {
        let roots = extra_roots(ca_dir)?;
        if !roots.is_empty() {
            tracing::info!(certificates = roots.len(), dir = %ca_dir.display(), "extra CA certificates trusted");
        }
        let base = || {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(30))
                .user_agent(concat!("argoexec-rs/", env!("CARGO_PKG_VERSION"), " agent"))
                // Go's client: header names as `X-Foo` on HTTP/1.1, and its redirect limit.
                .http1_title_case_headers()
                .redirect(reqwest::redirect::Policy::custom(|attempt| {
                    if attempt.previous().len() >= 10 {
                        attempt.error("stopped after 10 redirects")
                    } else {
                        attempt.follow()
                    }
                }))
        };
        let verified = base()
            .tls_certs_merge(roots)
            .build()
            .map_err(ClientError::Build)?;
        // As Go's bare transport for insecureSkipVerify: no proxy from the environment, HTTP/1.1.
        let insecure = base()
            .tls_danger_accept_invalid_certs(true)
            .tls_danger_accept_invalid_hostnames(true)
            .no_proxy()
            .http1_only()
            .build()
            .map_err(ClientError::Build)?;
        Ok(Self {
            verified,
            insecure,
            secrets,
            max_body,
        })
    }

    /// Run one task; its result (never an error: a failure is a `Failed` node).
    pub async fn execute(&self, h: &HttpTemplate) -> NodeResult {
        let call = self.call(h);
        let answer = match h.timeout_seconds {
            Some(s) => tokio::time::timeout(Duration::from_secs(s.max(0).unsigned_abs()), call)
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "{}: context deadline exceeded (timeoutSeconds: {s})",
                        h.target()
                    ))
                }),
            None => call.await,
        };
        match answer {
            Ok(resp) => judge(h, resp),
            Err(message) => failed(message, None),
        }
    }

    async fn call(&self, h: &HttpTemplate) -> Result<Answer, String> {
        let method = if h.method.is_empty() {
            "GET"
        } else {
            h.method.as_str()
        };
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| format!("net/http: invalid method {:?}", h.method))?;
        let client = if h.insecure_skip_verify {
            &self.insecure
        } else {
            &self.verified
        };
        let mut req = client.request(method, &h.url);
        for hd in &h.headers {
            req = req.header(&hd.name, self.header_value(hd).await?);
        }
        let body = h.body_bytes();
        if !body.is_empty() {
            req = req.body(body);
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| format!("{}: {}", h.target(), chain(&e)))?;
        let status = resp.status().as_u16();
        let headers = canonical_headers(resp.headers());
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("{}: reading the response body: {}", h.target(), chain(&e)))?
        {
            if body.len() + chunk.len() > self.max_body {
                return Err(format!(
                    "{}: the response body is larger than {} bytes, the agent's limit (ARGOEXEC_AGENT_MAX_BODY_BYTES)",
                    h.target(),
                    self.max_body
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    async fn header_value(&self, hd: &HttpRequestHeader) -> Result<String, String> {
        let Some(r) = hd.value_from.as_ref().and_then(|v| v.secret_key_ref.as_ref()) else {
            return Ok(hd.value.clone());
        };
        let secret = argoexec_kube::retry::retry(&SECRET_BACKOFF, || self.secrets.get(&r.name))
            .await
            .map_err(|e| match e {
                kube::Error::Api(s) => s.message,
                other => chain(&other),
            })?;
        let bytes = secret
            .data
            .as_ref()
            .and_then(|d| d.get(&r.key))
            .map(|b| b.0.clone())
            .or_else(|| {
                secret
                    .string_data
                    .as_ref()?
                    .get(&r.key)
                    .map(|s| s.clone().into_bytes())
            })
            .ok_or_else(|| format!("secret '{}' does not have the key '{}'", r.name, r.key))?;
        String::from_utf8(bytes).map_err(|_| format!("secret '{}' key '{}' is not UTF-8 text", r.name, r.key))
    }
}

/// Argo's `RETRY_BACKOFF_*` defaults for secret reads: 5 steps from 10 ms, ×2.
const SECRET_BACKOFF: argoexec_kube::retry::Backoff = argoexec_kube::retry::Backoff {
    steps: 5,
    first: Duration::from_millis(10),
    factor: 2.0,
    jitter: 0.1,
    cap: Duration::from_secs(30),
};

/// What came back.
struct Answer {
    status: u16,
    headers: BTreeMap<String, Vec<String>>,
    body: Vec<u8>,
}

trait Target {
    /// `Get "url"`, as Go's `url.Error` names a request.
    fn target(&self) -> String;
}

impl Target for HttpTemplate {
    fn target(&self) -> String {
        let m = if self.method.is_empty() {
            "GET"
        } else {
            self.method.as_str()
        };
        let mut cased = m.to_ascii_lowercase();
        if let Some(first) = cased.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        format!("{cased} {:?}", self.url)
    }
}

fn failed(message: String, outputs: Option<Outputs>) -> NodeResult {
    NodeResult {
        phase: phase::FAILED.into(),
        message,
        outputs,
        ..NodeResult::default()
    }
}

/// Success or failure of a completed call, with the body as `outputs.result`.
fn judge(h: &HttpTemplate, a: Answer) -> NodeResult {
    let body = String::from_utf8_lossy(&a.body).into_owned();
    let outputs = Some(Outputs {
        result: Some(body.clone()),
        ..Outputs::default()
    });
    let ok = |outputs| NodeResult {
        phase: phase::SUCCEEDED.into(),
        outputs,
        ..NodeResult::default()
    };
    if h.success_condition.is_empty() {
        return if (200..300).contains(&a.status) {
            ok(outputs)
        } else {
            failed(format!("received non-2xx response code: {}", a.status), outputs)
        };
    }
    let cond = &h.success_condition;
    match argoexec_expr::eval(cond, &scope(h, &a, body)) {
        Ok(Value::Bool(true)) => ok(outputs),
        Ok(Value::Bool(false)) => failed(format!("successCondition '{cond}' evaluated false"), outputs),
        Ok(other) => failed(
            format!("unable to cast expression result '{other}' to bool"),
            outputs,
        ),
        Err(e @ argoexec_expr::ExprError::Compile { .. }) => failed(chain(&e), None),
        Err(e) => failed(
            format!("unable to evaluate expression '{cond}': {}", chain(&e)),
            outputs,
        ),
    }
}

/// The condition's variables: `request.{method,url,body,bodyBytes,headers}` (literal headers
/// only, as Argo: secret values stay out of expressions) and
/// `response.{statusCode,body,headers}` (canonical names → values).
fn scope(h: &HttpTemplate, a: &Answer, body: String) -> Map<String, Value> {
    let literal: Map<String, Value> = h
        .headers
        .iter()
        .filter(|hd| hd.value_from.is_none())
        .map(|hd| (hd.name.clone(), json!([hd.value])))
        .collect();
    let body_bytes = h.body_from.as_ref().map_or(Value::Null, |b| {
        Value::Array(b.bytes.iter().map(|x| json!(x)).collect())
    });
    let mut env = Map::new();
    env.insert(
        "request".into(),
        json!({"method": h.method, "url": h.url, "body": h.body, "bodyBytes": body_bytes, "headers": literal}),
    );
    env.insert(
        "response".into(),
        json!({"statusCode": a.status, "body": body, "headers": a.headers}),
    );
    env
}

/// Header names as Go's `CanonicalMIMEHeaderKey` writes them (`content-type` →
/// `Content-Type`), each with its values in order.
pub fn canonical_headers(h: &reqwest::header::HeaderMap) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in h {
        out.entry(canonical_key(name.as_str()))
            .or_default()
            .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
    }
    out
}

/// `x-request-id` → `X-Request-Id`.
pub fn canonical_key(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

/// An error and its sources on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    argoexec_kube::chain(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpl(v: Value) -> HttpTemplate {
        serde_json::from_value(v).unwrap()
    }

    fn answer(status: u16, body: &str) -> Answer {
        let mut headers = BTreeMap::new();
        headers.insert("Content-Type".to_string(), vec!["text/plain".to_string()]);
        Answer {
            status,
            headers,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn canonical_header_keys() {
        assert_eq!(canonical_key("content-type"), "Content-Type");
        assert_eq!(canonical_key("x-REQUEST-id"), "X-Request-Id");
    }

    #[test]
    fn status_rule_without_a_condition() {
        let h = tmpl(json!({"url": "http://x"}));
        let r = judge(&h, answer(204, ""));
        assert_eq!(r.phase, "Succeeded");
        assert_eq!(
            r.outputs.unwrap().result.as_deref(),
            Some(""),
            "an empty body is still a result"
        );
        let r = judge(&h, answer(404, "nope"));
        assert_eq!(
            (r.phase.as_str(), r.message.as_str()),
            ("Failed", "received non-2xx response code: 404")
        );
        assert_eq!(r.outputs.unwrap().result.as_deref(), Some("nope"));
    }

    #[test]
    fn conditions_over_request_and_response() {
        let cond = |c: &str| {
            tmpl(
                json!({"url": "http://x", "method": "POST", "body": "hi", "successCondition": c,
                "headers": [{"name": "X-A", "value": "1"},
                            {"name": "X-S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}),
            )
        };
        let met = r#"response.statusCode == 404 && response.body == "nope" && request.method == "POST"
            && request.body == "hi" && request.headers["X-A"][0] == "1"
            && response.headers["Content-Type"][0] == "text/plain""#;
        assert_eq!(judge(&cond(met), answer(404, "nope")).phase, "Succeeded");
        let r = judge(&cond("response.statusCode == 200"), answer(404, "nope"));
        assert_eq!(
            r.message,
            "successCondition 'response.statusCode == 200' evaluated false"
        );
        let r = judge(&cond("response.statusCode"), answer(200, ""));
        assert_eq!(r.message, "unable to cast expression result '200' to bool");
        let r = judge(&cond("'X-S' in request.headers"), answer(200, ""));
        assert_eq!(
            r.message, "successCondition ''X-S' in request.headers' evaluated false",
            "secrets stay out"
        );
        let r = judge(&cond("response.statusCode =="), answer(200, ""));
        assert_eq!(r.phase, "Failed");
        assert!(
            r.outputs.is_none(),
            "a condition that does not compile gives no outputs"
        );
    }

    #[test]
    fn targets_name_the_method_as_go_does() {
        assert_eq!(tmpl(json!({"url": "http://x"})).target(), "Get \"http://x\"");
        assert_eq!(tmpl(json!({"url": "u", "method": "POST"})).target(), "Post \"u\"");
    }
}
