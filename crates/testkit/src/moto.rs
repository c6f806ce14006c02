//! moto in server mode (`scripts/pyenv.sh moto` makes its venv), with authentication on:
//! the first requests (unauthenticated) create an IAM user with an allow-all policy, its
//! access key, and the buckets asked for; every later request must be signed with that key,
//! so wrong credentials fail as on AWS (403 `SignatureDoesNotMatch` / `InvalidAccessKeyId`).
//!
//! The server runs as a child Python process that exits when its stdin closes, so it ends
//! with the test process however that ends. Readiness is moto's own "Running on" line.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// A running moto server.
#[derive(Debug)]
pub struct Moto {
    child: Child,
    port: u16,
    access_key: String,
    secret_key: String,
}

/// Python run in the venv: moto's server, stopped when stdin reaches EOF.
const LAUNCH: &str = "import os, sys, threading\n\
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()\n\
from moto.server import main\n\
main(['-H', '127.0.0.1', '-p', sys.argv[1]])\n";

const FAKE_AUTH: &str = "AWS4-HMAC-SHA256 Credential=setup/20260101/us-east-1/SERVICE/aws4_request, SignedHeaders=host, Signature=00";

/// The moto venv's Python (`ARGOEXEC_MOTO_PYTHON` overrides).
pub fn python() -> std::path::PathBuf {
    std::env::var_os("ARGOEXEC_MOTO_PYTHON")
        .map(Into::into)
        .unwrap_or_else(|| crate::workspace_root().join(".venv-moto/bin/python"))
}

fn request(port: u16, method: &str, path: &str, service: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to moto");
    let auth = FAKE_AUTH.replace("SERVICE", service);
    let ctype = if body.is_empty() {
        ""
    } else {
        "Content-Type: application/x-www-form-urlencoded\r\n"
    };
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {auth}\r\n{ctype}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write to moto");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read from moto");
    assert!(
        out.starts_with("HTTP/1.1 200"),
        "moto setup {method} {path}: {out}"
    );
    out
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> &'a str {
    let start = s
        .find(open)
        .map(|i| i + open.len())
        .expect("tag in moto's answer");
    let end = s[start..].find(close).map(|i| i + start).expect("closing tag");
    &s[start..end]
}

impl Moto {
    /// Start moto and create `buckets` (names of 3+ characters).
    ///
    /// # Panics
    /// When the venv is missing (run `bash scripts/pyenv.sh moto`) or moto does not start.
    pub fn start(buckets: &[&str]) -> Self {
        let port = crate::free_port();
        let py = python();
        assert!(
            py.exists(),
            "{} is missing: run `bash scripts/pyenv.sh moto` (scripts/test.sh does)",
            py.display()
        );
        let mut child = Command::new(&py)
            .args(["-c", LAUNCH, &port.to_string()])
            .env("INITIAL_NO_AUTH_ACTION_COUNT", (3 + buckets.len()).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start moto");
        let stderr = child.stderr.take().expect("piped");
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = String::new();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("Running on") => break,
                Some(Ok(l)) => {
                    seen.push_str(&l);
                    seen.push('\n');
                }
                _ => panic!("moto exited before it was ready:\n{seen}"),
            }
        }
        // Keep draining moto's request log so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        request(
            port,
            "POST",
            "/",
            "iam",
            "Action=CreateUser&UserName=argoexec&Version=2010-05-08",
        );
        let policy =
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;
        request(
            port,
            "POST",
            "/",
            "iam",
            &format!(
                "Action=PutUserPolicy&UserName=argoexec&PolicyName=all&PolicyDocument={}&Version=2010-05-08",
                crate::percent_encode(policy)
            ),
        );
        let key = request(
            port,
            "POST",
            "/",
            "iam",
            "Action=CreateAccessKey&UserName=argoexec&Version=2010-05-08",
        );
        let access_key = between(&key, "<AccessKeyId>", "</AccessKeyId>").to_string();
        let secret_key = between(&key, "<SecretAccessKey>", "</SecretAccessKey>").to_string();
        for b in buckets {
            request(port, "PUT", &format!("/{b}"), "s3", "");
        }
        Self {
            child,
            port,
            access_key,
            secret_key,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:<port>` (Argo's endpoint form, with `insecure: true`).
    pub fn host_port(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The access key id moto accepts.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// Its secret.
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// Stop the server now (an outage in the middle of a transfer).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server's process id (for RSS measurements).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}
