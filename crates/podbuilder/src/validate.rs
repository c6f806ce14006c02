//! Per-executor validation of a template (argo-executors.md §5.4), with messages that say
//! what to change.

use std::path::Path;

use argoexec_core::{ExecutorKind, Template};

/// A template the chosen executor cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{executor} executor cannot run template {template:?}: {problem}")]
pub struct ValidationError {
    /// The executor.
    pub executor: ExecutorKind,
    /// The template name.
    pub template: String,
    /// What is wrong and what to change.
    pub problem: String,
}

/// Check `template` against what `executor` supports.
///
/// # Errors
/// The first problem found.
pub fn validate(template: &Template, executor: ExecutorKind) -> Result<(), ValidationError> {
    let err = |problem: String| ValidationError {
        executor,
        template: template.name.clone(),
        problem,
    };
    // Only the emissary's wrapper orders containers by `dependencies` and retries them;
    // with other executors every container would start at once (Argo v3.3 refuses too).
    if template.container_set.is_some() && executor != ExecutorKind::Emissary {
        return Err(err(
            "containerSet needs the emissary executor, the only one that orders containers by their dependencies; use --executor emissary (or containerRuntimeExecutor: emissary)".into(),
        ));
    }
    let outputs = template
        .outputs
        .parameters
        .iter()
        .filter_map(|p| {
            Some((
                "parameter",
                p.name.as_str(),
                p.value_from.as_ref()?.path.as_deref()?,
            ))
        })
        .chain(
            template
                .outputs
                .artifacts
                .iter()
                .filter_map(|a| Some(("artifact", a.name.as_str(), a.path.as_deref()?))),
        );
    for (kind, name, path) in outputs {
        let base = template.is_base_layer_path(Path::new(path));
        match executor {
            ExecutorKind::Kubelet | ExecutorKind::K8sApi if base => {
                return Err(err(format!(
                    "output {kind} {name:?} at {path} is on the base image layer, which the {executor} executor cannot read; \
                     mount a volume (e.g. an emptyDir) at or above {path}, or use the emissary executor"
                )));
            }
            ExecutorKind::Pns if kind == "artifact" && base => {
                if let Some(m) = template
                    .main_volume_mounts()
                    .iter()
                    .find(|m| argoexec_core::paths::is_under(Path::new(&m.mount_path), Path::new(path)))
                {
                    return Err(err(format!(
                        "output artifact {name:?} at {path} is on the base layer but volume {:?} is mounted beneath it at {}; \
                         the pns executor cannot see volumes through the main container's root: move the volume or the artifact",
                        m.name, m.mount_path
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_layer_rules_per_executor() {
        let t = Template::from_json(
            r#"{"name": "t", "container": {"image": "x", "volumeMounts": [{"name": "v", "mountPath": "/mnt/out/inner"}]},
            "outputs": {"parameters": [{"name": "p", "valueFrom": {"path": "/tmp/p"}}],
                        "artifacts": [{"name": "a", "path": "/mnt/out"}]}}"#,
        )
        .unwrap();
        for k in [ExecutorKind::Kubelet, ExecutorKind::K8sApi] {
            let e = validate(&t, k).unwrap_err().to_string();
            assert!(
                e.contains("\"p\"") && e.contains("/tmp/p") && e.contains("emptyDir"),
                "{e}"
            );
        }
        let e = validate(&t, ExecutorKind::Pns).unwrap_err().to_string();
        assert!(e.contains("\"a\"") && e.contains("/mnt/out/inner"), "{e}");
        assert!(validate(&t, ExecutorKind::Emissary).is_ok());
        assert!(validate(&t, ExecutorKind::Docker).is_ok());
        let on_volume = Template::from_json(
            r#"{"container": {"image": "x", "volumeMounts": [{"name": "v", "mountPath": "/work"}]},
            "outputs": {"parameters": [{"name": "p", "valueFrom": {"path": "/work/p"}}]}}"#,
        )
        .unwrap();
        assert!(validate(&on_volume, ExecutorKind::Kubelet).is_ok());
    }

    #[test]
    fn container_sets_need_the_emissary() {
        let t = Template::from_json(
            r#"{"name": "cs", "containerSet": {"containers": [{"name": "main", "image": "x", "command": ["true"]}]}}"#,
        )
        .unwrap();
        assert!(validate(&t, ExecutorKind::Emissary).is_ok());
        for k in [
            ExecutorKind::Docker,
            ExecutorKind::Kubelet,
            ExecutorKind::K8sApi,
            ExecutorKind::Pns,
        ] {
            let e = validate(&t, k).unwrap_err().to_string();
            assert!(e.contains("containerSet needs the emissary"), "{e}");
        }
    }
}
