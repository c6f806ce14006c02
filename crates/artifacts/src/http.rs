//! The HTTP(S) driver, for Argo's `http` and `artifactory` locations: `GET` to load (with
//! parallel `Range` requests when the server supports them), `PUT` to save (a directory:
//! one `PUT` per file under `<url>/<path>`), `HEAD` for existence. No delete and no
//! `list_objects`, as Argo v4.1.2 (whose HTTP driver serves both kinds and answers
//! `ErrDeleteNotSupported`, argoproj/argo-workflows#3102): both are
//! [`ArtifactError::Unsupported`], so artifact GC reports the artifact as not deleted.
//!
//! Headers from the location are sent with every request; basic auth (`auth.basicAuth`,
//! or Artifactory's `usernameSecret`/`passwordSecret`) comes from the mounted secrets.
//! `oauth2` and `clientCert` are refused with a clear error rather than sent
//! unauthenticated. TLS is verified against the system roots. A URL's query string (often a
//! signature) is never logged. 5xx, 429 and connection failures are retried with backoff;
//! a streamed `PUT` (tar.gz produced on the fly) cannot be replayed and is not retried.
//! HTTP has no listing: `list` answers `[""]` for an existing URL.

use std::path::Path;
use std::sync::Arc;

use argoexec_core::template::{ArtifactoryArtifact, HttpArtifact, SecretKeySelector};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use reqwest::{StatusCode, header};

use crate::store::download::{self, RangeSource};
use crate::{ArtifactDriver, ArtifactError, ByteStream, Loaded, Opened, Progress, Settings};

/// One HTTP artifact URL.
#[derive(Debug, Clone)]
pub struct HttpDriver {
    kind: &'static str,
    client: reqwest::Client,
    url: String,
    label: String,
    headers: header::HeaderMap,
    basic: Option<(String, String)>,
    settings: Arc<Settings>,
}

/// The URL without its query string and user info, for logs and errors.
pub fn redact(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, _)) => (b, "?…"),
        None => (url, ""),
    };
    let Some((scheme, rest)) = base.split_once("://") else {
        return format!("{base}{query}");
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let userinfo = if host.len() == authority.len() { "" } else { "…@" };
    format!("{scheme}://{userinfo}{host}{path}{query}")
}

fn basic(
    settings: &Settings,
    user: Option<&SecretKeySelector>,
    pass: Option<&SecretKeySelector>,
) -> Result<Option<(String, String)>, ArtifactError> {
    match (user, pass) {
        (None, None) => Ok(None),
        (u, p) => Ok(Some((
            u.map(|s| settings.credential(s)).transpose()?.unwrap_or_default(),
            p.map(|s| settings.credential(s)).transpose()?.unwrap_or_default(),
        ))),
    }
}

fn client(kind: &'static str) -> Result<reqwest::Client, ArtifactError> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .read_timeout(std::time::Duration::from_secs(120))
        .build()
        .map_err(|e| ArtifactError::config(kind, crate::error::chain(&e)))
}

impl HttpDriver {
    /// The driver for an `http` location.
    ///
    /// # Errors
    /// [`ArtifactError::Config`] (no URL, a bad header, an unsupported auth kind) or
    /// [`ArtifactError::Secret`].
    pub fn http(h: &HttpArtifact, settings: &Arc<Settings>) -> Result<Self, ArtifactError> {
        let mut headers = header::HeaderMap::new();
        for hd in &h.headers {
            let name = header::HeaderName::from_bytes(hd.name.as_bytes())
                .map_err(|_| ArtifactError::config("http", format!("bad header name {:?}", hd.name)))?;
            let value = header::HeaderValue::from_str(&hd.value)
                .map_err(|_| ArtifactError::config("http", format!("bad value for header {:?}", hd.name)))?;
            headers.append(name, value);
        }
        let mut auth = None;
        if let Some(a) = &h.auth {
            if let Some(other) = a.extra.keys().next() {
                return Err(ArtifactError::config(
                    "http",
                    format!("auth.{other} is not supported by this executor (basicAuth is)"),
                ));
            }
            if let Some(b) = &a.basic_auth {
                auth = basic(settings, b.username_secret.as_ref(), b.password_secret.as_ref())?;
            }
        }
        Self::new("http", &h.url, headers, auth, settings)
    }

    /// The driver for an `artifactory` location.
    ///
    /// # Errors
    /// As [`HttpDriver::http`].
    pub fn artifactory(a: &ArtifactoryArtifact, settings: &Arc<Settings>) -> Result<Self, ArtifactError> {
        let auth = basic(settings, a.username_secret.as_ref(), a.password_secret.as_ref())?;
        Self::new("artifactory", &a.url, header::HeaderMap::new(), auth, settings)
    }

