//! The request bodies of the API reporter, as pure functions of the step's identity.
//!
//! A `WorkflowTaskResult` (`argoproj.io/v1alpha1`, namespaced, plural
//! `workflowtaskresults`) is named after the node ID and carries Argo's `NodeResult`
//! inlined at the top level: `outputs` (the same JSON the [`crate::FileReporter`] writes),
//! `message` and `progress` when set. `phase` is the controller's, never set here.
//! Its labels tell the controller's informer which workflow it belongs to and whether the
//! outputs are complete (the v3.5 `report-outputs-completed` handshake, k8s-wire-protocols
//! §2.7). The fallback for pods without RBAC on task results is Argo's legacy pod
//! annotation merge-patch (argo-executors §4.5).

use std::collections::BTreeMap;

use argoexec_core::ExecutorEnv;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use crate::NodeResult;

/// API group/version of Argo's resources.
pub const ARGO_API_VERSION: &str = "argoproj.io/v1alpha1";
/// Kind of the task result.
pub const TASK_RESULT_KIND: &str = "WorkflowTaskResult";
/// Plural (URL segment) of the task result.
pub const TASK_RESULT_PLURAL: &str = "workflowtaskresults";
/// Label naming the workflow.
pub const LABEL_WORKFLOW: &str = "workflows.argoproj.io/workflow";
/// Label naming the controller instance (only when `ARGO_INSTANCE_ID` is set).
pub const LABEL_INSTANCE_ID: &str = "workflows.argoproj.io/controller-instanceid";
/// Label of the v3.5 handshake: `"false"` while outputs are coming, `"true"` once reported.
pub const LABEL_REPORT_COMPLETED: &str = "workflows.argoproj.io/report-outputs-completed";
/// Pod annotation with the outputs JSON (fallback).
pub const ANNOTATION_OUTPUTS: &str = "workflows.argoproj.io/outputs";
/// Pod annotation with the progress `N/M` (fallback).
pub const ANNOTATION_PROGRESS: &str = "workflows.argoproj.io/progress";

/// Who owns the task result, so that Kubernetes' garbage collector deletes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The Workflow (`argoproj.io/v1alpha1`), Argo v3.5.2+: the result outlives the pod,
    /// which matters when pods are deleted before the controller has read it.
    Workflow {
        /// `ARGO_WORKFLOW_NAME`.
        name: String,
        /// `ARGO_WORKFLOW_UID`.
        uid: String,
    },
    /// The Pod (`v1`), Argo v3.3.x–v3.5.1, for controllers that do not set
    /// `ARGO_WORKFLOW_UID`.
    Pod {
        /// `ARGO_POD_NAME`.
        name: String,
        /// `ARGO_POD_UID`.
        uid: String,
    },
}

impl Owner {
    /// The owner reference. Neither `controller` nor `blockOwnerDeletion` is set: the
    /// latter needs permission to set finalizers on the owner, which workflow pods lack.
    pub fn reference(&self) -> OwnerReference {
        let (api_version, kind, name, uid) = match self {
            Self::Workflow { name, uid } => (ARGO_API_VERSION, "Workflow", name, uid),
            Self::Pod { name, uid } => ("v1", "Pod", name, uid),
        };
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.clone(),
            uid: uid.clone(),
            ..Default::default()
        }
    }
}

/// Which task result (and which pod, for the fallback) this step reports to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResultTarget {
    /// The pod's namespace (`ARGO_NAMESPACE`, else the service account's namespace).
    pub namespace: String,
    /// The task result's name: `ARGO_NODE_ID`, else the pod name.
    pub name: String,
    /// `ARGO_POD_NAME`: the pod patched by the fallback.
    pub pod_name: String,
    /// `ARGO_WORKFLOW_NAME`, the `workflow` label (left out when unset).
    pub workflow_name: Option<String>,
    /// `ARGO_INSTANCE_ID`, the `controller-instanceid` label.
    pub instance_id: Option<String>,
    /// The owner reference: the Workflow when `ARGO_WORKFLOW_UID` (and the workflow name)
    /// are set, else the Pod when `ARGO_POD_UID` is, else none.
    pub owner: Option<Owner>,
}

impl TaskResultTarget {
    /// The target described by the executor environment, in `namespace`.
    pub fn from_env(env: &ExecutorEnv, namespace: impl Into<String>) -> Self {
        let owner = match (&env.workflow_name, &env.workflow_uid, &env.pod_uid) {
            (Some(name), Some(uid), _) => Some(Owner::Workflow {
                name: name.clone(),
                uid: uid.clone(),
            }),
            (_, _, Some(uid)) => Some(Owner::Pod {
                name: env.pod_name.clone(),
                uid: uid.clone(),
            }),
            _ => None,
        };
        Self {
            namespace: namespace.into(),
            name: env.node_id.clone().unwrap_or_else(|| env.pod_name.clone()),
            pod_name: env.pod_name.clone(),
            workflow_name: env.workflow_name.clone(),
            instance_id: env.instance_id.clone(),
            owner,
        }
    }

