//! One pod of `argoexec run` on the local node server: the node's API and kubelet
//! endpoints are up for the pod's executor (its wait container reports through the API,
//! with a projected service-account token), the pod is created as the API's POST would,
//! its status is followed from the server's change feed, and the outputs are read back
//! from the API objects: the `WorkflowTaskResult` named after the node ID, else the pod's
//! `workflows.argoproj.io/outputs` annotation (the fallback when RBAC forbids task results).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argoexec_core::template::Outputs;
use argoexec_core::{ArgoVersion, ExecutorKind};
use argoexec_node_server::NodeServer;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use serde_json::Value;
use tokio::sync::watch;

/// How the outputs came back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Outputs.
    pub outputs: Outputs,
    /// The step's message.
    pub message: Option<String>,
    /// `WorkflowTaskResult`, `pod annotation` or `none`.
    pub via: &'static str,
    /// The `report-outputs-completed` label values the task result went through.
    pub completed_labels: Vec<String>,
    /// The task result's metadata (name, namespace, labels, owner references) and its
    /// `progress`, when there is one.
    pub task_result: Option<Value>,
}

/// A running pod on the node server.
pub struct Session {
    server: Option<NodeServer>,
    ns: String,
    name: String,
    status: watch::Receiver<PodStatus>,
    labels: Arc<Mutex<Vec<String>>>,
    seen: Arc<Mutex<BTreeMap<String, u128>>>,
    node_id: String,
    /// The pod showed a `deletionTimestamp`.
    deleted: Arc<std::sync::atomic::AtomicBool>,
    /// This run deleted it (Ctrl-C), so the deletion is not news.
    stopped: std::sync::atomic::AtomicBool,
    /// The container that reports the step: `wait`, or `supervisor` in the init-less layout.
    aux: &'static str,
}

impl Session {
    /// Create `pod` on the started `server`, with the default RBAC of `executor` unless
    /// `rbac` directories are given.
    ///
    /// # Errors
    /// RBAC files are bad, or the API refuses the pod.
    pub async fn start(
        server: NodeServer,
        rbac: &[PathBuf],
        pod: Pod,
        executor: ExecutorKind,
        version: ArgoVersion,
    ) -> anyhow::Result<Self> {
        let ns = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let sa = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_else(|| "default".into());
        if rbac.is_empty() {
            server.rbac().load_str(
                &super::kit::executor_rbac(&ns, &sa, executor, version)?,
                "the deploy kit's executor role (deploy/rbac)",
            )?;
        }
        for dir in rbac {
            server.rbac().load_dir(dir)?;
        }
        Self::start_loaded(server, pod).await
    }

    /// Create `pod` on the started `server` whose RBAC is already loaded.
    ///
    /// # Errors
    /// The API refuses the pod.
    pub async fn start_loaded(server: NodeServer, pod: Pod) -> anyhow::Result<Self> {
        let aux = super::outcome::aux_name(&pod);
        let ns = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = pod.metadata.name.clone().unwrap_or_default();
        let node_id = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("workflows.argoproj.io/node-id").cloned())
            .unwrap_or_else(|| name.clone());
        let mut events = server.subscribe();
        let body = serde_json::to_value(&pod)?;
        let created = server
            .create_pod(&ns, body)
            .map_err(|e| anyhow::anyhow!("the node's API refused the pod: {}", e.message))?;
        let first: PodStatus = serde_json::from_value(created["status"].clone()).unwrap_or_default();
        let (tx, status) = watch::channel(first);
        let labels = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let deleted = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (l2, ns2, name2, id2, seen2, deleted2) = (
            labels.clone(),
            ns.clone(),
            name.clone(),
            node_id.clone(),
            seen.clone(),
            deleted.clone(),
        );
        tokio::spawn(async move {
            while let Ok(ev) = events.recv().await {
                let o = &ev.object;
                if o["metadata"]["namespace"] != ns2.as_str() {
                    continue;
                }
                match o["kind"].as_str() {
                    Some("Pod") if o["metadata"]["name"] == name2.as_str() => {
                        if o["metadata"]["deletionTimestamp"].is_string() {
                            deleted2.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                        if let Ok(s) = serde_json::from_value::<PodStatus>(o["status"].clone()) {
                            record_terminations(&seen2, &s);
                            let _ = tx.send(s);
                        }
                    }
                    Some("WorkflowTaskResult") if o["metadata"]["name"] == id2.as_str() => {
                        let v = o["metadata"]["labels"]["workflows.argoproj.io/report-outputs-completed"]
                            .as_str()
                            .unwrap_or("")
                            .to_string();
                        let mut g = l2.lock().unwrap_or_else(|p| p.into_inner());
                        if g.last() != Some(&v) {
                            g.push(v);
                        }
                    }
                    _ => {}
                }
            }
        });
        Ok(Self {
            server: Some(server),
            ns,
            name,
            status,
            labels,
            seen,
            node_id,
            deleted,
            stopped: std::sync::atomic::AtomicBool::new(false),
            aux,
        })
    }

