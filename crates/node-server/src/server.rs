//! [`NodeServer`]: the local node with its two HTTPS endpoints. Starting it generates the
//! certificates, an admin token, binds both listeners on loopback, and serves until
//! [`NodeServer::shutdown`], which deletes every pod (containers and files) first.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use argoexec_node::{LocalNode, NodeConfig};
use base64::Engine;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::auth::{Rbac, Subject, Tokens};
use crate::counts::{CountRow, Counts};
use crate::error::ServerError;
use crate::faults::{Action, FaultSpec, Faults};
use crate::http::TlsSwap;
use crate::kubelet::Kubelet;
use crate::pki::{KubeletCert, Pki};
use crate::pods::{FaultEvent, Pods, PodsConfig};
use crate::status::ApiError;
use crate::store::Store;

/// How the node's endpoints are set up.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The pods-on-Docker runtime.
    pub node: NodeConfig,
    /// API server port on 127.0.0.1 (0: any free port).
    pub api_port: u16,
    /// Kubelet port on 127.0.0.1 (0: any free port).
    pub kubelet_port: u16,
    /// The kubelet's serving certificate setup.
    pub kubelet_cert: KubeletCert,
    /// Lifetime of projected service-account tokens (3607 s, as the kubelet asks).
    pub token_ttl: Duration,
    /// Rotation period of projected tokens (the kubelet's 80 % of the TTL ≈ 48 min).
    pub token_rotation: Duration,
    /// Events kept per kind for resuming watches (the watch cache; 100 by default).
    pub watch_cache: usize,
    /// Faults to inject ([`crate::faults`]); none by default.
    pub faults: FaultSpec,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            node: NodeConfig::default(),
            api_port: 0,
            kubelet_port: 0,
            kubelet_cert: KubeletCert::default(),
            token_ttl: Duration::from_secs(3607),
            token_rotation: Duration::from_secs(2880),
            watch_cache: 100,
            faults: FaultSpec::default(),
        }
    }
}

/// The running node server.
pub struct NodeServer {
    api: Arc<Api>,
    pki: Arc<Mutex<Pki>>,
    admin_token: String,
    api_port: u16,
    kubelet_port: u16,
    node_name: String,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

async fn bind(port: u16, what: &str) -> Result<TcpListener, ServerError> {
    TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| ServerError::io(format!("bind the {what} endpoint on 127.0.0.1:{port}"), e))
}

impl NodeServer {
    /// Start the node and both endpoints.
    ///
    /// # Errors
    /// Docker unreachable, certificate generation, or a port in use.
    pub async fn start(config: ServerConfig) -> Result<Self, ServerError> {
        let node = LocalNode::connect(config.node.clone()).await?;
        let node_name = config.node.node_name.clone();
        let runtime = config.node.runtime.name();
        let pki = Pki::generate(&node_name, config.kubelet_cert)?;
        let api_l = bind(config.api_port, "API server").await?;
        let kubelet_l = bind(config.kubelet_port, "kubelet").await?;
        let port = |l: &TcpListener| l.local_addr().map(|a| a.port()).unwrap_or(0);
        let (api_port, kubelet_port) = (port(&api_l), port(&kubelet_l));
        let store = Arc::new(Store::new(config.watch_cache));
        let tokens = Arc::new(Tokens::default());
        let rbac = Arc::new(Rbac::default());
        let counts = Arc::new(Counts::default());
        if !config.faults.is_empty() {
            tracing::warn!(faults = ?config.faults, "fault injection is on");
        }
        let faults = Arc::new(Faults::new(config.faults.clone()));
        let (fault_tx, fault_rx) = mpsc::unbounded_channel();
        let sa_root = config
            .node
            .state_dir
            .join(format!("serviceaccounts-{}", config.node.node_label));
        let pods = Pods::new(
            node,
            store.clone(),
            tokens.clone(),
            PodsConfig {
                api_port,
                token_ttl: config.token_ttl,
                token_rotation: config.token_rotation,
                ca_pem: pki.ca_pem().to_string(),
                sa_root,
            },
            faults.clone(),
            fault_tx,
        );
        let admin_token = tokens.issue(Subject::admin(), None);
        let api = Arc::new(Api {
            store: store.clone(),
            registry: Arc::new(crate::registry::Registry::default()),
            pods: pods.clone(),
            tokens: tokens.clone(),
            rbac: rbac.clone(),
            counts: counts.clone(),
            faults: faults.clone(),
            kubelet_port,
            api_port,
        });
        let kubelet = Arc::new(Kubelet::new(store, pods, tokens, rbac, counts, faults));
        let shutdown = CancellationToken::new();
        let pki = Arc::new(Mutex::new(pki));
        let tasks = spawn_endpoints(&api, kubelet, &pki, (api_l, kubelet_l), fault_rx, &shutdown)?;
        tracing::info!(api_port, kubelet_port, node = %node_name, runtime, "local node endpoints are up");
        Ok(Self {
            api,
            pki,
            admin_token,
            api_port,
            kubelet_port,
            node_name,
            shutdown,
            tasks,
        })
    }

