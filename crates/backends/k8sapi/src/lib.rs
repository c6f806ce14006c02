//! The k8sapi backend: the runtime seam over the Kubernetes API server (kube-rs over rustls),
//! for any container runtime and no docker.sock, host paths, kubelet access or privileges.
//!
//! | seam method | API call |
//! |---|---|
//! | wait | one `watch` on the own pod ([`watch`]): returns when every named container is terminated or the pod's `DeadlineExceeded`; a pod the watch does not deliver within the pod-lookup bound is `NotFound` ([`argoexec_kube::lookup`]) |
//! | output stream | `GET …/pods/{pod}/log?container=…`: **combined** stdout+stderr |
//! | kill | `pods/exec` over WebSocket: `argoexec kill` or `sh -c kill`, TERM → grace → KILL ([`argoexec_kube::ops`]) |
//! | file reads | exec `cat` / `tar -cf -`, only while the container runs (else §5.4's validation error) |
//! | list names | the watched pod's spec |
//!
//! Least RBAC (docs/backends/k8sapi.md): `pods: get, watch`; `pods/log: get`; `pods/exec:
//! get, create` (a WebSocket upgrade is a GET; Kubernetes 1.35+ also checks `create`);
//! `workflowtaskresults: create, patch` for the report. A step without sidecars or a
//! result makes one watch, one log read (only when the result or logs are wanted) and one
//! write.
//!
//! Differences from Argo's k8sapi executor: exec over WebSocket (v5/v4) instead of SPDY;
//! no `get pod` before the watch and no poll while killing — the same watch serves both.

mod watch;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use argoexec_core::{ExecutorKind, PodPaths};
use argoexec_kube::client::describe;
use argoexec_kube::lookup::{DEFAULT_POD_LOOKUP_TIMEOUT, namespace_source};
use argoexec_kube::ops::{self, PodAccess};
use argoexec_kube::podstate::{container_names, evaluate};
use argoexec_kube::{Endpoint, InClusterConfig, TlsPolicy, TokenSource};
use argoexec_runtime::{
    Capabilities, ContainerExit, ErrorKind, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, AttachedProcess, LogParams};
use tokio::sync::watch as channel;
use tokio::time::Instant;
use tokio_util::compat::FuturesAsyncReadCompatExt;
use tokio_util::sync::CancellationToken;

pub use watch::View;

const KIND: ExecutorKind = ExecutorKind::K8sApi;

struct Inner {
    api: Api<Pod>,
    server: String,
    namespace: String,
    pod_name: String,
    service_account_dir: PathBuf,
    view: channel::Receiver<View>,
    tx: Mutex<Option<channel::Sender<View>>>,
    /// When the watch was started: the pod-lookup clock runs from here until the pod
    /// first arrives.
    started: OnceLock<Instant>,
    stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The k8sapi backend for one pod.
#[derive(Clone)]
pub struct K8sApiExecutor {
    inner: Arc<Inner>,
    lookup: Duration,
}

impl std::fmt::Debug for K8sApiExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("K8sApiExecutor")
            .field("server", &self.inner.server)
            .field(
                "pod",
                &format_args!("{}/{}", self.inner.namespace, self.inner.pod_name),
            )
            .finish_non_exhaustive()
    }
}

fn error(kind: ErrorKind, action: &'static str, container: &str, m: impl Into<String>) -> RuntimeError {
    RuntimeError::new(kind, KIND, action, container, m)
}

fn setup_err(m: impl Into<String>) -> RuntimeError {
    error(ErrorKind::Fatal, "connect to", "API server", m)
}

impl K8sApiExecutor {
    /// Set up for the pod `namespace`/`pod_name` with the in-cluster configuration of
    /// `paths` (`KUBERNETES_SERVICE_HOST`/`PORT`, the service-account token and `ca.crt`).
    /// Nothing is dialled until the first operation.
    ///
    /// # Errors
    /// `Fatal` when no API server is configured or the token/CA is unusable.
    pub fn new(paths: &PodPaths, namespace: &str, pod_name: &str) -> Result<Self, RuntimeError> {
        let ic = InClusterConfig::from_env(paths)
            .map_err(|e| setup_err("cannot read the in-cluster configuration").with_source(e))?
            .ok_or_else(|| {
                setup_err("the k8sapi executor needs the API server: KUBERNETES_SERVICE_HOST is unset or the service-account token is missing")
            })?;
        Self::from_config(&ic, namespace, pod_name)
    }

