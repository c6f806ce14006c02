//! The `workflow-controller-configmap`, parsed into [`ControllerConfig`].
//!
//! The ConfigMap's `data` is either one `config` key holding a YAML document, or one key per
//! top-level field whose string value is itself YAML (Argo accepts both). Known keys are
//! typed; unknown keys are kept in [`ControllerConfig::unknown`] and returned as warnings,
//! never an error (Argo v3.4's strict parsing turned stale keys into a crash loop). A known
//! key with a value of the wrong shape is an error naming the key.

use crate::selector::LabelSelector;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Errors reading the config map.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The text is not YAML, or not a ConfigMap.
    #[error("workflow-controller-configmap: {0}")]
    Parse(String),
    /// A known key has a value of the wrong shape.
    #[error("workflow-controller-configmap key {key}: {message}")]
    Invalid {
        /// The key (with index for lists).
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// One `containerRuntimeExecutors` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutorSelector {
    /// Executor name.
    pub name: String,
    /// Matched against the Workflow's labels.
    #[serde(default)]
    pub selector: LabelSelector,
}

/// An `images` entry: v3.1–v3.3 `{command, args}` or v3.4+ `{entrypoint, cmd}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageEntry {
    /// The image's entrypoint (`command` or `entrypoint`).
    pub command: Vec<String>,
    /// The image's default args (`args` or `cmd`); `None` when not given.
    pub args: Option<Vec<String>>,
}

/// Typed controller configuration (the executor-related subset).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControllerConfig {
    /// `containerRuntimeExecutor`.
    pub container_runtime_executor: Option<String>,
    /// `containerRuntimeExecutors`, first match wins.
    pub container_runtime_executors: Vec<ExecutorSelector>,
    /// `kubeletPort` (10250 when unset or 0).
    pub kubelet_port: u16,
    /// `kubeletInsecure`.
    pub kubelet_insecure: bool,
    /// `kubeletServerName` (argoexec-rs): verify the kubelet's certificate against this name
    /// only (default: the node IP, then `spec.nodeName`).
    pub kubelet_server_name: Option<String>,
    /// `kubeletCAFile` (argoexec-rs): the kubelet's CA bundle, a path inside the wait
    /// container (default: the service account's `ca.crt`).
    pub kubelet_ca_file: Option<String>,
    /// `kubeletExec` (argoexec-rs): `kubelet` (default) or `apiserver`, where the kubelet
    /// executor's exec calls (kill) go.
    pub kubelet_exec: Option<String>,
    /// `dockerSockPath` (default `/var/run/docker.sock`).
    pub docker_sock_path: String,
    /// `executor`: a container template for init and wait (raw Kubernetes JSON).
    pub executor: Option<Value>,
    /// `mainContainer`: defaults for main (raw Kubernetes JSON).
    pub main_container: Option<Value>,
    /// `images`: the emissary's image index.
    pub images: BTreeMap<String, ImageEntry>,
    /// `artifactRepository`: the default repository (see [`crate::repository`]).
    pub artifact_repository: Option<Value>,
    /// `instanceID`: the controller's instance (label `controller-instanceid`, executor
    /// variable `ARGO_INSTANCE_ID`).
    pub instance_id: Option<String>,
    /// `argoVersion` (argoexec-rs): the controller version whose pods to build, when
    /// `--argo-version` is not given.
    pub argo_version: Option<argoexec_core::ArgoVersion>,
    /// `initlessPod.enabled` (Argo v4.1, beta): build pods in the init-less layout — no init
    /// container, a `supervisor` in place of wait, the executor from an `image` volume at
    /// `/argo-bin`. Applies to v4.1 pods with the emissary executor only (older controllers
    /// do not know the key).
    pub initless_pod: bool,
    /// `nativeSidecar.enabled` (argoexec-rs; no Argo controller writes it): the auxiliary
    /// container (wait, or the init-less supervisor) becomes a sidecar container, the last
    /// init container with `restartPolicy: Always` (Kubernetes ≥ 1.29), so a pod whose main
    /// ended is finished by the kubelet even if wait hangs. Emissary pods only.
    pub native_sidecar: bool,
    /// `artifactDrivers` (Argo v4.0+): the artifact plugins, see [`crate::artifact_drivers`].
    pub artifact_drivers: Vec<crate::artifact_drivers::ArtifactDriver>,
    /// Every other key, kept.
    pub unknown: Map<String, Value>,
}

