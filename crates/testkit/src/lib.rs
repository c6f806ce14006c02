//! Real servers for tests and benchmarks, started on loopback and gone with the process:
//! [`moto::Moto`] (an S3 server with signature checking on), [`azurite::Azurite`] (Azure
//! Blob), [`fake_gcs::FakeGcs`] (Google Cloud Storage), [`files::FileServer`]
//! (HTTP GET/HEAD/PUT/DELETE over a directory, with ranges and basic auth);
//! [`sweep::Sweep`], which removes a local node's containers when a test ends, and
//! [`web::WebServer`], a scripted HTTP(S) server and executor plugin for the agent.

pub mod azurite;
pub mod fake_gcs;
pub mod files;
pub mod moto;
pub mod sweep;
pub mod web;

/// A free TCP port on 127.0.0.1 (bound, then released for the server to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind a port on 127.0.0.1")
}

/// Percent-encode everything but RFC 3986's unreserved characters (a query value or a path
/// segment).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The workspace root (where `.venv-moto`, `.venv-fake-gcs` and `.venv-awscli` live).
pub fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/testkit is two levels below the root")
        .to_path_buf()
}
