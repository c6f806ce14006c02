//! The pod manager between the API objects and the local node: a created pod is stored
//! `Pending`, given a projected service-account volume (token bound to the pod, rotated on
//! a period) and the `KUBERNETES_SERVICE_*` env, started on Docker, and its live status is
//! written back to the store (one `MODIFIED` per change). Deleting stops it with its
//! grace period, removes its containers and files, revokes its tokens, and removes the
//! object (`DELETED`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argoexec_node::{LocalNode, PodRun};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::admission::{self, Admitted};
use crate::auth::{BoundPod, Subject, Tokens};
use crate::configdata::StoreObjects;
use crate::faults::{Action, Faults};
use crate::serviceaccount::{self, Projection};
use crate::status::{ApiError, PODS};
use crate::store::Store;

/// Settings of the pod manager.
#[derive(Debug, Clone)]
pub struct PodsConfig {
    /// The API server's port (the pods' `KUBERNETES_SERVICE_PORT`).
    pub api_port: u16,
    /// Lifetime of a projected token.
    pub token_ttl: Duration,
    /// How often a pod's projected token is replaced.
    pub token_rotation: Duration,
    /// The cluster CA (`ca.crt`).
    pub ca_pem: String,
    /// Host directory for the projected volumes.
    pub sa_root: PathBuf,
}

struct Running {
    run: tokio::sync::Mutex<Option<PodRun>>,
    stop: CancellationToken,
    done: tokio::sync::Notify,
    finished: std::sync::atomic::AtomicBool,
    /// Set by the first deletion; later ones (API retries, shutdown) leave it to that one.
    deleting: std::sync::atomic::AtomicBool,
}

/// A timed fault of one pod, due `after` from now (executed by the node server).
#[derive(Debug, Clone)]
pub struct FaultEvent {
    /// The pod's namespace.
    pub ns: String,
    /// The pod's name.
    pub name: String,
    /// Delay before acting.
    pub after: Duration,
    /// What to do.
    pub action: Action,
    /// The container of the trigger.
    pub container: String,
}

/// The pod manager.
pub struct Pods {
    node: LocalNode,
    store: Arc<Store>,
    tokens: Arc<Tokens>,
    config: PodsConfig,
    /// The pods' `ca.crt` (a bundle after a CA rotation).
    ca_pem: Mutex<String>,
    /// Wakes every projection loop to write its files again now (CA rotated).
    reproject: tokio::sync::Notify,
    faults: Arc<Faults>,
    fault_tx: tokio::sync::mpsc::UnboundedSender<FaultEvent>,
    running: Mutex<HashMap<String, Arc<Running>>>,
    /// How many pods are in `running` (shutdown waits for 0).
    live: tokio::sync::watch::Sender<usize>,
}

impl Pods {
    /// A manager over `node`.
    pub fn new(
        node: LocalNode,
        store: Arc<Store>,
        tokens: Arc<Tokens>,
        config: PodsConfig,
        faults: Arc<Faults>,
        fault_tx: tokio::sync::mpsc::UnboundedSender<FaultEvent>,
    ) -> Arc<Self> {
        Arc::new(Self {
            node,
            store,
            tokens,
            ca_pem: Mutex::new(config.ca_pem.clone()),
            reproject: tokio::sync::Notify::new(),
            faults,
            fault_tx,
            config,
            running: Mutex::new(HashMap::new()),
            live: tokio::sync::watch::Sender::new(0),
        })
    }

    /// The node's name.
    pub fn node_name(&self) -> &str {
        &self.node.config().node_name
    }

    /// The node's container runtime (logs and exec).
    pub fn runtime(&self) -> &std::sync::Arc<dyn argoexec_node::runtime::ContainerRuntime> {
        self.node.runtime()
    }

