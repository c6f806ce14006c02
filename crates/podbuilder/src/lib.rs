//! The controller side of argoexec-rs: what Argo's workflow controller decides before a pod
//! exists. This crate is pure (no I/O beyond the text it is given).
//!
//! - [`config`]: the `workflow-controller-configmap` parsed into typed configuration
//!   ([`artifact_drivers`] its artifact plugins);
//! - [`selector`]: Kubernetes label-selector semantics, used by `containerRuntimeExecutors`;
//! - [`select_executor`]: which executor a workflow gets, and why;
//! - [`build`]: the pod builder itself (template + config + Argo version → Pod, and the
//!   `<pod>` ConfigMap of values too large for it, which the caller creates first).

pub mod artifact_drivers;
pub mod build;
pub mod config;
pub mod repository;
pub mod resolve;
pub mod selector;
pub mod validate;
pub mod workflow;

pub use build::{BuildError, BuildOptions, PodBuild, ProgressTicks, WorkflowMeta, build_pod};
pub use config::{ConfigError, ControllerConfig, ImageEntry};
pub use selector::LabelSelector;

use argoexec_core::{ExecutorKind, Template};
use std::collections::BTreeMap;
use std::path::Path;

/// An executor name as configured: one of the five, or `auto` (an argoexec-rs extension; no
/// Argo version has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorChoice {
    /// A fixed executor.
    Fixed(ExecutorKind),
    /// Pick per template, see [`resolve_choice`].
    Auto,
}

impl std::str::FromStr for ExecutorChoice {
    type Err = argoexec_core::executor_kind::UnknownExecutor;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim() == "auto" {
            Ok(Self::Auto)
        } else {
            s.parse().map(Self::Fixed)
        }
    }
}

