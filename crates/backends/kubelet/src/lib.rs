//! The kubelet backend: the runtime seam over the node's kubelet HTTPS API, for any
//! container runtime (containerd, CRI-O, …) and no docker.sock, host paths or privileges.
//!
//! | seam method | kubelet call |
//! |---|---|
//! | wait | `GET /pods`, polled adaptively ([`config::Poll`]) until every named container is terminated, or the pod's deadline passed |
//! | output stream | `GET /containerLogs/{ns}/{pod}/{ctr}`: **combined** stdout+stderr (the kubelet cannot separate them) |
//! | kill | WebSocket `/exec/{ns}/{pod}/{ctr}?command=…&output=1&error=1`: `argoexec kill` or `sh -c kill`, TERM → grace → KILL ([`argoexec_kube::ops`]) |
//! | file reads | exec `cat` / `tar -cf -`, only while the container runs (else §5.4's validation error) |
//! | list names | the pod's spec from `/pods` |
//!
//! Authentication: the service-account token as a bearer token, re-read when the file
//! changes. TLS: verified against `ARGO_KUBELET_CA_FILE` or the service account's `ca.crt`,
//! accepting the kubelet's IP or else its node name ([`argoexec_kube::tls`]), unless
//! `ARGO_KUBELET_INSECURE=true`. With `ARGOEXEC_KUBELET_EXEC=apiserver` exec goes through the
//! API server's `pods/exec` instead, for clusters whose kubelet grant is for read-only paths.
//!
//! Differences from Argo's kubelet executor, deliberately: exec does not expect the
//! dockershim-era 302 redirect (the kubelet upgrades directly since 1.20-ish, and Argo's
//! client then silently dropped the exec's outcome); every exec is judged by its status
//! frame; kill errors are returned; the wait poll starts at 50 ms instead of 5 s.

pub mod config;
mod wait;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use argoexec_core::{ExecutorKind, PodPaths};
use argoexec_kube::client::describe;
use argoexec_kube::lookup::DEFAULT_POD_LOOKUP_TIMEOUT;
use argoexec_kube::ops::{self, PodAccess};
use argoexec_kube::{Endpoint, InClusterConfig, TlsPolicy, TokenSource};
use argoexec_runtime::{
    Capabilities, ContainerExit, ErrorKind, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{AttachParams, AttachedProcess, LogParams};
use kube::core::kubelet_debug::KubeletDebugParams;
use tokio_util::compat::FuturesAsyncReadCompatExt;
use tokio_util::sync::CancellationToken;

pub use config::{ConfigError, ExecVia, KubeletConfig, Poll};

const KIND: ExecutorKind = ExecutorKind::Kubelet;

/// The kubelet's `/pods` answer (a `PodList`; only the items matter).
#[derive(serde::Deserialize)]
struct PodList {
    #[serde(default)]
    items: Vec<Pod>,
}

/// The kubelet backend for one pod.
#[derive(Clone)]
pub struct KubeletExecutor {
    kubelet: kube::Client,
    api: Option<kube::Client>,
    url: String,
    config: KubeletConfig,
    namespace: String,
    pod_name: String,
    sa_dir: PathBuf,
    lookup: Duration,
}

impl std::fmt::Debug for KubeletExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletExecutor")
            .field("url", &self.url)
            .field("pod", &format_args!("{}/{}", self.namespace, self.pod_name))
            .field("exec_via", &self.config.exec_via)
            .finish_non_exhaustive()
    }
}

fn setup_err(m: impl Into<String>) -> RuntimeError {
    RuntimeError::new(ErrorKind::Fatal, KIND, "connect to", "kubelet", m)
}

/// The pod `namespace`/`name` from a kubelet's pod list (a pod without a namespace is in
/// `default`); when it is not there, the namespaces in which a pod of that name runs, which
/// tells a wrong namespace from a wrong node.
pub(crate) fn find_own(items: Vec<Pod>, namespace: &str, name: &str) -> Result<Pod, Vec<String>> {
    let mut elsewhere = Vec::new();
    for p in items {
        if p.metadata.name.as_deref() != Some(name) {
            continue;
        }
        let ns = p.metadata.namespace.as_deref().unwrap_or("default");
        if ns == namespace {
            return Ok(p);
        }
        elsewhere.push(ns.to_string());
    }
    elsewhere.sort();
    elsewhere.dedup();
    Err(elsewhere)
}

/// The API server client for `ARGOEXEC_KUBELET_EXEC=apiserver`.
fn api_client(
    paths: &PodPaths,
    token: Arc<TokenSource>,
    namespace: &str,
) -> Result<kube::Client, RuntimeError> {
    let ic = InClusterConfig::from_env(paths)
        .map_err(|e| setup_err("cannot read the in-cluster configuration").with_source(e))?
        .ok_or_else(|| setup_err("ARGOEXEC_KUBELET_EXEC=apiserver but no API server is configured (KUBERNETES_SERVICE_HOST and the token)"))?;
    Endpoint {
        url: ic.server.clone(),
        tls: TlsPolicy::Verify {
            ca_file: ic.ca_file(),
            names: vec![ic.server_host()],
        },
        token,
        namespace: namespace.into(),
        what: "API server",
    }
    .client()
    .map_err(|e| {
        setup_err(format!(
            "cannot build the client for the API server at {}",
            ic.server
        ))
        .with_source(e)
    })
}