    /// Validate, default, store and start a pod from its JSON body.
    ///
    /// # Errors
    /// 400/422 for bad bodies, 409 when the name is taken.
    pub fn create(self: &Arc<Self>, ns: &str, body: Value) -> Result<Arc<Value>, ApiError> {
        let Admitted { mut pod, sa_volume } =
            admission::admit(ns, body, self.node_name(), &self.faults.spec)?;
        let obj = serde_json::to_value(&pod).map_err(ApiError::internal)?;
        let stored = self.store.create(&crate::registry::PODS, ns, obj)?;
        let uid = stored["metadata"]["uid"].as_str().unwrap_or("").to_string();
        pod.metadata.uid = Some(uid.clone());
        pod.metadata.namespace = Some(ns.to_string());
        let entry = Arc::new(Running {
            run: tokio::sync::Mutex::new(None),
            stop: CancellationToken::new(),
            done: tokio::sync::Notify::new(),
            finished: false.into(),
            deleting: false.into(),
        });
        {
            let mut g = self.lock();
            g.insert(uid, entry.clone());
            self.live.send_replace(g.len());
        }
        let me = self.clone();
        tokio::spawn(async move { me.drive(pod, sa_volume, entry).await });
        Ok(stored)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Running>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run one pod until it is deleted.
    async fn drive(self: Arc<Self>, mut pod: Pod, sa_volume: Option<String>, entry: Arc<Running>) {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let sa_dir = self.config.sa_root.join(&uid);
        let mut rotation = None;
        if let Some(vol) = &sa_volume {
            match self.project(&pod, vol, &sa_dir) {
                Ok(()) => {
                    rotation = Some(
                        self.clone()
                            .rotate(pod.clone(), sa_dir.clone(), entry.stop.clone()),
                    )
                }
                Err(e) => {
                    self.fail(&ns, &name, &format!("project the service-account volume: {e}"));
                }
            }
        }
        admission::kubelet_env(&mut pod, self.config.api_port, &sa_dir);
        let objects = Arc::new(StoreObjects(self.store.clone()));
        match self.node.start_pod_with(pod, objects).await {
            Ok(run) => {
                let mut rx = run.status();
                {
                    let mut g = entry.run.lock().await;
                    if entry.stop.is_cancelled() {
                        // Deleted (or shut down) while it was starting.
                        drop(g);
                        discard(run).await;
                    } else {
                        *g = Some(run);
                    }
                }
                while !entry.stop.is_cancelled() {
                    let st = rx.borrow_and_update().clone();
                    let v = with_conditions(serde_json::to_value(&st).unwrap_or(Value::Null));
                    let _ = self.store.update(&crate::registry::PODS, &ns, &name, |o| {
                        o["status"] = v;
                        Ok(())
                    });
                    self.schedule_faults(&ns, &name, &uid, &st);
                    tokio::select! {
                        r = rx.changed() => if r.is_err() { break },
                        () = entry.stop.cancelled() => break,
                    }
                }
                // A deletion takes the run before it stops the loop; if one raced with the
                // start and found nothing to take, the run is still here: remove it now.
                if entry.stop.is_cancelled()
                    && let Some(run) = entry.run.lock().await.take()
                {
                    discard(run).await;
                }
            }
            Err(e) => self.fail(&ns, &name, &e.to_string()),
        }
        entry.finished.store(true, std::sync::atomic::Ordering::SeqCst);
        // Keep the containers (logs, final state) until the pod is deleted.
        entry.stop.cancelled().await;
        if let Some(r) = rotation {
            r.abort();
        }
        entry.done.notify_waiters();
    }

    /// Queue the timed faults that this status makes due.
    fn schedule_faults(&self, ns: &str, name: &str, uid: &str, st: &k8s_openapi::api::core::v1::PodStatus) {
        if self.faults.spec.timed.is_empty() {
            return;
        }
        let running: Vec<String> = st
            .container_statuses
            .iter()
            .flatten()
            .filter(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
            .map(|c| c.name.clone())
            .collect();
        for (after, action, container) in self.faults.due(uid, &running) {
            let _ = self.fault_tx.send(FaultEvent {
                ns: ns.into(),
                name: name.into(),
                after,
                action,
                container,
            });
        }
    }

    /// Replace the pods' `ca.crt` and rewrite every running pod's projection before
    /// returning (a real rotation distributes the new bundle before it switches the serving
    /// certificates); the projection loops are woken too, so their next write keeps it.
    pub fn set_ca(&self, pem: String) {
        *self.ca_pem.lock().unwrap_or_else(|p| p.into_inner()) = pem;
        let uids: Vec<String> = self.lock().keys().cloned().collect();
        let (pods, _) = self.store.list(&crate::registry::PODS, None);
        for obj in pods {
            let Ok(pod) = serde_json::from_value::<Pod>((*obj).clone()) else {
                continue;
            };
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let dir = self.sa_dir(&uid);
            if uids.contains(&uid)
                && dir.exists()
                && let Err(e) = self.project(&pod, "", &dir)
            {
                tracing::warn!(error = %e, pod = ?pod.metadata.name, "could not rewrite a projection");
            }
        }
        self.reproject.notify_waiters();
    }

    /// A pod of this node that is running here: its stored object and its entry.
    ///
    /// # Errors
    /// 404 when the pod is unknown or not running here.
    fn running_pod(&self, ns: &str, name: &str) -> Result<(Arc<Value>, Arc<Running>), ApiError> {
        let cur = self
            .store
            .get(&crate::registry::PODS, ns, name)
            .ok_or_else(|| ApiError::not_found(&PODS, name))?;
        let uid = cur["metadata"]["uid"].as_str().unwrap_or("");
        let entry = self
            .lock()
            .get(uid)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&PODS, name))?;
        Ok((cur, entry))
    }