    /// `https://127.0.0.1:<port>` of the API endpoint.
    pub fn api_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.api_port)
    }

    /// The API endpoint's port.
    pub fn api_port(&self) -> u16 {
        self.api_port
    }

    /// `https://127.0.0.1:<port>` of the kubelet endpoint.
    pub fn kubelet_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.kubelet_port)
    }

    /// The kubelet endpoint's port.
    pub fn kubelet_port(&self) -> u16 {
        self.kubelet_port
    }

    /// The node's name.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// The cluster CA (PEM; the old and the new CA after a rotation).
    pub fn ca_pem(&self) -> String {
        self.pki
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ca_pem()
            .to_string()
    }

    /// The CA of the kubelet's certificate (PEM).
    pub fn kubelet_ca_pem(&self) -> String {
        self.pki
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .kubelet_ca_pem()
            .to_string()
    }

    /// The admin's bearer token (group `system:masters`).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Mint a token for service account `ns/sa` (valid for `ttl`, forever when `None`).
    pub fn issue_token(&self, ns: &str, sa: &str, ttl: Option<Duration>) -> String {
        self.api.tokens.issue(Subject::service_account(ns, sa), ttl)
    }

    /// The RBAC policy (load Role/Binding YAML into it).
    pub fn rbac(&self) -> &Rbac {
        &self.api.rbac
    }

    /// The host directory of a pod's projected service-account volume (`token`, `ca.crt`,
    /// `namespace`), while the pod exists.
    pub fn service_account_dir(&self, ns: &str, name: &str) -> Option<PathBuf> {
        let p = self.get_pod(ns, name)?;
        Some(self.api.pods.sa_dir(p["metadata"]["uid"].as_str()?))
    }

    /// What the injected faults did so far ([`Faults::report`]).
    pub fn fault_report(&self) -> Value {
        self.api.faults.report()
    }

    /// Request counts, for every pod or one (`namespace/name`).
    pub fn counts(&self, pod: Option<&str>) -> Vec<CountRow> {
        self.api.counts.snapshot(pod)
    }

    /// Create a pod as the API's POST does (as the admin).
    ///
    /// # Errors
    /// The API error a POST would answer.
    pub fn create_pod(&self, ns: &str, pod: Value) -> Result<Arc<Value>, ApiError> {
        self.api.pods.create(ns, pod)
    }

    /// Create a ConfigMap as the API's POST does (as the admin), e.g. the one a pod's
    /// offloaded template lives in; create it before the pod that mounts it.
    ///
    /// # Errors
    /// The API error a POST would answer (422 for an invalid ConfigMap, 409 when it exists).
    pub fn create_config_map(&self, ns: &str, mut config_map: Value) -> Result<Arc<Value>, ApiError> {
        crate::configdata::configmaps::admit(&mut config_map)?;
        self.api
            .store
            .create(&crate::registry::CONFIG_MAPS, ns, config_map)
    }

    /// Create a Secret as the API's POST does (as the admin): `stringData` is merged into
    /// `data`, `type` defaults to `Opaque`. Pods read it from their `secret` volumes and
    /// `secretKeyRef`/`secretRef` env; create it before the pod.
    ///
    /// # Errors
    /// The API error a POST would answer (400 for `data` that is not base64, 422 for an
    /// invalid Secret, 409 when it exists).
    pub fn create_secret(&self, ns: &str, mut secret: Value) -> Result<Arc<Value>, ApiError> {
        crate::configdata::secrets::admit(&mut secret)?;
        self.api.store.create(&crate::registry::SECRETS, ns, secret)
    }

    /// The stored object, if any.
    pub fn get_pod(&self, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.api.store.get(&crate::registry::PODS, ns, name)
    }

    /// A stored workflow task result.
    pub fn get_task_result(&self, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.api.store.get(&crate::registry::TASK_RESULTS, ns, name)
    }

    /// Every change from now on (pods and task results).
    pub fn subscribe(&self) -> crate::store::Subscription {
        match self
            .api
            .store
            .watch(&crate::registry::PODS, Some(self.api.store.version()))
        {
            Ok((_, rx)) => rx,
            Err(_) => unreachable!("the current version is never expired"),
        }
    }

    /// Delete a pod as the API's DELETE does (`grace` overrides the pod's own).
    ///
    /// # Errors
    /// 404 when absent.
    pub fn delete_pod(&self, ns: &str, name: &str, grace: Option<i64>) -> Result<(), ApiError> {
        self.api.pods.delete(ns, name, grace).map(|_| ())
    }

    /// The runtime's IDs of a pod's containers (pause first).
    pub async fn container_ids(&self, ns: &str, name: &str) -> Vec<String> {
        let Some(p) = self.get_pod(ns, name) else {
            return Vec::new();
        };
        let uid = p["metadata"]["uid"].as_str().unwrap_or("");
        self.api.pods.container_ids(uid).await
    }

    /// Every container's log (stdout and stderr as the runtime interleaved them), by container
    /// name, init containers first; containers that never ran are left out.
    pub async fn container_logs(&self, ns: &str, name: &str) -> Vec<(String, Vec<u8>)> {
        use futures::StreamExt;
        let Some(p) = self.get_pod(ns, name) else {
            return Vec::new();
        };
        let uid = p["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let names: Vec<String> = ["initContainers", "containers"]
            .iter()
            .filter_map(|k| p["spec"][*k].as_array())
            .flatten()
            .filter_map(|c| c["name"].as_str().map(str::to_string))
            .collect();
        let mut out = Vec::new();
        for c in names {
            let Some(id) = self.api.pods.container_id(&uid, &c).await else {
                continue;
            };
            let mut s = crate::logs::stream(
                self.api.pods.runtime().as_ref(),
                &id,
                &crate::logs::LogOptions::default(),
            );
            let mut log = Vec::new();
            while let Some(Ok(b)) = s.next().await {
                log.extend_from_slice(&b);
            }
            out.push((c, log));
        }
        out
    }

    /// The task results of a namespace.
    pub fn task_results(&self, ns: &str) -> Vec<Arc<Value>> {
        self.api.store.list(&crate::registry::TASK_RESULTS, Some(ns)).0
    }

    /// Compact the watch history: watches from earlier versions get `410 Expired`.
    pub fn compact(&self) -> u64 {
        self.api.store.compact()
    }

    /// A kubeconfig (YAML) for the admin.
    pub fn kubeconfig(&self) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem().as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: argoexec-local\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: argoexec-admin\n  user:\n    token: {}\ncontexts:\n- name: argoexec-local\n  context:\n    cluster: argoexec-local\n    user: argoexec-admin\n    namespace: default\ncurrent-context: argoexec-local\n",
            self.api_url(),
            self.admin_token
        )
    }

    /// Write the kubeconfig to `path` (mode 0600: it holds a token).
    ///
    /// # Errors
    /// Host I/O failures.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<PathBuf, ServerError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let err = |e| ServerError::io(format!("write kubeconfig {}", path.display()), e);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(err)?;
        f.write_all(self.kubeconfig().as_bytes()).map_err(err)?;
        Ok(path.to_path_buf())
    }

    /// Delete every pod (containers and files), then stop serving.
    pub async fn shutdown(self) {
        self.api.pods.shutdown().await;
        self.api.pods.remove_state();
        self.shutdown.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Serve both endpoints, and carry out the timed faults the pods make due, until `shutdown`.
fn spawn_endpoints(
    api: &Arc<Api>,
    kubelet: Arc<Kubelet>,
    pki: &Arc<Mutex<Pki>>,
    (api_l, kubelet_l): (TcpListener, TcpListener),
    fault_rx: mpsc::UnboundedReceiver<FaultEvent>,
    shutdown: &CancellationToken,
) -> Result<Vec<JoinHandle<()>>, ServerError> {
    let (api_tls, kubelet_tls): (TlsSwap, TlsSwap) = {
        let pki = pki.lock().unwrap_or_else(|p| p.into_inner());
        (
            Arc::new(RwLock::new(pki.api.server_config(true)?)),
            Arc::new(RwLock::new(pki.kubelet.server_config(false)?)),
        )
    };
    let (api_restart, api_restarts) = mpsc::unbounded_channel();
    let (kubelet_restart, kubelet_restarts) = mpsc::unbounded_channel();
    let actions = FaultActions {
        pki: pki.clone(),
        api_tls: api_tls.clone(),
        kubelet_tls: kubelet_tls.clone(),
        api_restart,
        kubelet_restart,
        pods: api.pods.clone(),
        faults: api.faults.clone(),
    };
    Ok(vec![
        tokio::spawn(crate::http::serve(
            api_l,
            api_tls,
            api.clone(),
            shutdown.clone(),
            api_restarts,
        )),
        tokio::spawn(crate::http::serve(
            kubelet_l,
            kubelet_tls,
            kubelet.clone(),
            shutdown.clone(),
            kubelet_restarts,
        )),
        tokio::spawn(actions.run(fault_rx, shutdown.clone())),
        tokio::spawn(kubelet.record_history(shutdown.clone())),
    ])
}

/// Carries out the timed faults ([`crate::faults::Action`]) the pods make due.
struct FaultActions {
    pki: Arc<Mutex<Pki>>,
    api_tls: TlsSwap,
    kubelet_tls: TlsSwap,
    api_restart: mpsc::UnboundedSender<Duration>,
    kubelet_restart: mpsc::UnboundedSender<Duration>,
    pods: Arc<Pods>,
    faults: Arc<Faults>,
}

impl FaultActions {
    async fn run(self, mut rx: mpsc::UnboundedReceiver<FaultEvent>, shutdown: CancellationToken) {
        let me = Arc::new(self);
        loop {
            let ev = tokio::select! {
                () = shutdown.cancelled() => return,
                ev = rx.recv() => match ev { Some(ev) => ev, None => return },
            };
            let me = me.clone();
            tokio::spawn(async move {
                tokio::time::sleep(ev.after).await;
                tracing::warn!(pod = %ev.name, action = ?ev.action, "fault: acting");
                match me.act(&ev).await {
                    Ok(()) => me.faults.acted(format!("{:?} {}/{}", ev.action, ev.ns, ev.name)),
                    Err(e) => {
                        tracing::error!(pod = %ev.name, action = ?ev.action, error = %e, "fault action failed");
                    }
                }
            });
        }
    }

    async fn act(&self, ev: &FaultEvent) -> Result<(), ActError> {
        match ev.action {
            Action::ApiRestart(down) => Ok(self.api_restart.send(down)?),
            Action::KubeletRestart(down) => Ok(self.kubelet_restart.send(down)?),
            Action::CaRotate => {
                let mut pki = self.pki.lock().unwrap_or_else(|p| p.into_inner());
                pki.rotate()?;
                let api = pki.api.server_config(true)?;
                let kubelet = pki.kubelet.server_config(false)?;
                // The bundle first, then the certificates, as a real rotation orders them.
                self.pods.set_ca(pki.ca_pem().to_string());
                *self.api_tls.write().unwrap_or_else(|p| p.into_inner()) = api;
                *self.kubelet_tls.write().unwrap_or_else(|p| p.into_inner()) = kubelet;
                Ok(())
            }
            Action::Evict => Ok(self.pods.evict(&ev.ns, &ev.name).await?),
            Action::SigKill => Ok(self.pods.sigkill(&ev.ns, &ev.name, &ev.container).await?),
            Action::Delete => Ok(self.pods.delete(&ev.ns, &ev.name, None).map(|_| ())?),
        }
    }
}

/// Why a timed fault could not be carried out.
#[derive(Debug, thiserror::Error)]
enum ActError {
    /// The endpoint it restarts has stopped serving.
    #[error("the endpoint is no longer serving")]
    Restart(#[from] mpsc::error::SendError<Duration>),
    /// New certificates could not be made.
    #[error(transparent)]
    Pki(#[from] ServerError),
    /// The pod refused it (gone, not running).
    #[error(transparent)]
    Pod(#[from] ApiError),
}
