//! Assessing a finished pod the way Argo's controller assesses a node, and printing it.
//!
//! Phase: `Error` when an init container or the wait container failed (the executor's own
//! failure, with its termination message); `Failed` when a main container exited non-zero
//! (`"<reason> (exit code N)"`, or the message the wait container reported, e.g. a
//! deadline), when a sidecar failed other than by our kill (137/143 are ignored, as Argo
//! does), or when the pod's deadline passed; `Succeeded` otherwise.

use std::path::Path;

use argoexec_core::template::{Outputs, SUPERVISOR, WAIT};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};
use serde_json::{Value, json};

/// The node phase of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Everything exited 0.
    Succeeded,
    /// The user's code failed.
    Failed,
    /// The executor (or the node) failed.
    Error,
}

impl Phase {
    /// Argo's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Error => "Error",
        }
    }

    /// `argoexec run`'s exit status: 0, 1, 2.
    pub fn exit_status(self) -> i32 {
        match self {
            Self::Succeeded => 0,
            Self::Failed => 1,
            Self::Error => 2,
        }
    }
}

/// The assessed result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Node phase.
    pub phase: Phase,
    /// Why it is not Succeeded (or the reported message).
    pub message: Option<String>,
    /// The main container's exit code.
    pub exit_code: Option<i32>,
    /// What the wait container reported.
    pub outputs: Outputs,
    /// How the report came back: `WorkflowTaskResult`, `pod annotation` or `none`.
    pub report_via: &'static str,
    /// The task result's `report-outputs-completed` label values, in order.
    pub completed_labels: Vec<String>,
    /// The task result's metadata, when the report came as one.
    pub task_result: Option<Value>,
    /// Every container's end: `{name, exitCode, reason}` (init containers first).
    pub containers: Vec<Value>,
    /// The requests the pod's service account made to the node, by endpoint, verb, path.
    pub requests: Vec<Value>,
    /// What the node's injected faults did, when `--faults` was given.
    pub faults: Option<Value>,
    /// When the node's API first showed each container terminated (Unix nanoseconds): the
    /// "status change" the wait-notice benchmark measures from.
    pub terminated_seen: std::collections::BTreeMap<String, u128>,
    /// What `--artifact-gc` did.
    pub artifact_gc: Option<super::gc::GcOutcome>,
}

/// The container that reports the step: the init-less layout's `supervisor` (the container
/// of that name with `ARGO_INITLESS_POD=true`), else `wait`. A user container may be called
/// `supervisor` in the legacy layout.
pub fn aux_name(pod: &Pod) -> &'static str {
    // A sidecar-container (`nativeSidecar`) auxiliary is among the init containers.
    let initless = pod
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
        .any(|c| {
            c.name == SUPERVISOR
                && c.env.iter().flatten().any(|e| {
                    e.name == argoexec_core::ready::INITLESS_POD_ENV && e.value.as_deref() == Some("true")
                })
        });
    if initless { SUPERVISOR } else { WAIT }
}

/// Init-less layout: main's 65 means the supervisor never made the pod ready; its own status
/// says why (Argo ranks the supervisor first then).
fn pre_main_failure(status: &PodStatus, mains: &[String], aux: &str) -> Option<String> {
    if aux != SUPERVISOR {
        return None;
    }
    let statuses = || status.container_statuses.iter().flatten();
    let term = |c: &ContainerStatus| c.state.as_ref().and_then(|s| s.terminated.clone());
    let pre_main = statuses()
        .filter(|c| mains.contains(&c.name))
        .any(|c| term(c).is_some_and(|t| t.exit_code == argoexec_core::exit::SUPERVISOR_PRE_MAIN));
    let sup = statuses().find(|c| c.name == SUPERVISOR).and_then(term)?;
    (pre_main && sup.exit_code != 0).then(|| {
        let m = sup.message.filter(|m| !m.trim().is_empty()).map_or_else(
            || {
                format!(
                    "{} (exit code {})",
                    sup.reason.unwrap_or_else(|| "Error".into()),
                    sup.exit_code
                )
            },
            |m| m.trim().to_string(),
        );
        format!("supervisor: {m}")
    })
}