    /// The labels, with the handshake label set to `completed`.
    pub fn labels(&self, completed: bool) -> BTreeMap<String, String> {
        let mut l = BTreeMap::new();
        if let Some(wf) = &self.workflow_name {
            l.insert(LABEL_WORKFLOW.to_string(), wf.clone());
        }
        if let Some(id) = &self.instance_id {
            l.insert(LABEL_INSTANCE_ID.to_string(), id.clone());
        }
        l.insert(LABEL_REPORT_COMPLETED.to_string(), completed.to_string());
        l
    }

    /// The collection path, `/apis/argoproj.io/v1alpha1/namespaces/<ns>/workflowtaskresults`.
    pub fn collection_path(&self) -> String {
        format!(
            "/apis/{ARGO_API_VERSION}/namespaces/{}/{TASK_RESULT_PLURAL}",
            self.namespace
        )
    }

    /// The task result's path.
    pub fn item_path(&self) -> String {
        format!("{}/{}", self.collection_path(), self.name)
    }

    /// The pod's path, `/api/v1/namespaces/<ns>/pods/<pod>`.
    pub fn pod_path(&self) -> String {
        format!("/api/v1/namespaces/{}/pods/{}", self.namespace, self.pod_name)
    }

    /// How errors name the task result: `workflowtaskresult <ns>/<name>`.
    pub fn describe(&self) -> String {
        format!("workflowtaskresult {}/{}", self.namespace, self.name)
    }

    /// How errors name the pod: `pod <ns>/<name>`.
    pub fn describe_pod(&self) -> String {
        format!("pod {}/{}", self.namespace, self.pod_name)
    }

    /// The body of the create (POST). `None` is the start of the handshake: no outputs
    /// and `report-outputs-completed: "false"`; `Some(result)` is the final report with
    /// the label `"true"`.
    pub fn create_body(&self, result: Option<&NodeResult>) -> Value {
        let meta = ObjectMeta {
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            labels: Some(self.labels(result.is_some())),
            owner_references: self.owner.as_ref().map(|o| vec![o.reference()]),
            ..Default::default()
        };
        let mut body = json!({
            "apiVersion": ARGO_API_VERSION,
            "kind": TASK_RESULT_KIND,
            "metadata": meta,
        });
        if let Some(r) = result {
            add_result(&mut body, r);
        }
        body
    }

    /// The JSON merge patch applied when the create answers 409 AlreadyExists: the labels
    /// (handshake label as in [`Self::create_body`]) and, for the final report, the result.
    /// The owner references are left as they are.
    pub fn patch_body(&self, result: Option<&NodeResult>) -> Value {
        let mut body = json!({ "metadata": { "labels": self.labels(result.is_some()) } });
        if let Some(r) = result {
            add_result(&mut body, r);
        }
        body
    }
}

/// `outputs` always (the file sink's shape), `message` and `progress` when set.
fn add_result(body: &mut Value, r: &NodeResult) {
    body["outputs"] = json!(r.outputs);
    if let Some(m) = &r.message {
        body["message"] = json!(m);
    }
    if let Some(p) = &r.progress {
        body["progress"] = json!(p);
    }
}

/// The merge patch of a progress tick on the task result (v3.6+).
pub fn progress_patch(progress: &str) -> Value {
    json!({ "progress": progress })
}

/// The merge patch of a progress tick on the pod's annotation (≤ v3.5).
pub fn pod_progress_patch(progress: &str) -> Value {
    json!({ "metadata": { "annotations": { ANNOTATION_PROGRESS: progress } } })
}