impl KubeletExecutor {
    /// Set up for the pod `namespace`/`pod_name` from `config`, with the token and default
    /// CA from the service-account directory of `paths` (or `ARGOEXEC_SERVICEACCOUNT_DIR`).
    /// Nothing is dialled yet.
    ///
    /// # Errors
    /// `Fatal` when the token or CA bundle is unusable, or exec via the API server is asked
    /// for and no API server is configured.
    pub fn new(
        config: KubeletConfig,
        paths: &PodPaths,
        namespace: &str,
        pod_name: &str,
    ) -> Result<Self, RuntimeError> {
        let sa_dir: PathBuf = std::env::var_os(argoexec_kube::incluster::SERVICE_ACCOUNT_DIR_ENV)
            .map_or_else(|| paths.service_account_dir(), Into::into);
        let token = TokenSource::new(sa_dir.join("token"))
            .map_err(|e| setup_err("cannot use the service-account token").with_source(e))?;
        let token = Arc::new(token);
        let tls = if config.insecure {
            TlsPolicy::Insecure
        } else {
            TlsPolicy::Verify {
                ca_file: config.ca_file.clone().unwrap_or_else(|| sa_dir.join("ca.crt")),
                names: config.verify_names(),
            }
        };
        let url = config.url();
        let kubelet = Endpoint {
            url: url.clone(),
            tls,
            token: token.clone(),
            namespace: namespace.into(),
            what: "kubelet",
        }
        .client()
        .map_err(|e| setup_err(format!("cannot build the client for the kubelet at {url}")).with_source(e))?;
        let api = match config.exec_via {
            ExecVia::Kubelet => None,
            ExecVia::ApiServer => Some(api_client(paths, token, namespace)?),
        };
        tracing::info!(kubelet = %url, exec_via = ?config.exec_via, "kubelet executor");
        Ok(Self {
            kubelet,
            api,
            url,
            config,
            namespace: namespace.into(),
            pod_name: pod_name.into(),
            sa_dir,
            lookup: DEFAULT_POD_LOOKUP_TIMEOUT,
        })
    }

    /// Set how long `wait` (and a kill's wait) tolerates `/pods` answers without this pod
    /// before it fails with `NotFound` (default [`DEFAULT_POD_LOOKUP_TIMEOUT`];
    /// [`argoexec_kube::lookup`] has the rule).
    #[must_use]
    pub fn with_pod_lookup_timeout(mut self, bound: Duration) -> Self {
        self.lookup = bound;
        self
    }

    /// The kubelet's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn params(&self) -> KubeletDebugParams<'_> {
        KubeletDebugParams {
            name: &self.pod_name,
            namespace: &self.namespace,
            pod_uid: None,
        }
    }

    fn error(&self, e: &kube::Error, action: &'static str, container: &str, call: &str) -> RuntimeError {
        let (kind, message) = describe(e, &self.url, call);
        RuntimeError::new(kind, KIND, action, container, message)
    }

    /// Every pod the kubelet runs (`GET /pods`).
    async fn list_pods(&self) -> Result<Vec<Pod>, RuntimeError> {
        let req = http::Request::get("/pods")
            .body(Vec::new())
            .expect("static request");
        let list: PodList = tokio::time::timeout(Duration::from_secs(60), self.kubelet.request(req))
            .await
            .map_err(|_| {
                RuntimeError::new(
                    ErrorKind::Transient,
                    KIND,
                    "list pods of",
                    "kubelet",
                    format!("GET {}/pods: no answer in 60 s", self.url),
                )
            })?
            .map_err(|e| self.error(&e, "list pods of", "kubelet", "GET /pods"))?;
        Ok(list.items)
    }

    /// The `NotFound` error for a pod `/pods` does not list: what was looked at (for how
    /// long, when `missing_for` is known), where a pod of that name runs instead, and the
    /// likely causes.
    pub(crate) fn not_listed(
        &self,
        action: &'static str,
        container: &str,
        elsewhere: &[String],
        missing_for: Option<Duration>,
    ) -> RuntimeError {
        let during = missing_for.map_or(String::new(), |d| format!(" for {} s", d.as_secs()));
        let hint = match elsewhere {
            [] => String::new(),
            ns => format!(
                "; a pod of that name runs in namespace {}",
                ns.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
            ),
        };
        RuntimeError::new(
            ErrorKind::NotFound,
            KIND,
            action,
            container,
            format!(
                "pod {}/{} is not among the pods of the kubelet at {} (GET /pods{during}){hint}: \
                 is the namespace right ({}), and is ARGO_KUBELET_HOST the node this pod runs on \
                 (downward API status.hostIP)?",
                self.namespace,
                self.pod_name,
                self.url,
                argoexec_kube::lookup::namespace_source(&self.sa_dir),
            ),
        )
    }

    /// This pod from the kubelet's `GET /pods`, once.
    ///
    /// # Errors
    /// `NotFound` when the kubelet does not list it; the call's error otherwise.
    pub async fn own_pod(&self) -> Result<Pod, RuntimeError> {
        find_own(self.list_pods().await?, &self.namespace, &self.pod_name)
            .map_err(|elsewhere| self.not_listed("find pod on", "kubelet", &elsewhere, None))
    }

    /// This pod from one `GET /pods`: `Ok(None)` when the answer does not list it (the
    /// caller's [`Absence`](argoexec_kube::lookup::Absence) decides how long that is
    /// tolerated), with the namespaces where a pod of that name runs.
    pub(crate) async fn look(&self) -> Result<Result<Pod, Vec<String>>, RuntimeError> {
        Ok(find_own(self.list_pods().await?, &self.namespace, &self.pod_name))
    }
}

