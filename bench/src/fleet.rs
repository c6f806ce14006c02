//! Many short steps at once on one local node, as a controller would start them: each step
//! is a pod built by the pod builder for one Argo version, created through the node's API,
//! whose wait container reports a `WorkflowTaskResult` with RBAC limited to Argo's executor
//! role. Shared by the concurrency test (`bench/tests/fleet.rs`) and the task-result benchmark
//! (`taskresult_bench`).
//!
//! Per step it records: the phase, the output parameter read back from the task result (the
//! step writes its own node ID, so a lost or crossed output shows), the task-result writes the
//! node counted for that pod (creates and patches), the `report-outputs-completed` labels seen,
//! and the time from main's exit to the label `"true"`: main's exit is the engine's
//! `State.FinishedAt` of the main container (nanoseconds; it lags the process's exit by the
//! shim's reaping, ~10–20 ms here), the label's time is when this process saw the change in
//! the node's store; both on the host's clock. (The node's own pod status is no reference:
//! it follows the engine's `die` event, which the emissary's wait often beats.)

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use argoexec_core::{ArgoVersion, ExecutorKind, Template};
use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_podbuilder::{BuildOptions, ControllerConfig, WorkflowMeta, build_pod};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

/// What to run.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// Steps started at once.
    pub steps: usize,
    /// The controller version whose pods to build.
    pub version: ArgoVersion,
    /// The executor image (also the pause image).
    pub image: String,
    /// A unique label for this node's containers.
    pub label: String,
    /// Where the node keeps pod volumes.
    pub state_dir: PathBuf,
    /// Give up after this long.
    pub limit: Duration,
}

/// One step's outcome.
#[derive(Debug, Clone, Default)]
pub struct StepReport {
    /// Pod name.
    pub name: String,
    /// Pod phase at the end.
    pub phase: String,
    /// The output parameter `id` read back from the task result.
    pub output: Option<String>,
    /// Task-result creates and patches the node counted for this pod.
    pub writes: u64,
    /// The `report-outputs-completed` values seen, in order.
    pub labels: Vec<String>,
    /// Main's exit (as seen) to the label `"true"` (as seen).
    pub exit_to_final: Option<Duration>,
}

impl StepReport {
    /// The step ended with its own output reported and finalized.
    pub fn complete(&self) -> bool {
        self.phase == "Succeeded"
            && self.output.as_deref() == Some(self.name.as_str())
            && self.labels.last().map(String::as_str) == Some("true")
    }
}

/// All steps of one run.
#[derive(Debug, Clone)]
pub struct FleetReport {
    /// Per step, in creation order.
    pub steps: Vec<StepReport>,
    /// From the first create to the last step done.
    pub wall: Duration,
}

/// An error of the driver.
pub type FleetError = Box<dyn std::error::Error + Send + Sync>;

const NS: &str = "default";

/// The step's template: write the node ID to an output parameter.
fn template() -> Template {
    Template::from_json(
        r#"{"name": "step", "container": {"image": "busybox", "command": ["sh", "-c", "printf %s \"$ARGO_NODE_ID\" > /tmp/id"]},
            "outputs": {"parameters": [{"name": "id", "valueFrom": {"path": "/tmp/id"}}]}}"#,
    )
    .expect("a valid template")
}

/// Argo's executor role for the version (v3.6+: task results only; ≤ v3.5 also pods patch).
fn rbac(version: ArgoVersion) -> String {
    let pods = if version.has_annotation_fallback() {
        "\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [patch]"
    } else {
        ""
    };
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: executor, namespace: {NS}}}\nrules:\n\
         - apiGroups: [argoproj.io]\n  resources: [workflowtaskresults]\n  verbs: [create, patch]{pods}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: executor, namespace: {NS}}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: executor}}\n\
         subjects: [{{kind: ServiceAccount, name: default, namespace: {NS}}}]\n"
    )
}

/// What the watcher has seen of one step.
#[derive(Default)]
struct Seen {
    phase: Option<String>,
    final_at: Option<SystemTime>,
    labels: Vec<String>,
}

impl Seen {
    fn done(&self) -> bool {
        match self.phase.as_deref() {
            Some("Failed") => true,
            Some("Succeeded") => self.final_at.is_some(),
            _ => false,
        }
    }
}

/// Run `cfg.steps` steps at once on a fresh node; the node is shut down (every container and
/// file removed) before returning.
///
/// # Errors
/// The node cannot start, a pod cannot be built or created, or the steps outlive the limit.
pub async fn run(cfg: &FleetConfig) -> Result<FleetReport, FleetError> {
    let node = NodeConfig {
        pause_image: cfg.image.clone(),
        node_label: cfg.label.clone(),
        state_dir: cfg.state_dir.clone(),
        ..NodeConfig::default()
    };
    let server = NodeServer::start(ServerConfig {
        node,
        watch_cache: 100_000,
        ..ServerConfig::default()
    })
    .await?;
    let result = drive(&server, cfg).await;
    server.shutdown().await;
    result
}

