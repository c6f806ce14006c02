//! A container's environment as the kubelet builds it (`makeEnvironmentVariables`), when
//! the container is created: first the `envFrom` sources in order, every key of a ConfigMap
//! or Secret under its `prefix`; then `env` in order: literal values with `$(VAR)` expanded
//! from the variables before them, `fieldRef`, `resourceFieldRef`, `configMapKeyRef` and
//! `secretKeyRef`. A later name replaces an earlier one.
//!
//! A missing ConfigMap, Secret or key is [`NodeError::ContainerConfig`] (the kubelet's
//! `CreateContainerConfigError`) unless the reference is `optional`, which skips it. Keys that
//! cannot be variable names (with `=`) are skipped, as the kubelet skips them.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, EnvFromSource, EnvVarSource};

use crate::downward::field_value;
use crate::error::NodeError;
use crate::expand::expand;
use crate::objects::{ConfigError, DataKind};
use crate::quantity::{cpu_nanos, memory_bytes};
use crate::spec::PodContext;

/// The env of `c`: `(name, value)` in order.
///
/// # Errors
/// [`NodeError::ContainerConfig`] for a missing object or key; [`NodeError::Unsupported`]
/// for a `fieldRef` the node cannot answer.
pub(crate) fn resolve(ctx: &PodContext<'_>, c: &Container) -> Result<Vec<(String, String)>, NodeError> {
    let config = |source| NodeError::ContainerConfig {
        container: c.name.clone(),
        source: Box::new(source),
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for from in c.env_from.iter().flatten() {
        for (name, value) in env_from(ctx, from).map_err(config)? {
            set(&mut out, name, value);
        }
    }
    for e in c.env.iter().flatten() {
        let value = match &e.value_from {
            Some(from) => match value_from(ctx, c, &e.name, from)? {
                Some(v) => v,
                None => continue,
            },
            None => {
                let known: HashMap<&str, &str> = out.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                expand(e.value.as_deref().unwrap_or(""), &known)
            }
        };
        set(&mut out, e.name.clone(), value);
    }
    Ok(out)
}

fn set(env: &mut Vec<(String, String)>, name: String, value: String) {
    env.retain(|(k, _)| *k != name);
    env.push((name, value));
}

/// The variables of one `envFrom` source (none for a missing optional one).
fn env_from(ctx: &PodContext<'_>, from: &EnvFromSource) -> Result<Vec<(String, String)>, ConfigError> {
    let (kind, name, optional) = match (&from.config_map_ref, &from.secret_ref) {
        (Some(c), _) => (DataKind::ConfigMap, &c.name, c.optional),
        (None, Some(s)) => (DataKind::Secret, &s.name, s.optional),
        (None, None) => return Ok(Vec::new()),
    };
    let data = match ctx.objects.require(kind, name) {
        Ok(d) => d,
        Err(_) if optional == Some(true) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let prefix = from.prefix.as_deref().unwrap_or("");
    let (ok, bad): (Vec<_>, Vec<_>) = data
        .into_iter()
        .map(|(k, v)| (format!("{prefix}{k}"), String::from_utf8_lossy(&v).into_owned()))
        .partition(|(k, _)| !k.is_empty() && !k.contains('='));
    if !bad.is_empty() {
        let names: Vec<&str> = bad.iter().map(|(k, _)| k.as_str()).collect();
        tracing::warn!(?names, %name, "envFrom: keys that are not valid variable names are skipped");
    }
    Ok(ok)
}

/// The value of one `valueFrom`; `None` when an optional reference is missing.
fn value_from(
    ctx: &PodContext<'_>,
    c: &Container,
    var: &str,
    from: &EnvVarSource,
) -> Result<Option<String>, NodeError> {
    let pod_name = || ctx.pod.metadata.name.clone().unwrap_or_default();
    let (kind, name, key, optional) = match (
        &from.field_ref,
        &from.resource_field_ref,
        &from.config_map_key_ref,
        &from.secret_key_ref,
    ) {
        (Some(f), ..) => {
            let v =
                field_value(ctx.pod, ctx.node_name, &f.field_path).ok_or_else(|| NodeError::Unsupported {
                    pod: pod_name(),
                    what: format!("container {:?}: env {var:?} fieldPath {:?}", c.name, f.field_path),
                })?;
            return Ok(Some(v));
        }
        (None, Some(r), ..) => return Ok(Some(resource_value(c, &r.resource))),
        (None, None, Some(r), _) => (DataKind::ConfigMap, &r.name, &r.key, r.optional),
        (None, None, None, Some(r)) => (DataKind::Secret, &r.name, &r.key, r.optional),
        (None, None, None, None) => return Ok(Some(String::new())),
    };
    let optional = optional == Some(true);
    let found = ctx.objects.require(kind, name).and_then(|data| {
        data.get(key).cloned().ok_or_else(|| ConfigError::NoKey {
            kind,
            namespace: ctx.objects.namespace().to_string(),
            name: name.clone(),
            key: key.clone(),
        })
    });
    match found {
        Ok(v) => Ok(Some(String::from_utf8_lossy(&v).into_owned())),
        Err(_) if optional => Ok(None),
        Err(source) => Err(NodeError::ContainerConfig {
            container: c.name.clone(),
            source: Box::new(source),
        }),
    }
}

/// `limits.cpu` (rounded up to whole cores) / `limits.memory` (bytes), as the kubelet gives them.
fn resource_value(c: &Container, resource: &str) -> String {
    let limits = c.resources.as_ref().and_then(|r| r.limits.as_ref());
    let get = |k: &str| limits.and_then(|l| l.get(k)).map(|q| q.0.clone());
    match resource {
        "limits.cpu" => get("cpu")
            .and_then(|q| cpu_nanos(&q))
            .map(|n| ((n + 999_999_999) / 1_000_000_000).to_string())
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .to_string()
            }),
        "limits.memory" => get("memory")
            .and_then(|q| memory_bytes(&q))
            .map(|b| b.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;
    use crate::objects::{ObjectData, PodObjects, StaticObjects};

    fn resolve_for(container: serde_json::Value) -> Result<Vec<(String, String)>, NodeError> {
        let source = StaticObjects {
            config_maps: BTreeMap::from([(
                "cm".into(),
                ObjectData::from([("a".into(), b"1".to_vec()), ("b".into(), b"2".to_vec())]),
            )]),
            secrets: BTreeMap::from([("s".into(), ObjectData::from([("pw".into(), b"hunter2".to_vec())]))]),
        };
        let objects = PodObjects::new(Arc::new(source), Arc::default(), "ns");
        let pod = Pod::default();
        let volumes = HashMap::new();
        let ctx = PodContext {
            pod: &pod,
            node_name: "n",
            node_label: "l",
            pause_id: "p",
            volumes: &volumes,
            objects: &objects,
            termination_file: Default::default(),
        };
        let c: Container = serde_json::from_value(container).unwrap();
        resolve(&ctx, &c)
    }

    #[test]
    fn env_from_then_env_with_refs_and_expansion() {
        let env = resolve_for(json!({"name": "c",
            "envFrom": [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}, "prefix": "S_"},
                        {"secretRef": {"name": "gone", "optional": true}}],
            "env": [
                {"name": "a", "value": "override-$(b)"},
                {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "b"}}},
                {"name": "NONE", "valueFrom": {"secretKeyRef": {"name": "s", "key": "nope", "optional": true}}},
                {"name": "NONE2", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "x", "optional": true}}}
            ]}))
        .unwrap();
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                ("b", "2"),
                ("S_pw", "hunter2"),
                ("a", "override-2"),
                ("PW", "hunter2"),
                ("B", "2")
            ]
        );
    }

    #[test]
    fn missing_objects_and_keys_are_config_errors() {
        for (container, message) in [
            (
                json!({"name": "c", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "nope"}}}]}),
                "container \"c\": couldn't find key nope in Secret ns/s",
            ),
            (
                json!({"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}]}),
                "container \"c\": configmap \"gone\" not found",
            ),
            (
                json!({"name": "c", "envFrom": [{"secretRef": {"name": "gone"}}]}),
                "container \"c\": secret \"gone\" not found",
            ),
        ] {
            let e = resolve_for(container).unwrap_err();
            assert!(matches!(e, NodeError::ContainerConfig { .. }), "{e:?}");
            assert_eq!(e.to_string(), message);
        }
    }
}