/// Assess `status` given the main container names, the container that reports (`aux`:
/// [`aux_name`]) and its report.
pub fn assess(
    status: &PodStatus,
    mains: &[String],
    aux: &str,
    report: Option<(&Outputs, Option<&str>)>,
) -> Outcome {
    let outputs = report.map(|(o, _)| o.clone()).unwrap_or_default();
    let reported = report.and_then(|(_, m)| m).map(str::to_string);
    let term = |c: &ContainerStatus| c.state.as_ref().and_then(|s| s.terminated.clone());
    let describe = |c: &ContainerStatus| {
        term(c).map(|t| match t.message.filter(|m| !m.trim().is_empty()) {
            Some(m) => m.trim().to_string(),
            None => format!(
                "{} (exit code {})",
                t.reason.unwrap_or_else(|| "Error".into()),
                t.exit_code
            ),
        })
    };
    // The first non-zero exit of a main container, else the first main's exit.
    let main_codes: Vec<i32> = status
        .container_statuses
        .iter()
        .flatten()
        .filter(|c| mains.contains(&c.name))
        .filter_map(|c| term(c).map(|t| t.exit_code))
        .collect();
    let main_exit = main_codes
        .iter()
        .copied()
        .find(|c| *c != 0)
        .or(main_codes.first().copied());
    let done = |phase, message: Option<String>| Outcome {
        phase,
        message,
        exit_code: main_exit,
        outputs: outputs.clone(),
        report_via: "none",
        completed_labels: Vec::new(),
        task_result: None,
        containers: containers(status),
        requests: Vec::new(),
        faults: None,
        terminated_seen: Default::default(),
        artifact_gc: None,
    };

    // The auxiliary container as a sidecar container is judged with the others below.
    for c in status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(|c| c.name != aux)
    {
        if let Some(t) = term(c).filter(|t| t.exit_code != 0) {
            let m = describe(c).unwrap_or_default();
            return done(
                Phase::Error,
                Some(format!(
                    "init container {:?} failed (exit code {}): {m}",
                    c.name, t.exit_code
                )),
            );
        }
    }
    if status.reason.as_deref() == Some("Evicted") {
        // Argo takes a failed pod's own message (here the kubelet's eviction notice).
        let m = status.message.clone().unwrap_or_default();
        return done(Phase::Failed, Some(m.trim().to_string()));
    }
    if status.reason.as_deref() == Some("DeadlineExceeded") {
        return done(
            Phase::Failed,
            Some(argoexec_core::exit::DEADLINE_MESSAGE.to_string()),
        );
    }
    let statuses = || status.container_statuses.iter().flatten();
    let is_aux = |c: &ContainerStatus| c.name == aux;
    if let Some(m) = pre_main_failure(status, mains, aux) {
        return done(Phase::Error, Some(m));
    }
    for c in statuses().filter(|c| mains.contains(&c.name)) {
        if let Some(t) = term(c).filter(|t| t.exit_code != 0) {
            let reason = t.reason.clone().unwrap_or_else(|| "Error".into());
            let code = format!("{reason} (exit code {})", t.exit_code);
            // The container's own termination message says most (e.g. the wrapper's "exec:
            // executable file not found"); then the wait container's report; then the code.
            let own = t.message.as_deref().map(str::trim).filter(|m| !m.is_empty());
            let m = match (own, &reported) {
                (Some(own), _) => format!("{code}: {own}"),
                (None, Some(rep)) => rep.clone(),
                (None, None) => code,
            };
            return done(Phase::Failed, Some(m));
        }
    }
    let aux_status = status.init_container_statuses.iter().flatten().chain(statuses());
    for c in aux_status.filter(|c| is_aux(c)) {
        if term(c).is_some_and(|t| t.exit_code != 0) {
            return done(Phase::Error, describe(c).or(reported));
        }
    }
    for c in status
        .container_statuses
        .iter()
        .flatten()
        .filter(|c| !is_aux(c) && !mains.contains(&c.name))
    {
        if let Some(t) = term(c).filter(|t| !matches!(t.exit_code, 0 | 137 | 143)) {
            return done(
                Phase::Failed,
                Some(format!(
                    "sidecar {:?}: {}",
                    c.name,
                    describe(c).unwrap_or_else(|| t.exit_code.to_string())
                )),
            );
        }
    }
    // A container that never ran: say why when the node said (CreateContainerConfigError
    // with the kubelet's message, a refused image, …), as Argo's controller takes it from
    // the waiting state.
    // An init container's cause comes first: the others then only wait (PodInitializing).
    let never_ran: Vec<&ContainerStatus> = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(statuses())
        .filter(|c| term(c).is_none())
        .collect();
    if statuses().any(|c| term(c).is_none()) {
        let waiting = never_ran.iter().find_map(|c| {
            let w = c.state.as_ref()?.waiting.as_ref()?;
            let reason = w.reason.clone().unwrap_or_default();
            let message = w.message.clone().unwrap_or_default();
            let informative = !matches!(reason.as_str(), "" | "PodInitializing" | "ContainerCreating");
            (informative || !message.is_empty())
                .then(|| format!("container {:?} did not run: {reason}: {message}", c.name))
        });
        return done(
            Phase::Error,
            reported
                .or(waiting)
                .or_else(|| Some("pod ended before all its containers ran".into())),
        );
    }
    if reported.is_some() {
        // The wait container reported a failure but exited 0 (e.g. a deadline it handled).
        return done(Phase::Failed, reported);
    }
    done(Phase::Succeeded, None)
}

