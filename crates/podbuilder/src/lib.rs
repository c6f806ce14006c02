//! The controller side of argoexec-rs: what Argo's workflow controller decides before a pod
//! exists. This crate is pure (no I/O beyond the text it is given).
//!
//! - [`config`]: the `workflow-controller-configmap` parsed into typed configuration;
//! - [`selector`]: Kubernetes label-selector semantics, used by `containerRuntimeExecutors`;
//! - [`select_executor`]: which executor a workflow gets, and why.
//!
//! The pod builder itself (template + config → Pod) is the next part of this crate.

pub mod build;
pub mod config;
pub mod selector;
pub mod validate;
pub mod workflow;

pub use build::{BuildError, BuildOptions, WorkflowMeta, build_pod};
pub use config::{ConfigError, ControllerConfig, ImageEntry};
pub use selector::LabelSelector;

use argoexec_core::ExecutorKind;
use std::collections::BTreeMap;

/// Where an executor choice came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecutorSource {
    /// The n-th entry of `containerRuntimeExecutors` matched the workflow's labels.
    Selector(usize),
    /// `containerRuntimeExecutor`.
    ConfigDefault,
    /// The controller's `--container-runtime-executor` flag.
    Flag,
    /// Nothing set: emissary, Argo's default since v3.3.
    BuiltInDefault,
}

/// Choose the executor for a workflow with `labels`.
///
/// Precedence (Argo v3.3's, which reversed v3.0–v3.2's flag-first order; documented in
/// docs/configuration.md): the first matching `containerRuntimeExecutors` entry, then
/// `containerRuntimeExecutor`, then the flag, then emissary.
///
/// # Errors
/// An executor name in the configuration that is not one of the five.
pub fn select_executor(
    config: &ControllerConfig,
    labels: &BTreeMap<String, String>,
    flag: Option<ExecutorKind>,
) -> Result<(ExecutorKind, ExecutorSource), ConfigError> {
    let parse = |key: String, v: &str| {
        v.parse::<ExecutorKind>().map_err(|e| ConfigError::Invalid {
            key,
            message: e.to_string(),
        })
    };
    for (i, sel) in config.container_runtime_executors.iter().enumerate() {
        if sel.selector.matches(labels) {
            let kind = parse(format!("containerRuntimeExecutors[{i}].name"), &sel.name)?;
            return Ok((kind, ExecutorSource::Selector(i)));
        }
    }
    if let Some(name) = config
        .container_runtime_executor
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        return Ok((
            parse("containerRuntimeExecutor".into(), name)?,
            ExecutorSource::ConfigDefault,
        ));
    }
    if let Some(k) = flag {
        return Ok((k, ExecutorSource::Flag));
    }
    Ok((ExecutorKind::Emissary, ExecutorSource::BuiltInDefault))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn precedence() {
        let cm = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: workflow-controller-configmap}
data:
  config: |
    containerRuntimeExecutor: pns
    containerRuntimeExecutors:
      - name: kubelet
        selector:
          matchLabels: {workflows.argoproj.io/container-runtime-executor: kubelet}
      - name: docker
        selector:
          matchExpressions:
            - {key: team, operator: In, values: [legacy]}
"#;
        let (c, _) = ControllerConfig::from_configmap_yaml(cm).unwrap();
        let k = "workflows.argoproj.io/container-runtime-executor";
        assert_eq!(
            select_executor(&c, &labels(&[(k, "kubelet")]), None).unwrap(),
            (ExecutorKind::Kubelet, ExecutorSource::Selector(0))
        );
        assert_eq!(
            select_executor(&c, &labels(&[("team", "legacy")]), None)
                .unwrap()
                .0,
            ExecutorKind::Docker
        );
        assert_eq!(
            select_executor(&c, &labels(&[]), Some(ExecutorKind::K8sApi)).unwrap(),
            (ExecutorKind::Pns, ExecutorSource::ConfigDefault),
            "the config map wins over the flag (v3.3 order)"
        );
        let empty = ControllerConfig::default();
        assert_eq!(
            select_executor(&empty, &labels(&[]), Some(ExecutorKind::K8sApi))
                .unwrap()
                .1,
            ExecutorSource::Flag
        );
        assert_eq!(
            select_executor(&empty, &labels(&[]), None).unwrap(),
            (ExecutorKind::Emissary, ExecutorSource::BuiltInDefault)
        );
        let bad = ControllerConfig {
            container_runtime_executor: Some("rkt".into()),
            ..Default::default()
        };
        let e = select_executor(&bad, &labels(&[]), None).unwrap_err().to_string();
        assert!(e.contains("containerRuntimeExecutor") && e.contains("rkt"), "{e}");
    }
}