    /// Set up for the pod `namespace`/`pod_name` on the API server of `ic`, with its token
    /// and CA bundle. Nothing is dialled until the first operation.
    ///
    /// # Errors
    /// `Fatal` when the token or CA bundle is unusable.
    pub fn from_config(ic: &InClusterConfig, namespace: &str, pod_name: &str) -> Result<Self, RuntimeError> {
        let token = TokenSource::new(ic.token_file())
            .map_err(|e| setup_err("cannot use the service-account token").with_source(e))?;
        let client = Endpoint {
            url: ic.server.clone(),
            tls: TlsPolicy::Verify {
                ca_file: ic.ca_file(),
                names: vec![ic.server_host()],
            },
            token: Arc::new(token),
            namespace: namespace.into(),
            what: "API server",
        }
        .client()
        .map_err(|e| setup_err(format!("cannot build the client for {}", ic.server)).with_source(e))?;
        let (tx, view) = channel::channel(View::Unknown);
        tracing::info!(server = %ic.server, "k8sapi executor");
        Ok(Self {
            inner: Arc::new(Inner {
                api: Api::namespaced(client, namespace),
                server: ic.server.clone(),
                namespace: namespace.into(),
                pod_name: pod_name.into(),
                service_account_dir: ic.service_account_dir.clone(),
                view,
                tx: Mutex::new(Some(tx)),
                started: OnceLock::new(),
                stop: CancellationToken::new(),
            }),
            lookup: DEFAULT_POD_LOOKUP_TIMEOUT,
        })
    }

    /// Set how long every call that needs the pod waits for the watch to deliver it before
    /// failing with `NotFound` (default [`DEFAULT_POD_LOOKUP_TIMEOUT`];
    /// [`argoexec_kube::lookup`] has the rule).
    #[must_use]
    pub fn with_pod_lookup_timeout(mut self, bound: Duration) -> Self {
        self.lookup = bound;
        self
    }

    /// Start the shared watch on first use.
    fn ensure_watch(&self) -> channel::Receiver<View> {
        let tx = self.inner.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(tx) = tx {
            let i = &self.inner;
            let _ = i.started.set(Instant::now());
            tokio::spawn(watch::run(
                i.api.clone(),
                i.pod_name.clone(),
                i.server.clone(),
                tx,
                i.stop.clone(),
            ));
        }
        self.inner.view.clone()
    }

    /// The error for a pod the watch has not delivered within the bound: `NotFound` when
    /// the watch runs (no such pod in the namespace), `Transient` when no watch request has
    /// succeeded (the API server does not answer).
    fn not_delivered(&self, view: &View, who: &str) -> RuntimeError {
        let i = &self.inner;
        let secs = self.lookup.as_secs_f64();
        let call = format!(
            "GET /api/v1/namespaces/{}/pods?watch=1&fieldSelector=metadata.name={}",
            i.namespace, i.pod_name
        );
        if matches!(view, View::Absent) {
            return error(
                ErrorKind::NotFound,
                "wait for",
                who,
                format!(
                    "the pod watch on {} ({call}) has not delivered pod {}/{} in {secs} s: there is no pod of \
                     that name in namespace {:?}; is the namespace right ({})?",
                    i.server,
                    i.namespace,
                    i.pod_name,
                    i.namespace,
                    namespace_source(&i.service_account_dir),
                ),
            );
        }
        error(
            ErrorKind::Transient,
            "wait for",
            who,
            format!(
                "no pod watch on {} ({call}) was established in {secs} s: the API server does not answer",
                i.server
            ),
        )
    }

