//! The HTTPS plumbing both endpoints share: a TLS listener serving HTTP/1.1 and HTTP/2
//! (with upgrades on HTTP/1.1), response builders, and query-string parsing with the
//! API machinery's rules (repeated keys, `Convert_Slice_string_To_bool`).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::status::{ApiError, KubeletError};

/// Response body type.
pub type Body = BoxBody<Bytes, std::io::Error>;
/// A request.
pub type Req = Request<Incoming>;
/// A response.
pub type Resp = Response<Body>;

/// A request handler (one per endpoint).
pub trait Handler: Send + Sync + 'static {
    /// Answer one request.
    fn handle(self: Arc<Self>, req: Req) -> Pin<Box<dyn Future<Output = Resp> + Send>>;
}

/// The TLS settings an endpoint serves with, swappable while it runs (a CA rotation):
/// every new connection takes the current one.
pub type TlsSwap = Arc<std::sync::RwLock<Arc<ServerConfig>>>;

/// Serve `handler` on `listener` with TLS until `shutdown` fires. A message on `restarts`
/// restarts the endpoint as a crashed server would: the listener and every connection are
/// dropped, and the same port is bound again after the given time.
pub async fn serve<H: Handler>(
    mut listener: TcpListener,
    tls: TlsSwap,
    handler: Arc<H>,
    shutdown: CancellationToken,
    mut restarts: tokio::sync::mpsc::UnboundedReceiver<std::time::Duration>,
) {
    let addr = listener.local_addr().ok();
    let mut generation = shutdown.child_token();
    loop {
        let (tcp, peer) = tokio::select! {
            () = shutdown.cancelled() => return,
            Some(down) = restarts.recv() => {
                let Some(addr) = addr else { continue };
                tracing::warn!(%addr, ?down, "fault: the endpoint goes down");
                generation.cancel();
                drop(listener);
                tokio::time::sleep(down).await;
                listener = loop {
                    match TcpListener::bind(addr).await {
                        Ok(l) => break l,
                        Err(e) => {
                            tracing::debug!(%addr, error = %e, "rebind");
                            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        }
                    }
                };
                generation = shutdown.child_token();
                tracing::warn!(%addr, "fault: the endpoint is back");
                continue;
            }
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        let config = tls.read().unwrap_or_else(|p| p.into_inner()).clone();
        let acceptor = TlsAcceptor::from(config);
        let handler = handler.clone();
        let stop = generation.clone();
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            let tls = tokio::select! {
                r = acceptor.accept(tcp) => match r {
                    Ok(t) => t,
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                },
                () = stop.cancelled() => return,
            };
            serve_conn(tls, peer, handler, stop).await;
        });
    }
}

async fn serve_conn<H: Handler>(
    tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    peer: SocketAddr,
    handler: Arc<H>,
    shutdown: CancellationToken,
) {
    let svc = hyper::service::service_fn(move |req: Req| {
        let h = handler.clone();
        async move { Ok::<_, Infallible>(h.handle(req).await) }
    });
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), svc);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        }
        () = shutdown.cancelled() => {}
    }
}

/// A complete body.
pub fn full(status: u16, content_type: &str, body: impl Into<Bytes>) -> Resp {
    let body = Full::new(body.into()).map_err(|never| match never {}).boxed();
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// A JSON body.
pub fn json(status: u16, v: &serde_json::Value) -> Resp {
    full(
        status,
        "application/json",
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

/// A `metav1.Status` error response.
pub fn api_error(e: &ApiError) -> Resp {
    let mut r = full(e.code, "application/json", e.to_bytes());
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A kubelet plain-text error response.
pub fn kubelet_error(e: &KubeletError) -> Resp {
    full(e.code, "text/plain; charset=utf-8", e.text.clone())
}

/// A streamed body (chunked), flushed per item.
pub fn streaming<S>(status: u16, content_type: &str, s: S) -> Resp
where
    S: Stream<Item = Result<Bytes, std::io::Error>> + Send + Sync + 'static,
{
    use futures::StreamExt;
    let body = BodyExt::boxed(StreamBody::new(s.map(|r| r.map(Frame::data))));
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// Read a whole request body, refusing more than `limit` bytes.
///
/// # Errors
/// 413 when too large, 400 when the body cannot be read.
pub async fn read_body(req: Req, limit: usize) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(req.into_body(), limit);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(ApiError::request_too_large(limit))
        }
        Err(e) => Err(ApiError::bad_request(format!("read request body: {e}"))),
    }
}

/// Read and drop what is left of a request body (bounded), so that an HTTP/1.1
/// connection stays reusable after an early error answer: hyper closes a connection whose
/// request body was not read, and a client that already sent its next request on it sees
/// "connection closed without response". A client may hold its body back until it sees
/// whether the server answers early (`Expect`-style); the wait is as long as the API
/// server's request-header timeout (30 s) rather than a few seconds, so such a client is
/// never cut off at the moment it sends (the conformance test holds its body for 5 s).
pub async fn drain(req: Req) {
    let body = http_body_util::Limited::new(req.into_body(), 3 * 1024 * 1024);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, body.collect()).await;
}

/// How long [`drain`] waits for the rest of a request body.
pub const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A decoded query string.
#[derive(Debug, Default, Clone)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Parse the request's query.
    pub fn of(req: &Req) -> Self {
        Self::from_uri(req.uri())
    }

    /// Parse a URI's query.
    pub fn from_uri(uri: &http::Uri) -> Self {
        let q = uri.query().unwrap_or("");
        Self(form_urlencoded::parse(q.as_bytes()).into_owned().collect())
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order.
    pub fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// A boolean with the API machinery's rule: present and not `0`/`false` is true.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| !v.eq_ignore_ascii_case("false") && v != "0")
    }

    /// An integer parameter.
    ///
    /// # Errors
    /// The parameter's name when it is not a number.
    pub fn int(&self, key: &str) -> Result<Option<i64>, String> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| key.to_string()),
        }
    }
}

/// Whether the request asks for a WebSocket upgrade.
pub fn is_websocket(req: &Req) -> bool {
    let h = req.headers();
    let has = |name: header::HeaderName, want: &str| {
        h.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|s| s.split(',').any(|p| p.trim().eq_ignore_ascii_case(want)))
        })
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}