    /// Evict a pod as the kubelet does under node pressure: its containers are stopped with
    /// its grace period and it ends `Failed` with reason `Evicted`.
    ///
    /// # Errors
    /// 404 when the pod is not running here.
    pub async fn evict(&self, ns: &str, name: &str) -> Result<(), ApiError> {
        let (cur, entry) = self.running_pod(ns, name)?;
        let grace = cur["spec"]["terminationGracePeriodSeconds"]
            .as_u64()
            .unwrap_or(30);
        let g = entry.run.lock().await;
        let run = g.as_ref().ok_or_else(|| ApiError::not_found(&PODS, name))?;
        tracing::warn!(pod = %name, "fault: evicting the pod");
        run.evict(Duration::from_secs(grace));
        Ok(())
    }

    /// Send SIGKILL to the PID 1 of `container` of a running pod (a fault).
    ///
    /// # Errors
    /// 404 when the pod or the container is not running here; Docker's refusal.
    pub async fn sigkill(&self, ns: &str, name: &str, container: &str) -> Result<(), ApiError> {
        let (_, entry) = self.running_pod(ns, name)?;
        let g = entry.run.lock().await;
        let run = g.as_ref().ok_or_else(|| ApiError::not_found(&PODS, name))?;
        tracing::warn!(pod = %name, container, "fault: SIGKILL to the container's PID 1");
        run.signal(container, "KILL").await.map_err(ApiError::internal)
    }

    /// Mark a pod that could not start as failed, with the node's message.
    fn fail(&self, ns: &str, name: &str, message: &str) {
        tracing::warn!(pod = %name, error = %message, "pod could not start");
        let _ = self.store.update(&crate::registry::PODS, ns, name, |o| {
            o["status"]["phase"] = json!("Failed");
            o["status"]["reason"] = json!("NodeError");
            o["status"]["message"] = json!(message);
            Ok(())
        });
    }

    fn subject(pod: &Pod) -> Subject {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let sa = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_else(|| "default".into());
        let mut s = Subject::service_account(&ns, &sa);
        s.pod = Some(BoundPod {
            namespace: ns,
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
        });
        s
    }

    /// Write the projection and point the volume at it.
    fn project(&self, pod: &Pod, _vol: &str, dir: &std::path::Path) -> std::io::Result<()> {
        let token = self.tokens.issue(Self::subject(pod), Some(self.config.token_ttl));
        serviceaccount::write(
            dir,
            &Projection {
                token: &token,
                ca_pem: &self.ca_pem.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                namespace: pod.metadata.namespace.as_deref().unwrap_or(""),
            },
        )
    }