    fn new(
        kind: &'static str,
        url: &str,
        headers: header::HeaderMap,
        basic: Option<(String, String)>,
        settings: &Arc<Settings>,
    ) -> Result<Self, ArtifactError> {
        let url = url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ArtifactError::config(
                kind,
                format!("url {:?} is not http(s)", redact(url)),
            ));
        }
        Ok(Self {
            kind,
            client: client(kind)?,
            url: url.to_string(),
            label: redact(url),
            headers,
            basic,
            settings: settings.clone(),
        })
    }

    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let mut r = self.client.request(method, url).headers(self.headers.clone());
        if let Some((u, p)) = &self.basic {
            r = r.basic_auth(u, Some(p));
        }
        r
    }

    fn child(&self, rel: &str) -> String {
        match self.url.split_once('?') {
            Some((base, q)) => format!("{}/{rel}?{q}", base.trim_end_matches('/')),
            None => format!("{}/{rel}", self.url.trim_end_matches('/')),
        }
    }

    /// Send, mapping the status: 2xx ok, 404 NotFound, 401/403 Denied, the rest Remote
    /// (retried by the caller when transient).
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        label: &str,
        action: &'static str,
    ) -> Result<reqwest::Response, ArtifactError> {
        let resp = req.send().await.map_err(|e| ArtifactError::Remote {
            location: label.to_string(),
            action,
            message: crate::error::chain(&e),
        })?;
        check(resp, label, action).await
    }

    async fn put_file(&self, src: &Path, url: &str, label: &str, size: u64) -> Result<u64, ArtifactError> {
        let progress = Progress::new("upload", label, Some(size), self.settings.progress_interval);
        download::retrying(&self.settings, label, || async {
            let f = tokio::fs::File::open(src)
                .await
                .map_err(|e| ArtifactError::io("open", src, e))?;
            let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::with_capacity(f, 1 << 20));
            let req = self
                .request(reqwest::Method::PUT, url)
                .header(header::CONTENT_LENGTH, size)
                .body(body);
            self.send(req, label, "upload").await.map(|_| ())
        })
        .await?;
        progress.add(size);
        Ok(progress.finish())
    }
}

async fn check(
    resp: reqwest::Response,
    label: &str,
    action: &'static str,
) -> Result<reqwest::Response, ArtifactError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let body: String = resp.text().await.unwrap_or_default().chars().take(300).collect();
    let message = format!("HTTP {status}: {}", body.trim());
    Err(match status {
        StatusCode::NOT_FOUND | StatusCode::GONE => ArtifactError::NotFound {
            location: label.to_string(),
        },
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ArtifactError::Denied {
            location: label.to_string(),
            action,
            message,
        },
        s if s.is_server_error()
            || s == StatusCode::TOO_MANY_REQUESTS
            || s == StatusCode::REQUEST_TIMEOUT =>
        {
            ArtifactError::Remote {
                location: label.to_string(),
                action,
                message,
            }
        }
        _ => ArtifactError::Config {
            kind: "http",
            message: format!("{action} {label}: {message}"),
        },
    })
}

/// The total size from `Content-Range: bytes 0-N/TOTAL`.
fn total_of(resp: &reqwest::Response) -> Option<u64> {
    let v = resp.headers().get(header::CONTENT_RANGE)?.to_str().ok()?;
    v.rsplit('/').next()?.parse().ok()
}

impl RangeSource for HttpDriver {
    fn fetch(&self, range: std::ops::Range<u64>) -> BoxFuture<'static, Result<Bytes, ArtifactError>> {
        let me = self.clone();
        Box::pin(async move {
            let req = me
                .request(reqwest::Method::GET, &me.url)
                .header(header::RANGE, format!("bytes={}-{}", range.start, range.end - 1));
            let resp = me.send(req, &me.label, "download").await?;
            if resp.status() != StatusCode::PARTIAL_CONTENT {
                return Err(ArtifactError::Remote {
                    location: me.label.clone(),
                    action: "download",
                    message: format!("a range request was answered with {}", resp.status()),
                });
            }
            resp.bytes().await.map_err(|e| ArtifactError::Remote {
                location: me.label.clone(),
                action: "download",
                message: crate::error::chain(&e),
            })
        })
    }
}

