//! [`FileServer`]: HTTP over a directory on 127.0.0.1 — `GET` (with single `Range`),
//! `HEAD`, `PUT` (streamed to a temp file, renamed into place when complete), `DELETE` —
//! with optional basic auth. It runs on its own thread and runtime; [`FileServer::stop`]
//! drops every connection at once (an outage mid-transfer).

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio::io::AsyncWriteExt;

/// A running file server.
#[derive(Debug)]
pub struct FileServer {
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    requests: Arc<AtomicUsize>,
}

struct State {
    root: PathBuf,
    auth: Option<String>,
    requests: Arc<AtomicUsize>,
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r
}

fn range_of(req: &Request<Incoming>, len: u64) -> Option<Result<(u64, u64), ()>> {
    let v = req.headers().get(http::header::RANGE)?.to_str().ok()?;
    let spec = v.strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let start: u64 = a.parse().ok()?;
    let end: u64 = if b.is_empty() {
        len.saturating_sub(1)
    } else {
        b.parse().ok()?
    };
    if start >= len {
        return Some(Err(()));
    }
    Some(Ok((start, end.min(len - 1))))
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    state.requests.fetch_add(1, Ordering::Relaxed);
    if let Some(want) = &state.auth {
        let got = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if got != Some(want.as_str()) {
            return Ok(reply(StatusCode::UNAUTHORIZED, "bad credentials"));
        }
    }
    let rel = req.uri().path().trim_start_matches('/').to_string();
    let rel = percent_decode(&rel);
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return Ok(reply(StatusCode::BAD_REQUEST, "bad path"));
    }
    let path = state.root.join(&rel);
    let method = req.method().clone();
    Ok(match method {
        http::Method::GET | http::Method::HEAD => match tokio::fs::read(&path).await {
            Err(_) => reply(StatusCode::NOT_FOUND, "no such file"),
            Ok(data) => {
                let len = data.len() as u64;
                let (status, body, range) = match range_of(&req, len) {
                    Some(Err(())) => return Ok(reply(StatusCode::RANGE_NOT_SATISFIABLE, "")),
                    Some(Ok((a, b))) => (
                        StatusCode::PARTIAL_CONTENT,
                        Bytes::from(data).slice(a as usize..=b as usize),
                        Some(format!("bytes {a}-{b}/{len}")),
                    ),
                    None => (StatusCode::OK, Bytes::from(data), None),
                };
                let n = body.len();
                let mut r = reply(
                    status,
                    if method == http::Method::HEAD {
                        Bytes::new()
                    } else {
                        body
                    },
                );
                r.headers_mut()
                    .insert(http::header::ACCEPT_RANGES, "bytes".parse().expect("static"));
                r.headers_mut().insert(http::header::CONTENT_LENGTH, n.into());
                if let Some(cr) = range {
                    r.headers_mut()
                        .insert(http::header::CONTENT_RANGE, cr.parse().expect("ascii"));
                }
                r
            }
        },
        http::Method::PUT => match put(&path, req.into_body()).await {
            Ok(()) => reply(StatusCode::CREATED, ""),
            Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
        http::Method::DELETE => match tokio::fs::remove_file(&path).await {
            Ok(()) => reply(StatusCode::NO_CONTENT, ""),
            Err(_) => reply(StatusCode::NOT_FOUND, ""),
        },
        _ => reply(StatusCode::METHOD_NOT_ALLOWED, ""),
    })
}

async fn put(path: &Path, mut body: Incoming) -> std::io::Result<()> {
    if let Some(p) = path.parent() {
        tokio::fs::create_dir_all(p).await?;
    }
    let tmp = path.with_extension("upload-partial");
    let mut f = tokio::fs::File::create(&tmp).await?;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(std::io::Error::other)?;
        if let Ok(data) = frame.into_data() {
            f.write_all(&data).await?;
        }
    }
    f.flush().await?;
    tokio::fs::rename(&tmp, path).await
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl FileServer {
    /// Serve `root`; with `basic = Some((user, password))` every request must carry it.
    pub fn start(root: &Path, basic: Option<(&str, &str)>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let state = Arc::new(State {
            root: root.to_path_buf(),
            auth: basic.map(|(u, p)| {
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
                )
            }),
            requests: requests.clone(),
        });
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
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
                            let state = state.clone();
                            tokio::spawn(async move {
                                let svc = hyper::service::service_fn(move |req| handle(state.clone(), req));
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                                    .await;
                            });
                        }
                    }
                }
            });
            rt.shutdown_background();
        });
        Self {
            port,
            stop: Some(tx),
            thread: Some(thread),
            requests,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    /// Stop listening and drop every open connection.
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop();
    }
}
