//! `argoexec-kube`: talking to the cluster's HTTPS endpoints from inside a pod.
//!
//! Shared by the reporter (API server) and the two backends that reach containers through
//! Kubernetes instead of a container runtime: kubelet (`https://hostIP:10250`) and k8sapi
//! (the API server). Modules, bottom up:
//! - [`incluster`]: where the API server is, the service-account directory, and
//!   [`TokenSource`] (the bearer token, re-read whenever the file changes);
//! - [`tls`]: verification against one CA bundle (re-read on change) with an ordered list of
//!   acceptable names (the kubelet's IP, then its node name), or explicit insecure;
//! - [`client`]: a `kube::Client` for one [`Endpoint`] with both of the above;
//! - [`podstate`]: which containers of a Pod have terminated, and the deadline rule;
//! - `exec` (feature `exec`): judging an exec by its status frame (no status = failure);
//! - `ops` (feature `exec`): graceful kill and file reads over exec, written once for both
//!   backends;
//! - [`lookup`]: the rule for a backend that cannot find its own pod (a bounded wait, then
//!   `NotFound`), shared by the kubelet, k8sapi and pns backends;
//! - [`retry`]: transient API failures retried with a client-go backoff, shared by the
//!   subcommands that call the API (resource, artifact GC, agent).

pub mod client;
#[cfg(feature = "exec")]
pub mod exec;
pub mod incluster;
pub mod lookup;
#[cfg(feature = "exec")]
pub mod ops;
pub mod podstate;
pub mod retry;
pub mod tls;

pub use client::{ClientError, Endpoint};
pub use incluster::{InClusterConfig, InClusterError, TokenSource, install_crypto_provider};
pub use tls::{TlsError, TlsPolicy, VerifyFailure};

/// An error and its sources as one line, each distinct message once.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(err);
    while let Some(e) = cur {
        let s = e.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = e.source();
    }
    parts.join(": ")
}