/// Turn a choice into an executor for `template`, with the reason (the pod builder records it
/// in the `workflows.argoproj.io/executor-reason` annotation).
///
/// `auto` picks emissary when every container's command is known (from the template or the
/// `images` index). Otherwise it picks the least-privileged backend the outputs allow:
/// k8sapi when no output is on the base layer, pns when some are (and no volume is mounted
/// beneath a base-layer artifact), docker as the last resort.
pub fn resolve_choice(
    choice: ExecutorChoice,
    template: &Template,
    config: &ControllerConfig,
) -> (ExecutorKind, String) {
    if let ExecutorChoice::Fixed(k) = choice {
        return (k, "configured".into());
    }
    let mut unknown = Vec::new();
    let mains = build::main_container_specs(template);
    for c in mains.iter().chain(template.sidecars.iter().map(|s| &s.container)) {
        if c.command.as_ref().is_none_or(Vec::is_empty) && !config.images.contains_key(&c.image) {
            unknown.push(if c.name.is_empty() {
                "main".to_string()
            } else {
                c.name.clone()
            });
        }
    }
    if unknown.is_empty() {
        return (
            ExecutorKind::Emissary,
            "auto: every command is known, emissary needs no privileges".into(),
        );
    }
    let why = format!("auto: no command known for {}", unknown.join(", "));
    let base_layer = template
        .outputs
        .parameters
        .iter()
        .filter_map(|p| p.value_from.as_ref()?.path.clone())
        .chain(template.outputs.artifacts.iter().filter_map(|a| a.path.clone()))
        .any(|p| template.is_base_layer_path(Path::new(&p)));
    if !base_layer {
        return (
            ExecutorKind::K8sApi,
            format!("{why}; all outputs are on volumes, k8sapi needs no privileges"),
        );
    }
    if validate::validate(template, ExecutorKind::Pns).is_ok() {
        return (
            ExecutorKind::Pns,
            format!("{why}; base-layer outputs need pns (shared process namespace)"),
        );
    }
    (
        ExecutorKind::Docker,
        format!("{why}; base-layer outputs with volumes beneath them need docker"),
    )
}

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
    flag: Option<ExecutorChoice>,
) -> Result<(ExecutorChoice, ExecutorSource), ConfigError> {
    let parse = |key: String, v: &str| {
        v.parse::<ExecutorChoice>().map_err(|e| ConfigError::Invalid {
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
    Ok((
        ExecutorChoice::Fixed(ExecutorKind::Emissary),
        ExecutorSource::BuiltInDefault,
    ))
}

/// Parse a Kubernetes manifest. Kubernetes reads YAML with YAML 1.1 number rules (go-yaml v2
/// behind sigs.k8s.io/yaml), so `mode: 0755` is octal 493; serde-saphyr defaults to YAML
/// 1.2, where it would be decimal 755. We follow Kubernetes.
///
/// # Errors
/// The parser's error, with its location.
pub fn parse_manifest<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, serde_saphyr::options! { legacy_octal_numbers: true })
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
        let fixed = ExecutorChoice::Fixed;
        assert_eq!(
            select_executor(&c, &labels(&[(k, "kubelet")]), None).unwrap(),
            (fixed(ExecutorKind::Kubelet), ExecutorSource::Selector(0))
        );
        assert_eq!(
            select_executor(&c, &labels(&[("team", "legacy")]), None)
                .unwrap()
                .0,
            fixed(ExecutorKind::Docker)
        );
        assert_eq!(
            select_executor(&c, &labels(&[]), Some(fixed(ExecutorKind::K8sApi))).unwrap(),
            (fixed(ExecutorKind::Pns), ExecutorSource::ConfigDefault),
            "the config map wins over the flag (v3.3 order)"
        );
        let empty = ControllerConfig::default();
        assert_eq!(
            select_executor(&empty, &labels(&[]), Some(fixed(ExecutorKind::K8sApi)))
                .unwrap()
                .1,
            ExecutorSource::Flag
        );
        assert_eq!(
            select_executor(&empty, &labels(&[]), None).unwrap(),
            (fixed(ExecutorKind::Emissary), ExecutorSource::BuiltInDefault)
        );
        let bad = ControllerConfig {
            container_runtime_executor: Some("rkt".into()),
            ..Default::default()
        };
        let e = select_executor(&bad, &labels(&[]), None).unwrap_err().to_string();
        assert!(e.contains("containerRuntimeExecutor") && e.contains("rkt"), "{e}");
    }

    #[test]
    fn auto_choice() {
        let cfg = ControllerConfig::default();
        let t = |j: &str| Template::from_json(j).unwrap();
        let known = t(r#"{"container": {"image": "x", "command": ["a"]}}"#);
        assert_eq!(
            resolve_choice(ExecutorChoice::Auto, &known, &cfg).0,
            ExecutorKind::Emissary
        );
        let vol = t(
            r#"{"container": {"image": "x", "volumeMounts": [{"name": "v", "mountPath": "/w"}]},
            "outputs": {"parameters": [{"name": "p", "valueFrom": {"path": "/w/p"}}]}}"#,
        );
        let (k, why) = resolve_choice(ExecutorChoice::Auto, &vol, &cfg);
        assert_eq!(k, ExecutorKind::K8sApi);
        assert!(why.contains("main"), "{why}");
        let base = t(
            r#"{"container": {"image": "x"}, "outputs": {"parameters": [{"name": "p", "valueFrom": {"path": "/tmp/p"}}]}}"#,
        );
        assert_eq!(
            resolve_choice(ExecutorChoice::Auto, &base, &cfg).0,
            ExecutorKind::Pns
        );
        let beneath = t(
            r#"{"container": {"image": "x", "volumeMounts": [{"name": "v", "mountPath": "/out/v"}]},
            "outputs": {"artifacts": [{"name": "a", "path": "/out"}]}}"#,
        );
        assert_eq!(
            resolve_choice(ExecutorChoice::Auto, &beneath, &cfg).0,
            ExecutorKind::Docker
        );
        assert_eq!("auto".parse::<ExecutorChoice>().unwrap(), ExecutorChoice::Auto);
    }
}