    fn rotate(
        self: Arc<Self>,
        pod: Pod,
        dir: PathBuf,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(self.config.token_rotation) => {}
                    () = self.reproject.notified() => {}
                    () = stop.cancelled() => return,
                }
                if let Err(e) = self.project(&pod, "", &dir) {
                    tracing::warn!(error = %e, "could not rotate a projected token");
                } else {
                    tracing::debug!(
                        pod = pod.metadata.name.as_deref().unwrap_or(""),
                        "projected token rotated"
                    );
                }
            }
        })
    }

    /// The runtime's ID of a container of a running (or finished) pod.
    pub async fn container_id(&self, uid: &str, container: &str) -> Option<String> {
        let entry = self.lock().get(uid).cloned()?;
        let g = entry.run.lock().await;
        g.as_ref()?.container_id(container)
    }

    /// The runtime's IDs of every container of the pod with `uid` (pause first).
    pub async fn container_ids(&self, uid: &str) -> Vec<String> {
        let Some(entry) = self.lock().get(uid).cloned() else {
            return Vec::new();
        };
        let g = entry.run.lock().await;
        g.as_ref().map(PodRun::container_ids).unwrap_or_default()
    }

    /// The host directory of the projected volume of the pod with `uid`.
    pub fn sa_dir(&self, uid: &str) -> PathBuf {
        self.config.sa_root.join(uid)
    }

    /// Remove the node server's own host directories (after every pod is gone).
    pub fn remove_state(&self) {
        let _ = std::fs::remove_dir_all(&self.config.sa_root);
    }

    /// Delete a pod: stop it with `grace`, clean it up, then remove the object.
    /// Returns the object as it was when the deletion began.
    ///
    /// # Errors
    /// 404 when absent.
    pub fn delete(
        self: &Arc<Self>,
        ns: &str,
        name: &str,
        grace: Option<i64>,
    ) -> Result<Arc<Value>, ApiError> {
        let cur = self
            .store
            .get(&crate::registry::PODS, ns, name)
            .ok_or_else(|| ApiError::not_found(&PODS, name))?;
        if cur["metadata"]["deletionTimestamp"].is_string() {
            return Ok(cur);
        }
        let spec_grace = cur["spec"]["terminationGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(30);
        let grace = grace.unwrap_or(spec_grace).max(0);
        let marked = self.store.update(&crate::registry::PODS, ns, name, |o| {
            o["metadata"]["deletionTimestamp"] = json!(crate::store::now_rfc3339());
            o["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
            Ok(())
        })?;
        let uid = cur["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let me = self.clone();
        let (ns, name) = (ns.to_string(), name.to_string());
        tokio::spawn(async move { me.finish_delete(&ns, &name, &uid, grace).await });
        Ok(marked)
    }

    async fn finish_delete(&self, ns: &str, name: &str, uid: &str, grace: i64) {
        let entry = self.lock().get(uid).cloned();
        if let Some(entry) = &entry
            && entry.deleting.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        if let Some(entry) = entry {
            let grace = Duration::from_secs(u64::try_from(grace).unwrap_or(0));
            let run = entry.run.lock().await.take();
            if let Some(run) = run {
                run.stop(grace);
                let st = run.finished().await;
                let v = with_conditions(serde_json::to_value(&st).unwrap_or(Value::Null));
                let _ = self.store.update(&crate::registry::PODS, ns, name, |o| {
                    o["status"] = v;
                    Ok(())
                });
                if let Err(e) = run.cleanup().await {
                    tracing::warn!(pod = %name, error = %e, "pod cleanup");
                }
            }
            let done = entry.done.notified();
            entry.stop.cancel();
            if !entry.finished.load(std::sync::atomic::Ordering::SeqCst) {
                done.await;
            }
            let mut g = self.lock();
            g.remove(uid);
            self.live.send_replace(g.len());
        }
        self.tokens.revoke_pod(uid);
        let _ = std::fs::remove_dir_all(self.config.sa_root.join(uid));
        self.store.delete(&crate::registry::PODS, ns, name);
    }

    /// Delete every pod now (shutdown) and wait until they are gone.
    pub async fn shutdown(self: &Arc<Self>) {
        let (pods, _) = self.store.list(&crate::registry::PODS, None);
        let mut tasks = Vec::new();
        for p in pods {
            let ns = p["metadata"]["namespace"].as_str().unwrap_or("").to_string();
            let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
            let uid = p["metadata"]["uid"].as_str().unwrap_or("").to_string();
            let me = self.clone();
            tasks.push(tokio::spawn(async move {
                me.finish_delete(&ns, &name, &uid, 0).await
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        // Deletions already in flight finish on their own tasks: wait for them too.
        let mut live = self.live.subscribe();
        let _ = live.wait_for(|n| *n == 0).await;
    }
}

/// Stop a pod at once and remove its containers and files.
async fn discard(run: PodRun) {
    run.stop(Duration::ZERO);
    let _ = run.finished().await;
    if let Err(e) = run.cleanup().await {
        tracing::warn!(error = %e, "pod cleanup");
    }
}

/// The kubelet's pod conditions (`PodScheduled`, `Initialized`, `ContainersReady`,
/// `Ready`) derived from the container states; transition times are the pod's start.
fn with_conditions(mut status: Value) -> Value {
    let all = |key: &str, f: &dyn Fn(&Value) -> bool| status[key].as_array().is_none_or(|v| v.iter().all(f));
    let initialized = all("initContainerStatuses", &|c| {
        c["state"]["terminated"]["exitCode"] == 0
    });
    let ready = all("containerStatuses", &|c| c["ready"] == true) && status["containerStatuses"].is_array();
    let since = status["startTime"].clone();
    let cond = |t: &str, ok: bool| {
        let mut c = json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": since});
        if !ok && t != "PodScheduled" && t != "Initialized" {
            c["reason"] = json!(if status["phase"] == "Succeeded" || status["phase"] == "Failed" {
                "PodCompleted"
            } else {
                "ContainersNotReady"
            });
        }
        c
    };
    status["conditions"] = json!([
        cond("PodScheduled", true),
        cond("Initialized", initialized),
        cond("ContainersReady", ready),
        cond("Ready", ready),
    ]);
    status
}