impl ArtifactDriver for HttpDriver {
    async fn open(&self) -> Result<Opened, ArtifactError> {
        let part = self.settings.range_size as u64;
        let resp = download::retrying(&self.settings, &self.label, || async {
            let req = self
                .request(reqwest::Method::GET, &self.url)
                .header(header::RANGE, format!("bytes=0-{}", part - 1));
            let resp = req.send().await.map_err(|e| ArtifactError::Remote {
                location: self.label.clone(),
                action: "download",
                message: crate::error::chain(&e),
            })?;
            if resp.status() == StatusCode::RANGE_NOT_SATISFIABLE {
                // An empty object: no byte 0 to start a range at.
                let plain = self.request(reqwest::Method::GET, &self.url);
                return self.send(plain, &self.label, "download").await;
            }
            check(resp, &self.label, "download").await
        })
        .await?;
        let progress = Arc::new(Progress::new(
            "download",
            &self.label,
            None,
            self.settings.progress_interval,
        ));
        let label = self.label.clone();
        let io_err = move |e: reqwest::Error| {
            std::io::Error::other(format!("download {label}: {}", crate::error::chain(&e)))
        };
        match (resp.status(), total_of(&resp)) {
            (StatusCode::PARTIAL_CONTENT, Some(total)) if total > part => {
                // The first part is in hand; the rest comes as parallel ranges, in order.
                let first = resp.bytes_stream().map_err(io_err);
                let rest = download::ordered(
                    Arc::new(self.clone()),
                    total,
                    part,
                    self.settings.clone(),
                    progress,
                );
                Ok(Opened::Stream {
                    size: Some(total),
                    body: Box::pin(first.chain(rest)),
                })
            }
            _ => {
                let size = resp.content_length();
                Ok(Opened::Stream {
                    size,
                    body: Box::pin(resp.bytes_stream().map_err(io_err)),
                })
            }
        }
    }

    async fn load(&self, dest: &Path) -> Result<Loaded, ArtifactError> {
        use tokio::io::AsyncWriteExt;
        let Opened::Stream { mut body, .. } = self.open().await? else {
            unreachable!("HTTP has no directories")
        };
        if let Some(parent) = dest.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| ArtifactError::io("create", parent, e))?;
        }
        let result = async {
            let mut f = tokio::fs::File::create_new(dest)
                .await
                .map_err(|e| ArtifactError::io("create", dest, e))?;
            let mut n = 0u64;
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| ArtifactError::Remote {
                    location: self.label.clone(),
                    action: "download",
                    message: e.to_string(),
                })?;
                f.write_all(&chunk)
                    .await
                    .map_err(|e| ArtifactError::io("write", dest, e))?;
                n += chunk.len() as u64;
            }
            f.flush().await.map_err(|e| ArtifactError::io("write", dest, e))?;
            Ok(n)
        }
        .await;
        if result.is_err() {
            let _ = tokio::fs::remove_file(dest).await;
        }
        result.map(Loaded::File)
    }

    async fn save(&self, src: &Path) -> Result<u64, ArtifactError> {
        let meta = tokio::fs::metadata(src)
            .await
            .map_err(|e| ArtifactError::io("stat", src, e))?;
        if !meta.is_dir() {
            return self.put_file(src, &self.url, &self.label, meta.len()).await;
        }
        let root = src.to_path_buf();
        let files = crate::blocking(move || crate::walk::files(&root)).await?;
        let sizes: Vec<u64> = futures::stream::iter(files)
            .map(|f| async move {
                let url = self.child(&f.rel);
                let label = redact(&url);
                self.put_file(&f.path, &url, &label, f.size).await
            })
            .buffer_unordered(self.settings.parallelism)
            .try_collect()
            .await?;
        Ok(sizes.iter().sum())
    }

    async fn save_stream(&self, body: ByteStream) -> Result<u64, ArtifactError> {
        let progress = Arc::new(Progress::new(
            "upload",
            &self.label,
            None,
            self.settings.progress_interval,
        ));
        let p = progress.clone();
        let counted = body.inspect_ok(move |b| p.add(b.len() as u64));
        let req = self
            .request(reqwest::Method::PUT, &self.url)
            .body(reqwest::Body::wrap_stream(counted));
        self.send(req, &self.label, "upload").await?;
        Ok(progress.finish())
    }

    async fn exists(&self) -> Result<bool, ArtifactError> {
        let req = self.request(reqwest::Method::HEAD, &self.url);
        match self.send(req, &self.label, "look up").await {
            Ok(_) => Ok(true),
            Err(ArtifactError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn list(&self) -> Result<Vec<String>, ArtifactError> {
        if self.exists().await? {
            Ok(vec![String::new()])
        } else {
            Err(ArtifactError::NotFound {
                location: self.label.clone(),
            })
        }
    }

    async fn list_objects(&self) -> Result<Vec<String>, ArtifactError> {
        Err(ArtifactError::Unsupported {
            driver: self.kind,
            action: "list objects (as Argo v4.1.2: ListObjects is not supported for HTTP and Artifactory artifacts)",
        })
    }

    async fn delete(&self) -> Result<(), ArtifactError> {
        Err(ArtifactError::Unsupported {
            driver: self.kind,
            action: "delete artifacts (as Argo v4.1.2, whose HTTP and Artifactory driver answers ErrDeleteNotSupported: argoproj/argo-workflows#3102); the artifact was left in place",
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_are_redacted() {
        assert_eq!(super::redact("https://h/p?X-Amz-Signature=s"), "https://h/p?…");
        assert_eq!(super::redact("https://u:pw@h/p"), "https://…@h/p");
        assert_eq!(super::redact("http://h/a@b"), "http://h/a@b");
    }
}
