//! Artifact garbage collection's custom resource, `WorkflowArtifactGCTask`
//! (`argoproj.io/v1alpha1`, plural `workflowartifactgctasks`, namespaced, with a status
//! subresource), as Argo v3.4–v4.1 define it in `artifact_gc_task_types.go`.
//!
//! The controller writes `spec.artifactsByNode` and labels the task with
//! [`GC_POD_LABEL`] = the FNV-32a hash of the GC pod's name; `argoexec artifact delete` lists
//! the tasks by that label (its value comes in [`GC_POD_ENV`]), deletes each artifact and
//! merge-patches `status.artifactResultsByNode` on the status subresource. Field names match
//! Argo's JSON; maps are ordered so reports and tests are stable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::template::{Artifact, ArtifactLocation};

/// API group of Argo's resources.
pub const GROUP: &str = "argoproj.io";
/// API version of Argo's resources.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of a task.
pub const API_VERSION: &str = "argoproj.io/v1alpha1";
/// Kind of a task.
pub const KIND: &str = "WorkflowArtifactGCTask";
/// Plural resource name of the tasks.
pub const PLURAL: &str = "workflowartifactgctasks";
/// The label selecting a GC pod's tasks.
pub const GC_POD_LABEL: &str = "workflows.argoproj.io/artifact-gc-pod";
/// The environment variable carrying [`GC_POD_LABEL`]'s value into the GC pod (Argo's
/// `ARGO_ARTIFACT_POD_NAME`; despite the name it holds the label value, a hash).
pub const GC_POD_ENV: &str = "ARGO_ARTIFACT_POD_NAME";
/// The annotation naming the GC strategy on the GC pod.
pub const GC_STRATEGY_ANNOTATION: &str = "workflows.argoproj.io/artifact-gc-strategy";

/// One task: which artifacts of which nodes to delete, and how it went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowArtifactGCTask {
    /// `argoproj.io/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `WorkflowArtifactGCTask`.
    #[serde(default)]
    pub kind: String,
    /// Object metadata, as the API server returned it.
    #[serde(default)]
    pub metadata: Value,
    /// What to delete.
    #[serde(default)]
    pub spec: ArtifactGcSpec,
    /// What was deleted.
    #[serde(default, skip_serializing_if = "ArtifactGcStatus::is_empty")]
    pub status: ArtifactGcStatus,
}

impl WorkflowArtifactGCTask {
    /// `metadata.name`, or "" when absent.
    pub fn name(&self) -> &str {
        self.metadata.get("name").and_then(Value::as_str).unwrap_or("")
    }
}

/// `spec`: artifacts per node ID.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactGcSpec {
    /// Node ID → its archive location and artifacts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts_by_node: BTreeMap<String, ArtifactNodeSpec>,
}

/// One node's artifacts to delete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactNodeSpec {
    /// The node template's archive location (key-only artifacts are relocated onto it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_location: Option<ArtifactLocation>,
    /// Artifact name → artifact.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, Artifact>,
}

/// `status`: results per node ID.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactGcStatus {
    /// Node ID → results of its artifacts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifact_results_by_node: BTreeMap<String, ArtifactResultNodeStatus>,
}

impl ArtifactGcStatus {
    /// No results at all.
    pub fn is_empty(&self) -> bool {
        self.artifact_results_by_node.is_empty()
    }
}

/// One node's results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactResultNodeStatus {
    /// Artifact name → result.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifact_results: BTreeMap<String, ArtifactResult>,
}

/// One artifact's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactResult {
    /// The artifact's name.
    pub name: String,
    /// Deleted (or already absent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub success: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The label value of a GC pod: FNV-32a of its name, in decimal (Argo's `fnv32a` helper
/// formats the hash with `%d`).
pub fn pod_label_value(pod_name: &str) -> String {
    fnv32a(pod_name).to_string()
}

/// FNV-1a, 32 bits.
pub fn fnv32a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv32a_matches_the_reference_vectors() {
        assert_eq!(fnv32a(""), 0x811c_9dc5);
        assert_eq!(fnv32a("a"), 0xe40c_292c);
        assert_eq!(fnv32a("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn task_round_trips_argos_json() {
        let text = r#"{"apiVersion":"argoproj.io/v1alpha1","kind":"WorkflowArtifactGCTask",
          "metadata":{"name":"wf-artgc-wfcomp-1-0","labels":{"workflows.argoproj.io/artifact-gc-pod":"1"}},
          "spec":{"artifactsByNode":{"wf-1":{"archiveLocation":{"s3":{"bucket":"b","endpoint":"e:9000"}},
            "artifacts":{"out":{"name":"out","s3":{"key":"wf/wf-1/out.tgz"}}}}}},
          "status":{"artifactResultsByNode":{"wf-1":{"artifactResults":{"out":{"name":"out","success":true}}}}}}"#;
        let t: WorkflowArtifactGCTask = serde_json::from_str(text).unwrap();
        assert_eq!(t.name(), "wf-artgc-wfcomp-1-0");
        let node = &t.spec.artifacts_by_node["wf-1"];
        assert_eq!(
            node.artifacts["out"].location.s3.as_ref().unwrap().key,
            "wf/wf-1/out.tgz"
        );
        assert!(t.status.artifact_results_by_node["wf-1"].artifact_results["out"].success);
        let back: Value = serde_json::to_value(&t).unwrap();
        let orig: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back["status"], orig["status"]);
        assert_eq!(back["metadata"], orig["metadata"]);
        assert_eq!(
            back.pointer("/spec/artifactsByNode/wf-1/artifacts/out/s3/key"),
            orig.pointer("/spec/artifactsByNode/wf-1/artifacts/out/s3/key")
        );
    }
}