/// The `-o json` document. Artifact paths are host paths in the local repository.
pub fn to_json(o: &Outcome, repo_mount: &str, repo_host: &Path) -> Value {
    let params: Vec<Value> = o
        .outputs
        .parameters
        .iter()
        .map(|p| json!({"name": p.name, "value": p.value}))
        .collect();
    let arts: Vec<Value> = o
        .outputs
        .artifacts
        .iter()
        .map(|a| {
            let mut v = json!({"name": a.name, "path": host_path(a, repo_mount, repo_host)});
            if let Some(s3) = &a.location.s3 {
                v["s3"] = json!({"bucket": s3.bucket, "key": s3.key});
            }
            if let Some(p) = a.location.extra.get("plugin") {
                v["plugin"] = json!({"name": p.get("name"), "key": p.get("key")});
            }
            v
        })
        .collect();
    let mut out = json!({
        "phase": o.phase.as_str(),
        "message": o.message,
        "exitCode": o.exit_code,
        "outputs": {"result": o.outputs.result, "parameters": params, "artifacts": arts},
        "report": {"via": o.report_via, "completedLabels": o.completed_labels, "taskResult": o.task_result},
        "containers": o.containers,
        "requests": o.requests,
        "terminatedSeenUnixNanos": o.terminated_seen,
    });
    if let Some(f) = &o.faults {
        out["faults"] = f.clone();
    }
    if let Some(gc) = &o.artifact_gc {
        out["artifactGC"] = gc.to_json();
    }
    out
}

/// Every container's final state, init containers first.
fn containers(status: &PodStatus) -> Vec<Value> {
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .map(|c| {
            let t = c.state.as_ref().and_then(|s| s.terminated.as_ref());
            json!({"name": c.name, "exitCode": t.map(|t| t.exit_code), "reason": t.and_then(|t| t.reason.clone())})
        })
        .collect()
}

/// Where the local repository holds artifact `a` on the host, if it is there.
pub fn host_path(
    a: &argoexec_core::template::Artifact,
    repo_mount: &str,
    repo_host: &Path,
) -> Option<String> {
    let p = a.location.local.as_ref()?.path.clone();
    let rel = p.strip_prefix(repo_mount)?.trim_start_matches('/');
    Some(repo_host.join(rel).display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(v: Value) -> PodStatus {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_container_that_never_ran_says_why() {
        let s = status(json!({"phase": "Failed", "containerStatuses": [
            {"name": "wait", "image": "e", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0}}},
            {"name": "main", "image": "b", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"waiting": {"reason": "CreateContainerConfigError",
                                    "message": "secret \"db\" not found"}}}]}));
        let o = assess(&s, &["main".to_string()], WAIT, None);
        assert_eq!(o.phase, Phase::Error);
        assert_eq!(
            o.message.as_deref(),
            Some("container \"main\" did not run: CreateContainerConfigError: secret \"db\" not found")
        );
        // An init container refused: its cause, not the others' PodInitializing.
        let waiting = |name: &str, reason: &str, message: &str| {
            json!({"name": name, "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                   "state": {"waiting": {"reason": reason, "message": message}}})
        };
        let s = status(json!({"phase": "Failed",
            "initContainerStatuses": [waiting("init", "CreateContainerConfigError", "container has runAsNonRoot and image will run as root")],
            "containerStatuses": [waiting("wait", "PodInitializing", ""), waiting("main", "PodInitializing", "")]}));
        let o = assess(&s, &["main".to_string()], WAIT, None);
        assert_eq!(
            o.message.as_deref(),
            Some(
                "container \"init\" did not run: CreateContainerConfigError: container has runAsNonRoot and image will run as root"
            )
        );
        let bare = status(json!({"containerStatuses": [
            {"name": "main", "image": "b", "imageID": "", "ready": false, "restartCount": 0, "state": {}}]}));
        let o = assess(&bare, &["main".to_string()], WAIT, None);
        assert_eq!(
            o.message.as_deref(),
            Some("pod ended before all its containers ran")
        );
    }
}