const KNOWN: &[&str] = &[
    "containerRuntimeExecutor",
    "containerRuntimeExecutors",
    "kubeletPort",
    "kubeletInsecure",
    "kubeletServerName",
    "kubeletCAFile",
    "kubeletExec",
    "dockerSockPath",
    "executor",
    "mainContainer",
    "images",
    "artifactRepository",
    "instanceID",
    "argoVersion",
    "initlessPod",
    "artifactDrivers",
    "nativeSidecar",
];

fn yaml(text: &str) -> Result<Value, String> {
    crate::parse_manifest::<Value>(text).map_err(|e| e.to_string())
}

fn invalid(key: &str, message: impl ToString) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        message: message.to_string(),
    }
}

impl ControllerConfig {
    /// Parse a ConfigMap manifest. Returns the config and warnings for unknown keys.
    ///
    /// # Errors
    /// [`ConfigError`] naming the key or the YAML problem.
    pub fn from_configmap_yaml(text: &str) -> Result<(Self, Vec<String>), ConfigError> {
        let doc = yaml(text).map_err(ConfigError::Parse)?;
        if let Some(kind) = doc
            .get("kind")
            .and_then(Value::as_str)
            .filter(|k| *k != "ConfigMap")
        {
            return Err(ConfigError::Parse(format!(
                "expected kind ConfigMap, found {kind}"
            )));
        }
        let data = match doc.get("data") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(ConfigError::Parse("data must be a map of strings".into())),
        };
        let mut fields = Map::new();
        for (k, v) in data {
            let parsed = match v {
                Value::String(s) => yaml(&s).map_err(|e| invalid(&k, e))?,
                other => other,
            };
            if k == "config" {
                match parsed {
                    Value::Object(m) => fields.extend(m),
                    Value::Null => {}
                    _ => return Err(invalid("config", "must hold a YAML mapping")),
                }
            } else {
                fields.insert(k, parsed);
            }
        }
        Self::from_fields(fields)
    }

    /// Build from the already-assembled top-level fields.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the key.
    pub fn from_fields(mut f: Map<String, Value>) -> Result<(Self, Vec<String>), ConfigError> {
        let mut c = ControllerConfig {
            kubelet_port: 10250,
            docker_sock_path: "/var/run/docker.sock".into(),
            ..Default::default()
        };
        let take = |f: &mut Map<String, Value>, k: &str| f.remove(k).filter(|v| !v.is_null());
        if let Some(v) = take(&mut f, "containerRuntimeExecutor") {
            let name = v
                .as_str()
                .ok_or_else(|| invalid("containerRuntimeExecutor", "must be a string"))?;
            if !name.trim().is_empty() {
                check_executor("containerRuntimeExecutor", name)?;
            }
            c.container_runtime_executor = Some(name.to_string());
        }
        if let Some(v) = take(&mut f, "containerRuntimeExecutors") {
            c.container_runtime_executors =
                serde_json::from_value(v).map_err(|e| invalid("containerRuntimeExecutors", e))?;
            for (i, sel) in c.container_runtime_executors.iter().enumerate() {
                check_executor(&format!("containerRuntimeExecutors[{i}].name"), &sel.name)?;
                sel.selector.validate().map_err(|(field, m)| {
                    invalid(&format!("containerRuntimeExecutors[{i}].selector.{field}"), m)
                })?;
            }
        }
        if let Some(v) = take(&mut f, "kubeletPort") {
            let n = match &v {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            c.kubelet_port = match n {
                Some(0) => 10250,
                Some(p) if p <= u16::MAX as u64 => p as u16,
                _ => return Err(invalid("kubeletPort", format!("{v} is not a port number"))),
            };
        }
        if let Some(v) = take(&mut f, "kubeletInsecure") {
            c.kubelet_insecure = match &v {
                Value::Bool(b) => *b,
                Value::String(s) => argoexec_core::env::parse_bool(s)
                    .ok_or_else(|| invalid("kubeletInsecure", "must be true or false"))?,
                _ => return Err(invalid("kubeletInsecure", "must be true or false")),
            };
        }
        for key in ["kubeletServerName", "kubeletCAFile", "kubeletExec"] {
            if let Some(v) = take(&mut f, key) {
                let s = v
                    .as_str()
                    .filter(|s| !s.trim().is_empty())
                    .ok_or_else(|| invalid(key, "must be a non-empty string"))?
                    .trim()
                    .to_string();
                if key == "kubeletExec" && s != "kubelet" && s != "apiserver" {
                    return Err(invalid(key, format!("{s:?}: must be kubelet or apiserver")));
                }
                *(match key {
                    "kubeletServerName" => &mut c.kubelet_server_name,
                    "kubeletCAFile" => &mut c.kubelet_ca_file,
                    _ => &mut c.kubelet_exec,
                }) = Some(s);
            }
        }
        if let Some(v) = take(&mut f, "dockerSockPath") {
            c.docker_sock_path = v
                .as_str()
                .ok_or_else(|| invalid("dockerSockPath", "must be a string"))?
                .to_string();
        }
        for key in ["executor", "mainContainer"] {
            if let Some(v) = take(&mut f, key) {
                if !v.is_object() {
                    return Err(invalid(key, "must be a container mapping"));
                }
                *(if key == "executor" {
                    &mut c.executor
                } else {
                    &mut c.main_container
                }) = Some(v);
            }
        }
        if let Some(v) = take(&mut f, "images") {
            let Value::Object(m) = v else {
                return Err(invalid("images", "must be a mapping of image → entry"));
            };
            for (image, entry) in m {
                c.images
                    .insert(image.clone(), image_entry(&format!("images[{image}]"), &entry)?);
            }
        }
        if let Some(v) = take(&mut f, "artifactRepository") {
            if !v.is_object() {
                return Err(invalid(
                    "artifactRepository",
                    "must be a mapping (s3, gcs, azure, artifactory, …)",
                ));
            }
            crate::repository::parse(&v).map_err(|m| invalid("artifactRepository", m))?;
            c.artifact_repository = Some(v);
        }
        if let Some(v) = take(&mut f, "instanceID") {
            let id = v
                .as_str()
                .ok_or_else(|| invalid("instanceID", "must be a string"))?;
            c.instance_id = Some(id.trim().to_string()).filter(|i| !i.is_empty());
        }
        if let Some(v) = take(&mut f, "initlessPod") {
            let enabled = match &v {
                Value::Object(m) => m.get("enabled").cloned().unwrap_or(Value::Bool(false)),
                _ => {
                    return Err(invalid(
                        "initlessPod",
                        "must hold a mapping such as `enabled: true`",
                    ));
                }
            };
            c.initless_pod = enabled
                .as_bool()
                .ok_or_else(|| invalid("initlessPod.enabled", "must be true or false"))?;
        }
        if let Some(v) = take(&mut f, "nativeSidecar") {
            c.native_sidecar = v
                .get("enabled")
                .map(|e| {
                    e.as_bool()
                        .ok_or_else(|| invalid("nativeSidecar.enabled", "must be true or false"))
                })
                .transpose()?
                .ok_or_else(|| invalid("nativeSidecar", "must hold a mapping such as `enabled: true`"))?;
        }
        if let Some(v) = take(&mut f, "artifactDrivers") {
            c.artifact_drivers =
                crate::artifact_drivers::parse(v).map_err(|m| invalid("artifactDrivers", m))?;
        }
        if let Some(v) = take(&mut f, "argoVersion") {
            let text = match &v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(invalid("argoVersion", "must be a version such as \"4.1\"")),
            };
            c.argo_version = Some(text.parse().map_err(|e| invalid("argoVersion", e))?);
        }
        let warnings = f
            .keys()
            .filter(|k| !KNOWN.contains(&k.as_str()))
            .map(|k| format!("unknown workflow-controller-configmap key {k:?} kept and ignored"))
            .collect();
        c.unknown = f;
        Ok((c, warnings))
    }
}