/// The fallback merge patch of the pod: annotation `workflows.argoproj.io/outputs` (the
/// outputs JSON, always) and `workflows.argoproj.io/progress` when progress is set. The
/// handshake has no place here.
pub fn pod_annotation_patch(r: &NodeResult) -> Value {
    let outputs = serde_json::to_string(&r.outputs).unwrap_or_else(|_| "{}".into());
    let mut ann = serde_json::Map::new();
    ann.insert(ANNOTATION_OUTPUTS.into(), json!(outputs));
    if let Some(p) = &r.progress {
        ann.insert(ANNOTATION_PROGRESS.into(), json!(p));
    }
    json!({ "metadata": { "annotations": ann } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use argoexec_core::template::Outputs;

    fn env(pairs: &[(&str, &str)]) -> ExecutorEnv {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ExecutorEnv::parse(|k| m.get(k).cloned()).unwrap()
    }

    fn full() -> ExecutorEnv {
        env(&[
            ("ARGO_POD_NAME", "wf-main-123"),
            ("ARGO_POD_UID", "pod-uid"),
            ("ARGO_NODE_ID", "wf-123"),
            ("ARGO_WORKFLOW_NAME", "wf"),
            ("ARGO_WORKFLOW_UID", "wf-uid"),
            ("ARGO_INSTANCE_ID", "i1"),
        ])
    }

    fn result() -> NodeResult {
        NodeResult {
            outputs: Outputs {
                result: Some("hi".into()),
                exit_code: Some("0".into()),
                ..Default::default()
            },
            message: Some("boom".into()),
            progress: Some("1/2".into()),
        }
    }

    #[test]
    fn start_body_has_labels_owner_and_no_outputs() {
        let t = TaskResultTarget::from_env(&full(), "argo");
        let b = t.create_body(None);
        assert_eq!(
            b,
            json!({
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "WorkflowTaskResult",
                "metadata": {
                    "name": "wf-123",
                    "namespace": "argo",
                    "labels": {
                        "workflows.argoproj.io/controller-instanceid": "i1",
                        "workflows.argoproj.io/report-outputs-completed": "false",
                        "workflows.argoproj.io/workflow": "wf",
                    },
                    "ownerReferences": [{
                        "apiVersion": "argoproj.io/v1alpha1",
                        "kind": "Workflow",
                        "name": "wf",
                        "uid": "wf-uid",
                    }],
                },
            })
        );
        assert_eq!(
            t.collection_path(),
            "/apis/argoproj.io/v1alpha1/namespaces/argo/workflowtaskresults"
        );
        assert_eq!(
            t.item_path(),
            "/apis/argoproj.io/v1alpha1/namespaces/argo/workflowtaskresults/wf-123"
        );
        assert_eq!(t.pod_path(), "/api/v1/namespaces/argo/pods/wf-main-123");
    }

    #[test]
    fn final_body_has_outputs_message_progress_and_completed() {
        let t = TaskResultTarget::from_env(&full(), "argo");
        let b = t.create_body(Some(&result()));
        assert_eq!(b["outputs"], json!({"result": "hi", "exitCode": "0"}));
        assert_eq!(b["message"], "boom");
        assert_eq!(b["progress"], "1/2");
        assert!(b.get("phase").is_none());
        assert_eq!(b["metadata"]["labels"][LABEL_REPORT_COMPLETED], "true");
        let p = t.patch_body(Some(&result()));
        assert_eq!(p["metadata"]["labels"][LABEL_REPORT_COMPLETED], "true");
        assert_eq!(p["metadata"]["labels"][LABEL_WORKFLOW], "wf");
        assert!(p["metadata"].get("ownerReferences").is_none());
        assert_eq!(p["outputs"]["result"], "hi");
        let start = t.patch_body(None);
        assert_eq!(start, json!({"metadata": {"labels": t.labels(false)}}));
        // Empty outputs still appear (as the file sink writes them); unset fields do not.
        let empty = t.create_body(Some(&NodeResult::default()));
        assert_eq!(empty["outputs"], json!({}));
        assert!(empty.get("message").is_none() && empty.get("progress").is_none());
    }

    #[test]
    fn owner_and_name_fallbacks() {
        let t = TaskResultTarget::from_env(
            &env(&[
                ("ARGO_POD_NAME", "p"),
                ("ARGO_POD_UID", "u"),
                ("ARGO_WORKFLOW_NAME", "wf"),
            ]),
            "ns",
        );
        assert_eq!(t.name, "p", "no node ID: the pod name");
        assert_eq!(
            t.owner,
            Some(Owner::Pod {
                name: "p".into(),
                uid: "u".into()
            })
        );
        let r = serde_json::to_value(t.owner.unwrap().reference()).unwrap();
        assert_eq!(
            r,
            json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"})
        );
        let t = TaskResultTarget::from_env(&env(&[("ARGO_POD_NAME", "p")]), "ns");
        assert_eq!(t.owner, None);
        let b = t.create_body(None);
        assert!(b["metadata"].get("ownerReferences").is_none());
        assert_eq!(
            b["metadata"]["labels"],
            json!({"workflows.argoproj.io/report-outputs-completed": "false"})
        );
    }

    #[test]
    fn pod_fallback_patch() {
        let p = pod_annotation_patch(&result());
        let ann = &p["metadata"]["annotations"];
        let outputs: Value = serde_json::from_str(ann[ANNOTATION_OUTPUTS].as_str().unwrap()).unwrap();
        assert_eq!(outputs, json!({"result": "hi", "exitCode": "0"}));
        assert_eq!(ann[ANNOTATION_PROGRESS], "1/2");
        assert!(ann.get(LABEL_REPORT_COMPLETED).is_none());
        let p = pod_annotation_patch(&NodeResult::default());
        assert_eq!(
            p,
            json!({"metadata": {"annotations": {ANNOTATION_OUTPUTS: "{}"}}})
        );
    }
}
