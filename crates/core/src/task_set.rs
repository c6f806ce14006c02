//! The agent's custom resource, `WorkflowTaskSet` (`argoproj.io/v1alpha1`, plural
//! `workflowtasksets`, namespaced, with a status subresource), as Argo v3.2–v4.1 define it
//! in `workflow_taskset_types.go`.
//!
//! The controller names the set after its workflow and fills `spec.tasks` (node ID → the
//! node's resolved template: `http` or `plugin`); the agent pod runs each task once and
//! merge-patches `status.nodes` (node ID → [`NodeResult`]) on the status subresource. The
//! controller labels the set [`COMPLETED_LABEL`]`=true` when the workflow is done.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::template::{Outputs, Template};

/// `apiVersion` of a task set.
pub const API_VERSION: &str = "argoproj.io/v1alpha1";
/// Kind of a task set.
pub const KIND: &str = "WorkflowTaskSet";
/// Plural resource name.
pub const PLURAL: &str = "workflowtasksets";
/// The label the controller sets to `"true"` when the workflow has completed.
pub const COMPLETED_LABEL: &str = "workflows.argoproj.io/completed";

/// One task set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowTaskSet {
    /// `argoproj.io/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `WorkflowTaskSet`.
    #[serde(default)]
    pub kind: String,
    /// Object metadata, as the API server returned it.
    #[serde(default)]
    pub metadata: Value,
    /// The tasks.
    #[serde(default)]
    pub spec: TaskSetSpec,
    /// Their results.
    #[serde(default, skip_serializing_if = "TaskSetStatus::is_empty")]
    pub status: TaskSetStatus,
}

impl WorkflowTaskSet {
    /// Whether the controller has labelled the set completed.
    pub fn is_completed(&self) -> bool {
        self.metadata
            .pointer(&format!("/labels/{}", COMPLETED_LABEL.replace('/', "~1")))
            .and_then(Value::as_str)
            == Some("true")
    }
}

/// `spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSetSpec {
    /// Node ID → the template to run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tasks: BTreeMap<String, Template>,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSetStatus {
    /// Node ID → its result.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes: BTreeMap<String, NodeResult>,
}

impl TaskSetStatus {
    /// No results.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// A node's result as Argo's `NodeResult` (also what an executor plugin answers with).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeResult {
    /// `Pending`, `Running`, `Succeeded`, `Failed`, `Error` (Argo's node phases).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// Why, for a node that did not succeed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Its outputs (`result` for an HTTP task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Outputs>,
    /// Progress, `N/M`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub progress: String,
}

/// Node phases as Argo spells them.
pub mod phase {
    /// Not started.
    pub const PENDING: &str = "Pending";
    /// Running.
    pub const RUNNING: &str = "Running";
    /// Succeeded.
    pub const SUCCEEDED: &str = "Succeeded";
    /// Failed: the task ran and did not succeed.
    pub const FAILED: &str = "Failed";
    /// Error: the task could not be run.
    pub const ERROR: &str = "Error";
}

/// Whether `phase` is final (`Succeeded`, `Failed` or `Error`).
pub fn is_final_phase(phase: &str) -> bool {
    matches!(phase, phase::SUCCEEDED | phase::FAILED | phase::ERROR)
}

impl NodeResult {
    /// Whether the phase is final (`Succeeded`, `Failed` or `Error`).
    pub fn is_done(&self) -> bool {
        is_final_phase(&self.phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_task_set_as_the_controller_writes_it() {
        let ts: WorkflowTaskSet = serde_json::from_value(serde_json::json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": "wf", "labels": {COMPLETED_LABEL: "false"}},
            "spec": {"tasks": {
                "wf-1": {"name": "h", "http": {"url": "http://x"}},
                "wf-2": {"name": "p", "plugin": {"hello": {"text": "hi"}}}}},
            "status": {"nodes": {"wf-1": {"phase": "Succeeded", "outputs": {"result": "ok"}}}}
        }))
        .unwrap();
        assert!(!ts.is_completed());
        assert_eq!(ts.spec.tasks["wf-1"].http.as_ref().unwrap().url, "http://x");
        assert_eq!(
            ts.spec.tasks["wf-2"].plugin.as_ref().unwrap()["hello"]["text"],
            "hi"
        );
        let n = &ts.status.nodes["wf-1"];
        assert!(n.is_done());
        assert_eq!(n.outputs.as_ref().unwrap().result.as_deref(), Some("ok"));
    }

    #[test]
    fn completed_label_and_sparse_results() {
        let ts: WorkflowTaskSet = serde_json::from_value(serde_json::json!({
            "metadata": {"labels": {COMPLETED_LABEL: "true"}}}))
        .unwrap();
        assert!(ts.is_completed());
        let r = NodeResult {
            phase: phase::FAILED.into(),
            message: "no".into(),
            ..NodeResult::default()
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"phase": "Failed", "message": "no"})
        );
        assert!(!NodeResult::default().is_done());
    }
}