    /// The container that reports the step (`wait`, or the init-less layout's `supervisor`).
    pub fn aux(&self) -> &'static str {
        self.aux
    }

    /// The step's node ID (the pod's `workflows.argoproj.io/node-id`, else its name).
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// Whether someone else deleted the pod while it ran (Argo's "pod deleted").
    pub fn deleted_by_others(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.deleted.load(Ordering::SeqCst) && !self.stopped.load(Ordering::SeqCst)
    }

    /// When the node's API first showed each container terminated (Unix nanoseconds).
    pub fn terminations_seen(&self) -> BTreeMap<String, u128> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A subscription to the pod's status.
    pub fn status(&self) -> watch::Receiver<PodStatus> {
        self.status.clone()
    }

    /// Wait until the pod is Succeeded or Failed.
    pub async fn finished(&self) -> PodStatus {
        let mut rx = self.status.clone();
        let terminal = |s: &PodStatus| matches!(s.phase.as_deref(), Some("Succeeded" | "Failed"));
        match rx.wait_for(terminal).await {
            Ok(s) => s.clone(),
            Err(_) => self.status.borrow().clone(),
        }
    }

    /// Wait until the reporting container ([`Self::aux`]) has terminated (the step's outputs are reported).
    pub async fn wait_exited(&self) {
        let mut rx = self.status.clone();
        let exited = |s: &PodStatus| {
            // A sidecar-container auxiliary (`nativeSidecar`) is among the init containers.
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
                .any(|c| c.name == self.aux && c.state.as_ref().is_some_and(|st| st.terminated.is_some()))
        };
        if rx.wait_for(exited).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Stop the pod like a deletion with `grace`.
    pub fn stop(&self, grace: Duration) {
        self.stopped.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(s) = &self.server {
            let _ = s.delete_pod(
                &self.ns,
                &self.name,
                Some(i64::try_from(grace.as_secs()).unwrap_or(0)),
            );
        }
    }

    /// Read the outputs back from the node's API objects.
    pub fn report(&self) -> Report {
        let completed_labels = self.labels.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(server) = &self.server else {
            return Report::default();
        };
        let outputs_of = |v: &Value| serde_json::from_value::<Outputs>(v.clone()).ok();
        if let Some(tr) = server.get_task_result(&self.ns, &self.node_id)
            && let Some(outputs) = outputs_of(&tr["outputs"]).or(Some(Outputs::default()))
        {
            let m = &tr["metadata"];
            return Report {
                outputs,
                message: tr["message"].as_str().map(str::to_string),
                via: "WorkflowTaskResult",
                completed_labels,
                task_result: Some(serde_json::json!({
                    "name": m["name"], "namespace": m["namespace"], "labels": m["labels"],
                    "ownerReferences": m["ownerReferences"], "progress": tr["progress"]
                })),
            };
        }
        let ann = server.get_pod(&self.ns, &self.name).and_then(|p| {
            p["metadata"]["annotations"]["workflows.argoproj.io/outputs"]
                .as_str()
                .map(str::to_string)
        });
        match ann
            .and_then(|a| serde_json::from_str::<Value>(&a).ok())
            .and_then(|v| outputs_of(&v))
        {
            Some(outputs) => Report {
                outputs,
                message: None,
                via: "pod annotation",
                completed_labels,
                task_result: None,
            },
            None => Report {
                via: "none",
                completed_labels,
                ..Default::default()
            },
        }
    }

    /// Write every container's log to `dir/<container>.log` (before cleanup).
    ///
    /// # Errors
    /// The directory cannot be written.
    pub async fn save_logs(&self, dir: &std::path::Path) -> anyhow::Result<()> {
        let Some(server) = &self.server else {
            return Ok(());
        };
        std::fs::create_dir_all(dir)?;
        for (c, log) in server.container_logs(&self.ns, &self.name).await {
            std::fs::write(dir.join(format!("{c}.log")), log)?;
        }
        Ok(())
    }

    /// What the node's injected faults did (`null` without a node).
    pub fn faults(&self) -> Value {
        self.server.as_ref().map_or(Value::Null, |s| s.fault_report())
    }

    /// The requests made with the pod's tokens, as `{endpoint, verb, path, count}`.
    pub fn requests(&self) -> Vec<Value> {
        let Some(server) = &self.server else {
            return Vec::new();
        };
        server
            .counts(Some(&format!("{}/{}", self.ns, self.name)))
            .into_iter()
            .map(|r| serde_json::json!({"endpoint": r.call.endpoint, "verb": r.call.verb, "path": r.call.path, "count": r.count}))
            .collect()
    }

    /// Docker IDs of the pod's containers.
    pub async fn container_ids(&self) -> Vec<String> {
        match &self.server {
            Some(s) => s.container_ids(&self.ns, &self.name).await,
            None => Vec::new(),
        }
    }

    /// Delete the pod and stop the server.
    ///
    /// # Errors
    /// Never today; kept for symmetry with the node's cleanup.
    pub async fn cleanup(mut self) -> anyhow::Result<()> {
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
        Ok(())
    }

    /// The node server, for another pod of the run (artifact GC); the pod stays on it until
    /// the server shuts down.
    pub fn into_server(mut self) -> Option<NodeServer> {
        self.server.take()
    }

    /// Leave the containers in place (`--keep`).
    pub fn keep(mut self) {
        if let Some(s) = self.server.take() {
            std::mem::forget(s);
        }
    }

    /// The node's message when the pod could not even start (e.g. an image is missing).
    pub fn start_failure(status: &PodStatus) -> Option<String> {
        (status.reason.as_deref() == Some("NodeError")).then(|| status.message.clone().unwrap_or_default())
    }
}

/// Note the time of every container's first terminated status.
fn record_terminations(seen: &Mutex<BTreeMap<String, u128>>, s: &PodStatus) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut m = seen.lock().unwrap_or_else(|p| p.into_inner());
    for c in s
        .container_statuses
        .iter()
        .flatten()
        .chain(s.init_container_statuses.iter().flatten())
    {
        if c.state.as_ref().is_some_and(|st| st.terminated.is_some()) {
            m.entry(c.name.clone()).or_insert(now);
        }
    }
}

/// Context for a failed start, as an error.
pub fn start_error(message: String) -> anyhow::Error {
    anyhow::anyhow!(message).context("the local node could not start the pod")
}