    /// Wait until `done(pod)` holds, the pod is gone, the watch failed, `timeout` passed or
    /// `cancel` fired. Returns the last pod seen (`None` on time-out before any event). A
    /// pod the watch has not delivered within the pod-lookup bound (counted from the start of
    /// the watch) is an error ([`Self::not_delivered`]).
    async fn until(
        &self,
        who: &str,
        done: impl Fn(&Pod) -> bool,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<Option<Arc<Pod>>, RuntimeError> {
        let mut rx = self.ensure_watch();
        let give_up = timeout.map(|t| Instant::now() + t);
        let started = *self.inner.started.get_or_init(Instant::now);
        loop {
            let view = rx.borrow_and_update().clone();
            let lookup_deadline = match &view {
                View::Pod(p) if done(p) => return Ok(Some(p.clone())),
                View::Pod(_) => None,
                View::Unknown | View::Absent => Some(started + self.lookup),
                View::Gone => {
                    let m = format!("pod {}/{} was deleted", self.inner.namespace, self.inner.pod_name);
                    return Err(error(ErrorKind::NotFound, "wait for", who, m));
                }
                View::Failed(kind, m) => return Err(error(*kind, "wait for", who, m.clone())),
            };
            let wake = match (give_up, lookup_deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            tokio::select! {
                () = cancel.cancelled() => return Err(error(ErrorKind::Cancelled, "wait for", who, "cancelled")),
                changed = rx.changed() => if changed.is_err() {
                    return Err(error(ErrorKind::Fatal, "wait for", who, "the pod watch stopped"));
                },
                () = sleep_until(wake) => {
                    if lookup_deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(self.not_delivered(&view, who));
                    }
                    return Ok(match view {
                        View::Pod(p) => Some(p),
                        _ => None,
                    });
                }
            }
        }
    }
}

/// Sleep until `at`, or forever.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl PodAccess for K8sApiExecutor {
    fn backend(&self) -> ExecutorKind {
        KIND
    }

    async fn pod(&self) -> Result<Pod, RuntimeError> {
        let never = CancellationToken::new();
        match self.until("pod", |_| true, None, &never).await? {
            Some(p) => Ok((*p).clone()),
            None => Err(error(
                ErrorKind::Fatal,
                "get",
                "pod",
                "the pod watch ended without the pod",
            )),
        }
    }

    async fn exec(&self, container: &str, argv: Vec<String>) -> Result<AttachedProcess, RuntimeError> {
        let ap = AttachParams::default()
            .container(container)
            .stdin(false)
            .stdout(true)
            .stderr(true);
        self.inner
            .api
            .exec(&self.inner.pod_name, argv, &ap)
            .await
            .map_err(|e| {
                let (kind, mut m) = describe(&e, &self.inner.server, "pods/exec");
                if kind == ErrorKind::Denied {
                    m.push_str(" (the k8sapi executor needs `pods/exec: get, create`)");
                }
                error(kind, "exec in", container, m)
            })
    }

    async fn wait_terminated(
        &self,
        names: &[String],
        timeout: Duration,
    ) -> Result<Vec<String>, RuntimeError> {
        let never = CancellationToken::new();
        let last = self
            .until(
                &names.join(","),
                |p| evaluate(p, names).pending.is_empty(),
                Some(timeout),
                &never,
            )
            .await?;
        Ok(match last {
            Some(p) => evaluate(&p, names).pending.into_iter().map(|(n, _)| n).collect(),
            None => names.to_vec(),
        })
    }
}

impl RuntimeExecutor for K8sApiExecutor {
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
                "pods/log has stdout and stderr combined: the result includes stderr lines"
            );
        }
        let lp = LogParams {
            container: Some(container.into()),
            ..LogParams::default()
        };
        let r = self
            .inner
            .api
            .log_stream(&self.inner.pod_name, &lp)
            .await
            .map_err(|e| {
                let (kind, mut m) = describe(&e, &self.inner.server, "pods/log");
                if kind == ErrorKind::Denied {
                    m.push_str(" (the k8sapi executor needs `pods/log: get`)");
                }
                error(kind, "read logs of", container, m)
            })?;
        Ok(Box::pin(r.compat()))
    }

    async fn wait(
        &self,
        containers: &[String],
        cancel: CancellationToken,
    ) -> Result<Vec<ContainerExit>, RuntimeError> {
        let who = containers.join(",");
        let done = |p: &Pod| evaluate(p, containers).done();
        let start = tokio::time::Instant::now();
        let pod = self.until(&who, done, None, &cancel).await?.ok_or_else(|| {
            error(
                ErrorKind::Fatal,
                "wait for",
                &who,
                "the pod watch ended without an event",
            )
        })?;
        let e = evaluate(&pod, containers);
        if e.deadline_exceeded {
            tracing::warn!(pending = %e.describe_pending(), "the pod's activeDeadlineSeconds passed (DeadlineExceeded)");
        }
        tracing::info!(containers = %who, elapsed = ?start.elapsed(), "containers terminated (k8sapi watch)");
        Ok(e.exits)
    }

    async fn kill(&self, containers: &[String], grace: Duration) -> Result<(), RuntimeError> {
        ops::kill_gracefully(self, containers, grace).await
    }

    async fn list_container_names(&self) -> Result<Vec<String>, RuntimeError> {
        Ok(container_names(&self.pod().await?))
    }
}