/// An executor name must be one of the five or `auto`, whether or not it is ever selected.
fn check_executor(key: &str, name: &str) -> Result<(), ConfigError> {
    name.parse::<crate::ExecutorChoice>()
        .map(drop)
        .map_err(|e| invalid(key, format!("{e} (or auto)")))
}

fn strings(key: &str, v: &Value) -> Result<Vec<String>, ConfigError> {
    v.as_array()
        .ok_or_else(|| invalid(key, "must be a list of strings"))?
        .iter()
        .map(|s| {
            s.as_str()
                .map(String::from)
                .ok_or_else(|| invalid(key, "must be a list of strings"))
        })
        .collect()
}

fn image_entry(key: &str, v: &Value) -> Result<ImageEntry, ConfigError> {
    let get = |a: &str, b: &str| v.get(a).or_else(|| v.get(b)).filter(|x| !x.is_null());
    let command = match get("command", "entrypoint") {
        Some(c) => strings(&format!("{key}.command"), c)?,
        None => return Err(invalid(key, "needs command (or entrypoint)")),
    };
    let args = get("args", "cmd")
        .map(|a| strings(&format!("{key}.args"), a))
        .transpose()?;
    Ok(ImageEntry { command, args })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_key_form_with_unknowns_and_images() {
        let cm = r#"
apiVersion: v1
kind: ConfigMap
data:
  containerRuntimeExecutor: emissary
  kubeletPort: "10255"
  kubeletInsecure: "true"
  executor: |
    image: argoexec:dev
    args: [--loglevel, debug]
  images: |
    busybox: {command: [sh], args: [-c]}
    python:3: {entrypoint: [python3], cmd: []}
  parallelism: "10"
"#;
        let (c, warnings) = ControllerConfig::from_configmap_yaml(cm).unwrap();
        assert_eq!(c.container_runtime_executor.as_deref(), Some("emissary"));
        assert_eq!((c.kubelet_port, c.kubelet_insecure), (10255, true));
        assert_eq!(c.executor.as_ref().unwrap()["image"], "argoexec:dev");
        assert_eq!(
            c.images["busybox"],
            ImageEntry {
                command: vec!["sh".into()],
                args: Some(vec!["-c".into()])
            }
        );
        assert_eq!(
            c.images["python:3"].args,
            Some(vec![]),
            "an explicitly empty list is kept"
        );
        assert_eq!(c.unknown["parallelism"], 10);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("parallelism"));
        assert_eq!(c.docker_sock_path, "/var/run/docker.sock");
    }

    #[test]
    fn errors_name_the_key() {
        let bad = |data: &str| {
            let cm = format!("kind: ConfigMap\ndata:\n{data}");
            ControllerConfig::from_configmap_yaml(&cm)
                .unwrap_err()
                .to_string()
        };
        assert!(bad("  kubeletPort: \"99999\"").contains("kubeletPort"));
        assert!(bad("  kubeletInsecure: \"maybe\"").contains("kubeletInsecure"));
        assert!(bad("  kubeletExec: \"ssh\"").contains("kubeletExec"));
        assert!(bad("  kubeletCAFile: \"[a]\"").contains("kubeletCAFile"));
        assert!(bad("  images: |\n    busybox: {args: [x]}").contains("images[busybox]"));
        assert!(bad("  config: \"- a list\"").contains("config"));
        let e = ControllerConfig::from_configmap_yaml("kind: Secret\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Secret"), "{e}");
        let (c, _) =
            ControllerConfig::from_configmap_yaml("kind: ConfigMap\ndata:\n  kubeletPort: \"0\"\n").unwrap();
        assert_eq!(c.kubelet_port, 10250);
    }

    /// One refused value per known key: the error names the key (with its index or field for
    /// lists and selectors) and says what is wrong.
    #[test]
    fn bad_values_are_per_key_errors() {
        let bad = |data: &str| {
            let cm = format!("kind: ConfigMap\ndata:\n{data}");
            ControllerConfig::from_configmap_yaml(&cm)
                .unwrap_err()
                .to_string()
        };
        for (data, key, why) in [
            (
                "  kubeletPort: \"abc\"",
                "key kubeletPort:",
                "\"abc\" is not a port number",
            ),
            ("  kubeletPort: \"-1\"", "key kubeletPort:", "not a port number"),
            (
                "  kubeletPort: \"[10250]\"",
                "key kubeletPort:",
                "not a port number",
            ),
            (
                "  kubeletInsecure: \"maybe\"",
                "key kubeletInsecure:",
                "true or false",
            ),
            (
                "  kubeletInsecure: \"1.5\"",
                "key kubeletInsecure:",
                "true or false",
            ),
            (
                "  containerRuntimeExecutor: rkt",
                "key containerRuntimeExecutor:",
                "unknown container runtime executor \"rkt\"",
            ),
            (
                "  containerRuntimeExecutors: |\n    - {name: pns, selector: {}}\n    - {name: Docker, selector: {}}",
                "key containerRuntimeExecutors[1].name:",
                "\"Docker\"",
            ),
            (
                "  containerRuntimeExecutors: |\n    - name: pns\n      selector: {matchExpressions: [{key: team, operator: Gt, values: [\"1\"]}]}",
                "key containerRuntimeExecutors[0].selector.matchExpressions[0].operator:",
                "\"Gt\" is not a valid selector operator",
            ),
            (
                "  containerRuntimeExecutors: |\n    - name: pns\n      selector: {matchExpressions: [{key: team, operator: In}]}",
                "key containerRuntimeExecutors[0].selector.matchExpressions[0].values:",
                "must be specified when `operator` is In",
            ),
            (
                "  containerRuntimeExecutors: |\n    - name: pns\n      selector: {matchExpressions: [{key: team, operator: Exists, values: [a]}]}",
                "key containerRuntimeExecutors[0].selector.matchExpressions[0].values:",
                "may not be specified",
            ),
            (
                "  containerRuntimeExecutors: |\n    - name: pns\n      selector: {matchExpressions: [{key: \"\", operator: Exists}]}",
                "key containerRuntimeExecutors[0].selector.matchExpressions[0].key:",
                "must not be empty",
            ),
            (
                "  containerRuntimeExecutors: |\n    - name: pns\n      selector: \"team=legacy\"",
                "key containerRuntimeExecutors:",
                "invalid type",
            ),
            (
                "  containerRuntimeExecutors: |\n    - name: pns\n      selector: {matchLabels: [team]}",
                "key containerRuntimeExecutors:",
                "invalid type",
            ),
            (
                "  images: |\n    busybox: {cmd: [x]}",
                "key images[busybox]:",
                "needs command (or entrypoint)",
            ),
            (
                "  images: |\n    busybox: sh",
                "key images[busybox]:",
                "needs command (or entrypoint)",
            ),
            (
                "  images: |\n    busybox: {entrypoint: sh}",
                "key images[busybox].command:",
                "list of strings",
            ),
            ("  images: \"[busybox]\"", "key images:", "mapping of image"),
            (
                "  dockerSockPath: \"[a]\"",
                "key dockerSockPath:",
                "must be a string",
            ),
            (
                "  executor: \"argoexec:dev\"",
                "key executor:",
                "container mapping",
            ),
        ] {
            let e = bad(data);
            assert!(e.contains(key) && e.contains(why), "{data}\n→ {e}");
        }
        // An images entry with an entrypoint and no cmd is fine: the template's args are kept
        // (Argo's rule: the image's cmd only fills args that are nil).
        let (c, _) = ControllerConfig::from_configmap_yaml(
            "kind: ConfigMap\ndata:\n  images: |\n    busybox: {entrypoint: [sh]}\n",
        )
        .unwrap();
        assert_eq!(
            c.images["busybox"],
            ImageEntry {
                command: vec!["sh".into()],
                args: None
            }
        );
        // An empty containerRuntimeExecutor is unset (the next source decides), and `auto` is
        // an executor name like the five.
        for ok in ["\"\"", "auto", "emissary"] {
            let cm = format!("kind: ConfigMap\ndata:\n  containerRuntimeExecutor: {ok}\n");
            assert!(ControllerConfig::from_configmap_yaml(&cm).is_ok(), "{ok}");
        }
    }
}
