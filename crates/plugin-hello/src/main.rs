//! `argoexec-plugin-hello`: a small Argo executor plugin (the sidecar of the agent pod), for
//! the project's tests and as an example of the protocol the agent speaks (docs/agent.md).
//!
//! It serves `POST /api/v1/template.execute` on `0.0.0.0:<port>` (argument, default 4355):
//! the request must carry `Authorization: Bearer <token>` where the token is the content of
//! `/var/run/argo/token` (written by `argoexec agent init`, mounted through the sidecar's
//! `subPath`; `PLUGIN_TOKEN_FILE` moves it), else 403. A template whose `plugin` has the key
//! `hello` succeeds with `outputs.result` = `hello, <plugin.hello.text>`; any other template
//! is declined with `{}`, so the agent offers it to the next plugin. Other paths are 404.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};

/// The token file's default path.
const TOKEN_FILE: &str = "/var/run/argo/token";

fn reply(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// The answer to a template: a succeeded node for `hello`, `{}` otherwise.
fn answer(request: &Value) -> Value {
    match request.pointer("/template/plugin/hello") {
        Some(hello) => {
            let text = hello.get("text").and_then(Value::as_str).unwrap_or("world");
            json!({"node": {"phase": "Succeeded", "message": "", "outputs": {"result": format!("hello, {text}")}}})
        }
        None => json!({}),
    }
}

async fn handle(
    token_file: Arc<String>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::POST || req.uri().path() != "/api/v1/template.execute" {
        return Ok(reply(StatusCode::NOT_FOUND, "{}".into()));
    }
    let token = std::fs::read_to_string(token_file.as_str()).unwrap_or_default();
    let given = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if token.is_empty() || given != Some(token.as_str()) {
        return Ok(reply(StatusCode::FORBIDDEN, r#"{"error":"bad token"}"#.into()));
    }
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(reply(
                StatusCode::BAD_REQUEST,
                json!({"error": e.to_string()}).to_string(),
            ));
        }
    };
    match serde_json::from_slice::<Value>(&body) {
        Ok(v) => Ok(reply(StatusCode::OK, answer(&v).to_string())),
        Err(e) => Ok(reply(
            StatusCode::BAD_REQUEST,
            json!({"error": e.to_string()}).to_string(),
        )),
    }
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(4355);
    let token_file = Arc::new(std::env::var("PLUGIN_TOKEN_FILE").unwrap_or_else(|_| TOKEN_FILE.into()));
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("argoexec-plugin-hello: cannot start: {e}");
            std::process::exit(1);
        }
    };
    let served: std::io::Result<()> = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("0.0.0.0", port)).await?;
        eprintln!("argoexec-plugin-hello: listening on :{port}");
        loop {
            let (stream, _) = listener.accept().await?;
            let token_file = token_file.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| handle(token_file.clone(), req));
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
    if let Err(e) = served {
        eprintln!("argoexec-plugin-hello: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_is_answered_and_the_rest_declined() {
        let a = answer(&json!({"template": {"plugin": {"hello": {"text": "there"}}}}));
        assert_eq!(a["node"]["outputs"]["result"], "hello, there");
        assert_eq!(answer(&json!({"template": {"plugin": {"other": {}}}})), json!({}));
    }
}
