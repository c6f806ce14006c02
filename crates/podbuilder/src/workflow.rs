//! The Workflow manifest subset the pod builder needs: metadata, `spec.entrypoint`,
//! `spec.templates`, `spec.arguments`, `spec.podSpecPatch`.

use argoexec_core::Template;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

use crate::build::WorkflowMeta;

/// Errors reading a Workflow manifest.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// Not YAML, or not a Workflow.
    #[error("not a Workflow manifest: {0}")]
    Parse(String),
    /// The named template does not exist.
    #[error("workflow has no template named {name:?} (templates: {available})")]
    UnknownTemplate {
        /// The requested name.
        name: String,
        /// The names that exist.
        available: String,
    },
    /// The template is a steps or dag template (run by the controller, not in one pod).
    #[error(
        "template {name:?} is a {kind} template; only container, script and containerSet templates run in a pod (steps and dag are not supported yet)"
    )]
    NotAPod {
        /// The template.
        name: String,
        /// `steps` or `dag`.
        kind: &'static str,
    },
}

#[derive(Debug, Deserialize)]
struct Manifest {
    kind: Option<String>,
    #[serde(default)]
    metadata: Meta,
    spec: Option<Spec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    generate_name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct Spec {
    entrypoint: Option<String>,
    #[serde(default)]
    templates: Vec<Value>,
    #[serde(default)]
    arguments: Value,
    #[serde(default, rename = "podSpecPatch")]
    pod_spec_patch: Option<String>,
    #[serde(default, rename = "artifactGC")]
    artifact_gc: Option<Value>,
    #[serde(default, rename = "serviceAccountName")]
    service_account_name: Option<String>,
}

/// A parsed Workflow.
#[derive(Debug, Clone)]
pub struct Workflow {
    /// Name, namespace, UID and labels.
    pub meta: WorkflowMeta,
    /// `spec.entrypoint`.
    pub entrypoint: Option<String>,
    /// `spec.templates`, raw (steps/dag kept as JSON).
    pub templates: Vec<Value>,
    /// `spec.arguments`, raw.
    pub arguments: Value,
    /// `spec.artifactGC`, raw (strategy, serviceAccountName, podMetadata, podSpecPatch).
    pub artifact_gc: Option<Value>,
    /// `spec.serviceAccountName` (the agent pod runs as it).
    pub service_account_name: Option<String>,
}

impl Workflow {
    /// Parse a Workflow manifest (YAML or JSON).
    ///
    /// # Errors
    /// [`WorkflowError::Parse`] with the reason.
    pub fn from_yaml(text: &str) -> Result<Self, WorkflowError> {
        let m: Manifest =
            crate::parse_manifest::<_>(text).map_err(|e| WorkflowError::Parse(e.to_string()))?;
        match m.kind.as_deref() {
            Some("Workflow") => {}
            Some(k) => return Err(WorkflowError::Parse(format!("kind is {k}, expected Workflow"))),
            None => return Err(WorkflowError::Parse("no kind (expected kind: Workflow)".into())),
        }
        let spec = m.spec.ok_or_else(|| WorkflowError::Parse("no spec".into()))?;
        let name = m
            .metadata
            .name
            .or_else(|| m.metadata.generate_name.map(|g| format!("{}local", g)))
            .unwrap_or_else(|| "workflow".into());
        Ok(Self {
            meta: WorkflowMeta {
                name,
                namespace: m.metadata.namespace.unwrap_or_else(|| "default".into()),
                uid: m.metadata.uid.unwrap_or_default(),
                labels: m.metadata.labels,
                pod_spec_patch: spec.pod_spec_patch,
            },
            entrypoint: spec.entrypoint,
            templates: spec.templates,
            arguments: spec.arguments,
            artifact_gc: spec.artifact_gc,
            service_account_name: spec.service_account_name.filter(|s| !s.is_empty()),
        })
    }

    /// The template named `name` (default: the entrypoint), which must run in a pod.
    ///
    /// # Errors
    /// [`WorkflowError::UnknownTemplate`], [`WorkflowError::NotAPod`] or a parse error.
    pub fn pod_template(&self, name: Option<&str>) -> Result<Template, WorkflowError> {
        let name = name
            .or(self.entrypoint.as_deref())
            .ok_or_else(|| WorkflowError::Parse("no spec.entrypoint".into()))?;
        let raw = self
            .templates
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .ok_or_else(|| {
                let names: Vec<&str> = self
                    .templates
                    .iter()
                    .filter_map(|t| t.get("name")?.as_str())
                    .collect();
                WorkflowError::UnknownTemplate {
                    name: name.into(),
                    available: names.join(", "),
                }
            })?;
        for kind in ["steps", "dag"] {
            if raw.get(kind).is_some() {
                return Err(WorkflowError::NotAPod {
                    name: name.into(),
                    kind,
                });
            }
        }
        serde_json::from_value(raw.clone())
            .map_err(|e| WorkflowError::Parse(format!("template {name:?}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_pick() {
        let wf = Workflow::from_yaml(
            "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {generateName: hello-, labels: {a: b}}\n\
             spec:\n  entrypoint: main\n  templates:\n  - name: main\n    container: {image: busybox, command: [echo, hi]}\n\
             \x20 - name: s\n    steps: [[{name: x, template: main}]]\n",
        )
        .unwrap();
        assert_eq!(wf.meta.name, "hello-local");
        assert_eq!(wf.meta.labels["a"], "b");
        assert_eq!(wf.pod_template(None).unwrap().container.unwrap().image, "busybox");
        assert!(matches!(
            wf.pod_template(Some("s")),
            Err(WorkflowError::NotAPod { kind: "steps", .. })
        ));
        let e = wf.pod_template(Some("nope")).unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("main, s"), "{e}");
        assert!(
            Workflow::from_yaml("kind: Pod\nspec: {}\n")
                .unwrap_err()
                .to_string()
                .contains("Pod")
        );
    }
}