impl PodAccess for KubeletExecutor {
    fn backend(&self) -> ExecutorKind {
        KIND
    }

    async fn pod(&self) -> Result<Pod, RuntimeError> {
        self.own_pod().await
    }

    async fn exec(&self, container: &str, argv: Vec<String>) -> Result<AttachedProcess, RuntimeError> {
        let ap = AttachParams::default().stdin(false).stdout(true).stderr(true);
        match &self.api {
            None => self
                .kubelet
                .kubelet_node_exec(&self.params(), container, argv, &ap)
                .await
                .map_err(|e| self.error(&e, "exec in", container, "exec via")),
            Some(api) => kube::Api::<Pod>::namespaced(api.clone(), &self.namespace)
                .exec(&self.pod_name, argv, &ap.container(container))
                .await
                .map_err(|e| {
                    let (kind, message) = describe(&e, "the API server", "pods/exec via");
                    RuntimeError::new(kind, KIND, "exec in", container, message)
                }),
        }
    }

    async fn wait_terminated(
        &self,
        names: &[String],
        timeout: Duration,
    ) -> Result<Vec<String>, RuntimeError> {
        self.poll_until(names, Some(timeout), CancellationToken::new())
            .await
            .map(|(_, left)| left)
    }
}

impl RuntimeExecutor for KubeletExecutor {
    fn kind(&self) -> ExecutorKind {
        KIND
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            base_layer_read: false,
            stdout_only_stream: false,
            kill_without_shell: true,
        }
    }

    async fn get_file_contents(&self, container: &str, path: &Path) -> Result<Vec<u8>, RuntimeError> {
        ops::read_file(self, container, path).await
    }

    async fn copy_file(
        &self,
        container: &str,
        src: &Path,
        dest: &Path,
        level: Option<u32>,
    ) -> Result<(), RuntimeError> {
        ops::copy_file(self, container, src, dest, level).await
    }

    async fn output_stream(&self, container: &str, kind: StreamKind) -> Result<OutputStream, RuntimeError> {
        if kind == StreamKind::Stdout {
            tracing::warn!(
                container,
                "the kubelet's /containerLogs has stdout and stderr combined: the result includes stderr lines"
            );
        }
        let call = format!(
            "GET /containerLogs/{}/{}/{container}",
            self.namespace, self.pod_name
        );
        let r = self
            .kubelet
            .kubelet_node_logs(&self.params(), container, &LogParams::default())
            .await
            .map_err(|e| self.error(&e, "read logs of", container, &call))?;
        Ok(Box::pin(r.compat()))
    }

    async fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        self.poll_until(containers, None, cancel)
            .await
            .map(|(exits, _)| exits)
    }

    async fn kill(&self, containers: &[String], grace: Duration) -> Result<(), RuntimeError> {
        ops::kill_gracefully(self, containers, grace).await
    }

    async fn list_container_names(&self) -> Result<Vec<String>, RuntimeError> {
        Ok(argoexec_kube::podstate::container_names(&self.own_pod().await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(namespace: Option<&str>, name: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = namespace.map(Into::into);
        p
    }

    #[test]
    fn finds_the_own_pod_by_namespace_and_name() {
        let items = || {
            vec![
                pod(Some("a"), "x"),
                pod(Some("b"), "p"),
                pod(None, "p"),
                pod(Some("argo"), "p"),
                pod(Some("b"), "p"),
            ]
        };
        let found = find_own(items(), "argo", "p").unwrap();
        assert_eq!(found.metadata.namespace.as_deref(), Some("argo"));
        // A pod without a namespace is in `default`.
        assert!(find_own(items(), "default", "p").is_ok());
        // Missing: where a pod of that name runs instead, each namespace once.
        assert_eq!(
            find_own(items(), "elsewhere", "p").unwrap_err(),
            ["argo", "b", "default"]
        );
        assert!(find_own(items(), "argo", "none").unwrap_err().is_empty());
    }
}
