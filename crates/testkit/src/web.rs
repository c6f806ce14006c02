//! [`WebServer`]: a scripted HTTP or HTTPS server on 127.0.0.1 for the agent's HTTP tasks and
//! plugin calls. HTTPS uses a certificate for `127.0.0.1` and `localhost` signed by a fresh
//! CA of its own ([`WebServer::ca_pem`]). Routes:
//!
//! - `/status/<code>`: that status, body `status <code>`;
//! - `/echo`: 200 and JSON `{method, path, headers: {lower-case name: value}, body}`;
//! - `/slow/<ms>`: 200 `slow` after that many milliseconds;
//! - `/redirect/<n>`: 302 to `/redirect/<n-1>`, and `/redirect/0` to `/echo`;
//! - `/big/<n>`: 200 with n bytes of `x`;
//! - `/plugin/<behaviour>/api/v1/template.execute`: an executor plugin. `mine` answers a
//!   succeeded node whose result is `<bearer token>|<workflow name>|<template name>`;
//!   `decline` answers `{}`; `busy` answers 503 `busy`; `gone` 404; `requeue` a running
//!   node with `requeue: 200ms` on the first call and a succeeded one after.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};

/// A running server.
#[derive(Debug)]
pub struct WebServer {
    base: String,
    ca_pem: Option<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    requests: AtomicUsize,
    calls: Mutex<HashMap<String, usize>>,
}

fn reply(status: u16, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let path = parts.uri.path().to_string();
    let seg: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let r = match seg.as_slice() {
        ["status", code] => {
            let code: u16 = code.parse().unwrap_or(500);
            reply(code, format!("status {code}"))
        }
        ["echo"] => {
            let headers: serde_json::Map<String, Value> = parts
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_string(),
                        json!(String::from_utf8_lossy(v.as_bytes())),
                    )
                })
                .collect();
            let mut r = reply(
                200,
                json!({"method": parts.method.as_str(), "path": path, "headers": headers,
                       "body": String::from_utf8_lossy(&body)})
                .to_string(),
            );
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            r
        }
        ["slow", ms] => {
            tokio::time::sleep(Duration::from_millis(ms.parse().unwrap_or(0))).await;
            reply(200, "slow")
        }
        ["redirect", n] => {
            let n: u32 = n.parse().unwrap_or(0);
            let to = if n == 0 {
                "/echo".to_string()
            } else {
                format!("/redirect/{}", n - 1)
            };
            let mut r = reply(302, "");
            r.headers_mut().insert(
                http::header::LOCATION,
                http::HeaderValue::from_str(&to).expect("ascii"),
            );
            r
        }
        ["big", n] => reply(200, vec![b'x'; n.parse().unwrap_or(0)]),
        ["plugin", behaviour, "api", "v1", "template.execute"] => {
            let calls = {
                let mut c = state.calls.lock().expect("lock");
                let n = c.entry((*behaviour).to_string()).or_default();
                *n += 1;
                *n
            };
            plugin(behaviour, calls, &header("authorization"), &body)
        }
        _ => reply(404, "no such route"),
    };
    Ok(r)
}

fn plugin(behaviour: &str, calls: usize, auth: &str, body: &[u8]) -> Response<Full<Bytes>> {
    let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let token = auth.strip_prefix("Bearer ").unwrap_or("");
    let wf = req
        .pointer("/workflow/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let tmpl = req
        .pointer("/template/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let done = json!({"node": {"phase": "Succeeded", "outputs": {"result": format!("{token}|{wf}|{tmpl}")}}});
    match behaviour {
        "mine" => reply(200, done.to_string()),
        "decline" => reply(200, "{}"),
        "busy" => reply(503, "busy"),
        "gone" => reply(404, "404 page not found"),
        "requeue" if calls == 1 => reply(
            200,
            json!({"node": {"phase": "Running", "message": "working"}, "requeue": "200ms"}).to_string(),
        ),
        "requeue" => reply(200, done.to_string()),
        _ => reply(500, format!("unknown behaviour {behaviour}")),
    }
}

impl WebServer {
    /// Plain HTTP.
    pub fn http() -> Self {
        Self::start(false)
    }

    /// HTTPS with a self-signed certificate.
    pub fn https() -> Self {
        Self::start(true)
    }

    fn start(tls: bool) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let (acceptor, ca_pem) = if tls {
            let (a, pem) = self_signed();
            (Some(a), Some(pem))
        } else {
            (None, None)
        };
        let state = Arc::new(State::default());
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let st = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        Ok((stream, _)) = listener.accept() => {
                            let (st, acceptor) = (st.clone(), acceptor.clone());
                            tokio::spawn(async move {
                                let svc = hyper::service::service_fn(move |req| handle(st.clone(), req));
                                let builder = hyper::server::conn::http1::Builder::new();
                                match acceptor {
                                    Some(a) => {
                                        if let Ok(s) = a.accept(stream).await {
                                            let _ = builder.serve_connection(hyper_util::rt::TokioIo::new(s), svc).await;
                                        }
                                    }
                                    None => {
                                        let _ = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), svc).await;
                                    }
                                }
                            });
                        }
                    }
                }
            });
            rt.shutdown_background();
        });
        let scheme = if tls { "https" } else { "http" };
        Self {
            base: format!("{scheme}://127.0.0.1:{port}"),
            ca_pem,
            stop: Some(tx),
            thread: Some(thread),
            state,
        }
    }

    /// `http(s)://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// The PEM of the CA that signed an HTTPS server's certificate.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// Calls of the plugin `behaviour` so far.
    pub fn plugin_calls(&self, behaviour: &str) -> usize {
        self.state
            .calls
            .lock()
            .expect("lock")
            .get(behaviour)
            .copied()
            .unwrap_or(0)
    }
}

/// A fresh CA (its PEM returned) and a server certificate it signed for 127.0.0.1 and
/// localhost.
fn self_signed() -> (tokio_rustls::TlsAcceptor, String) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "argoexec-rs test CA");
    let ca_pem = ca.self_signed(&ca_key).expect("self-signed").pem();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("signed");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .expect("server config");
    (tokio_rustls::TlsAcceptor::from(Arc::new(cfg)), ca_pem)
}

impl Drop for WebServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
