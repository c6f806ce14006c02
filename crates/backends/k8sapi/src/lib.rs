//! The k8sapi backend: the runtime seam over the Kubernetes API server (kube-rs over rustls),
//! for any container runtime and no docker.sock, host paths, kubelet access or privileges.
//!
//! | seam method | API call |
//! |---|---|
//! | wait | one `watch` on the own pod ([`watch`]): returns when every named container is terminated or the pod's `DeadlineExceeded` |
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

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argoexec_core::{ExecutorKind, PodPaths};
use argoexec_kube::client::describe;
use argoexec_kube::ops::{self, PodAccess};
use argoexec_kube::podstate::{container_names, evaluate};
use argoexec_kube::{Endpoint, InClusterConfig, TlsPolicy, TokenSource};
use argoexec_runtime::{
    Capabilities, ContainerExit, ErrorKind, OutputStream, RuntimeError, RuntimeExecutor, StreamKind,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, AttachedProcess, LogParams};
use tokio::sync::watch as channel;
use tokio_util::compat::FuturesAsyncReadCompatExt;
use tokio_util::sync::CancellationToken;

pub use watch::View;

const KIND: ExecutorKind = ExecutorKind::K8sApi;

/// How long `pod()` waits for the watch's first event.
const FIRST_EVENT_TIMEOUT: Duration = Duration::from_secs(60);

struct Inner {
    api: Api<Pod>,
    server: String,
    pod_name: String,
    view: channel::Receiver<View>,
    tx: Mutex<Option<channel::Sender<View>>>,
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
}

impl std::fmt::Debug for K8sApiExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("K8sApiExecutor")
            .field("server", &self.inner.server)
            .field("pod", &self.inner.pod_name)
            .finish_non_exhaustive()
    }
}

fn error(kind: ErrorKind, action: &'static str, container: &str, m: impl Into<String>) -> RuntimeError {
    RuntimeError::new(kind, KIND, action, container, m)
}

impl K8sApiExecutor {
    /// Set up for the pod `namespace`/`pod_name` with the in-cluster configuration of
    /// `paths` (`KUBERNETES_SERVICE_HOST`/`PORT`, the service-account token and `ca.crt`).
    /// Nothing is dialled until the first operation.
    ///
    /// # Errors
    /// `Fatal` when no API server is configured or the token/CA is unusable.
    pub fn new(paths: &PodPaths, namespace: &str, pod_name: &str) -> Result<Self, RuntimeError> {
        let setup = |m: String| error(ErrorKind::Fatal, "connect to", "API server", m);
        let ic = InClusterConfig::from_env(paths)
            .map_err(|e| setup(e.to_string()))?
            .ok_or_else(|| {
                setup("the k8sapi executor needs the API server: KUBERNETES_SERVICE_HOST is unset or the service-account token is missing".into())
            })?;
        let token = Arc::new(TokenSource::new(ic.token_file()).map_err(|e| setup(e.to_string()))?);
        let client = Endpoint {
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
        .map_err(|e| setup(e.to_string()))?;
        let (tx, view) = channel::channel(View::Unknown);
        tracing::info!(server = %ic.server, "k8sapi executor");
        Ok(Self {
            inner: Arc::new(Inner {
                api: Api::namespaced(client, namespace),
                server: ic.server,
                pod_name: pod_name.into(),
                view,
                tx: Mutex::new(Some(tx)),
                stop: CancellationToken::new(),
            }),
        })
    }

    /// Start the shared watch on first use.
    fn ensure_watch(&self) -> channel::Receiver<View> {
        let tx = self.inner.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(tx) = tx {
            let i = &self.inner;
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

    /// Wait until `done(pod)` holds, the pod is gone, the watch failed, `timeout` passed or
    /// `cancel` fired. Returns the last pod seen (`None` on time-out before any event).
    async fn until(
        &self,
        who: &str,
        done: impl Fn(&Pod) -> bool,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<Option<Arc<Pod>>, RuntimeError> {
        let mut rx = self.ensure_watch();
        let settled = |v: &View| match v {
            View::Unknown => false,
            View::Pod(p) => done(p),
            View::Gone | View::Failed(..) => true,
        };
        let waited = async {
            match rx.wait_for(settled).await {
                Ok(v) => Some(v.clone()),
                Err(_) => None,
            }
        };
        let sleep = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let view = tokio::select! {
            () = cancel.cancelled() => return Err(error(ErrorKind::Cancelled, "wait for", who, "cancelled")),
            () = sleep => self.inner.view.borrow().clone(),
            v = waited => v.unwrap_or(View::Failed(ErrorKind::Fatal, "the pod watch stopped".into())),
        };
        match view {
            View::Unknown => Ok(None),
            View::Pod(p) => Ok(Some(p)),
            View::Gone => Err(error(
                ErrorKind::NotFound,
                "wait for",
                who,
                format!("pod {} was deleted", self.inner.pod_name),
            )),
            View::Failed(kind, m) => Err(error(kind, "wait for", who, m)),
        }
    }
}

impl PodAccess for K8sApiExecutor {
    fn backend(&self) -> ExecutorKind {
        KIND
    }

    async fn pod(&self) -> Result<Pod, RuntimeError> {
        let never = CancellationToken::new();
        match self
            .until("pod", |_| true, Some(FIRST_EVENT_TIMEOUT), &never)
            .await?
        {
            Some(p) => Ok((*p).clone()),
            None => Err(error(
                ErrorKind::Transient,
                "get",
                "pod",
                format!(
                    "no event from the pod watch on {} within {FIRST_EVENT_TIMEOUT:?}",
                    self.inner.server
                ),
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