async fn drive(server: &NodeServer, cfg: &FleetConfig) -> Result<FleetReport, FleetError> {
    server
        .rbac()
        .load_str(&rbac(cfg.version), "fleet executor role")?;
    let wf = WorkflowMeta {
        name: format!("fleet-{}", cfg.label),
        namespace: NS.into(),
        uid: format!("uid-{}", cfg.label),
        ..WorkflowMeta::default()
    };
    let opts = BuildOptions {
        executor_image: cfg.image.clone(),
        argo_version: cfg.version,
        ..BuildOptions::default()
    };
    let (config, tpl) = (ControllerConfig::default(), template());
    let mut events = server.subscribe();
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    let start = std::time::Instant::now();
    for i in 0..cfg.steps {
        let name = format!("fleet-{i}");
        let built = build_pod(&wf, &tpl, &name, &config, ExecutorKind::Emissary, &opts)?;
        if let Some(cm) = built.config_map {
            server.create_config_map(NS, serde_json::to_value(cm)?)?;
        }
        server.create_pod(NS, serde_json::to_value(built.pod)?)?;
        seen.insert(name, Seen::default());
    }
    let deadline = tokio::time::Instant::now() + cfg.limit;
    while !seen.values().all(Seen::done) {
        let ev = tokio::select! {
            ev = events.recv() => ev,
            () = tokio::time::sleep_until(deadline) => {
                let left = seen.iter().filter(|(_, s)| !s.done()).map(|(n, _)| n.clone()).collect::<Vec<_>>();
                return Err(format!("{} steps not done after {:?}: {left:?}", left.len(), cfg.limit).into());
            }
        };
        match ev {
            Ok(ev) => note(&mut seen, &ev.object, SystemTime::now()),
            Err(RecvError::Lagged(_)) => resync(server, &mut seen),
            Err(RecvError::Closed) => return Err("the node's change feed closed".into()),
        }
    }
    let wall = start.elapsed();
    let docker = bollard::Docker::connect_with_unix_defaults()?;
    let mut steps = Vec::with_capacity(seen.len());
    for (name, s) in seen {
        let exit = main_finished(server, &docker, &name).await;
        steps.push(report(server, name, s, exit));
    }
    Ok(FleetReport { steps, wall })
}

/// The engine's `State.FinishedAt` of the pod's main container.
async fn main_finished(server: &NodeServer, docker: &bollard::Docker, pod: &str) -> Option<SystemTime> {
    for id in server.container_ids(NS, pod).await {
        let Ok(info) = docker.inspect_container(&id, None).await else {
            continue;
        };
        let labels = info.config.and_then(|c| c.labels).unwrap_or_default();
        if labels.get("io.kubernetes.container.name").map(String::as_str) == Some("main") {
            let at = info.state?.finished_at?;
            return argoexec_core::env::parse_rfc3339(&at).ok().flatten();
        }
    }
    None
}

/// Record what an object (a pod or a task result) says.
fn note(seen: &mut BTreeMap<String, Seen>, o: &Value, now: SystemTime) {
    let name = o["metadata"]["name"].as_str().unwrap_or_default();
    let Some(s) = seen.get_mut(name) else { return };
    match o["kind"].as_str() {
        Some("Pod") => {
            if let Some(p) = o["status"]["phase"].as_str() {
                s.phase = Some(p.to_string());
            }
        }
        Some("WorkflowTaskResult") => {
            let label = &o["metadata"]["labels"]["workflows.argoproj.io/report-outputs-completed"];
            if let Some(l) = label.as_str()
                && s.labels.last().map(String::as_str) != Some(l)
            {
                s.labels.push(l.to_string());
                if l == "true" && s.final_at.is_none() {
                    s.final_at = Some(now);
                }
            }
        }
        _ => {}
    }
}

/// After a lagged feed: read every step's pod and task result again.
fn resync(server: &NodeServer, seen: &mut BTreeMap<String, Seen>) {
    let now = SystemTime::now();
    let names: Vec<String> = seen.keys().cloned().collect();
    for n in names {
        if let Some(p) = server.get_pod(NS, &n) {
            note(seen, &p, now);
        }
        if let Some(t) = server.get_task_result(NS, &n) {
            note(seen, &t, now);
        }
    }
}

fn report(server: &NodeServer, name: String, s: Seen, main_exit: Option<SystemTime>) -> StepReport {
    let output = server.get_task_result(NS, &name).and_then(|t| {
        t["outputs"]["parameters"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == "id")?["value"]
            .as_str()
            .map(str::to_string)
    });
    let writes = server
        .counts(Some(&format!("{NS}/{name}")))
        .iter()
        .filter(|r| r.call.endpoint == "api" && matches!(r.call.verb.as_str(), "create" | "patch"))
        .filter(|r| r.call.path.contains("/workflowtaskresults"))
        .map(|r| r.count)
        .sum();
    let exit_to_final = match (main_exit, s.final_at) {
        (Some(e), Some(f)) => Some(f.duration_since(e).unwrap_or_default()),
        _ => None,
    };
    StepReport {
        name,
        phase: s.phase.unwrap_or_default(),
        output,
        writes,
        labels: s.labels,
        exit_to_final,
    }
}

/// The `q`-quantile (0 ≤ q ≤ 1) of `values`, nearest rank; `None` when empty.
pub fn quantile(values: &[Duration], q: f64) -> Option<Duration> {
    let mut v = values.to_vec();
    v.sort();
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    v.get(i).copied()
}

/// Writes per step, as a histogram `writes → steps`.
pub fn writes_histogram(steps: &[StepReport]) -> HashMap<u64, usize> {
    let mut h = HashMap::new();
    for s in steps {
        *h.entry(s.writes).or_insert(0) += 1;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let ms = |v: &[u64]| v.iter().map(|m| Duration::from_millis(*m)).collect::<Vec<_>>();
        let v = ms(&[50, 10, 40, 20, 30]);
        assert_eq!(quantile(&v, 0.5), Some(Duration::from_millis(30)));
        assert_eq!(quantile(&v, 0.99), Some(Duration::from_millis(50)));
        assert_eq!(quantile(&v, 0.0), Some(Duration::from_millis(10)));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
