//! Values too large for a pod: the `<pod>` ConfigMap (Argo v3.6+, AW#12325 and AW#15265).
//!
//! Linux caps one environment string or argument at `MAX_ARG_STRLEN` = 131 072 bytes, so a
//! container given a larger `ARGO_TEMPLATE` or argument fails to start with `E2BIG` (Argo
//! #7586). Since v3.6 the controller moves such values into a ConfigMap named after the pod,
//! which it creates before the pod, mounted whole (volume `argo-env-config`, no `items`) at
//! `/argo/config`:
//! - a template JSON longer than 131 072 bytes: key `ARGO_TEMPLATE`, and `ARGO_TEMPLATE` on
//!   the init container becomes the literal `offloaded` (init mounts the ConfigMap and writes
//!   `/var/run/argo/template` for the others);
//! - the first user container (v3.7.10+, v4.0.1+, v4.1) whose `args` JSON is longer than
//!   131 072 bytes: key `ARGO_CONTAINER_ARGS_FILE` holds the JSON array, the container's
//!   `args` are cleared, and it gets `ARGO_CONTAINER_ARGS_FILE=/argo/config/ARGO_CONTAINER_ARGS_FILE`
//!   and the mount; its emissary appends the array to the command.
//!
//! The ConfigMap carries the workflow label, the node-name/node-id annotations and the
//! Workflow as controlling owner. Lengths are those of serde_json's encoding, where Go's
//! escapes `<`, `>` and `&` as six bytes each: an args array within a few bytes of the
//! threshold may be offloaded by one and not the other.

use std::collections::BTreeMap;

use argoexec_core::argo_version::ARGS_ENV_MAX;
use argoexec_core::paths::{ARGO_CONFIG_DIR, ARGS_FILE_KEY, OFFLOADED_TEMPLATE_KEY};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::volumes::{env_config_mount, env_config_volume};
use super::{BuildCtx, BuildError, env::env};

/// Largest ConfigMap the API server accepts (data and binaryData together).
pub const CONFIG_MAP_MAX: usize = 1024 * 1024;

/// The ConfigMap's name: the pod's (Argo uses the pod name as it is).
pub fn config_map_name(pod_name: &str) -> String {
    pod_name.to_string()
}

/// Move what is too large out of `pod`; returns the ConfigMap to create first, if any.
/// `template` is the template JSON when it is to be offloaded (the init container already
/// says `offloaded` and mounts the ConfigMap).
pub(crate) fn offload(
    ctx: &BuildCtx<'_>,
    pod: &mut core::Pod,
    template: Option<String>,
) -> Result<Option<core::ConfigMap>, BuildError> {
    let mut data = BTreeMap::new();
    if let Some(json) = template {
        data.insert(OFFLOADED_TEMPLATE_KEY.to_string(), json);
    }
    if ctx.version.has_args_file()
        && let Some(spec) = pod.spec.as_mut()
        && let Some(args) = offload_args(&mut spec.containers)
    {
        data.insert(ARGS_FILE_KEY.to_string(), args);
    }
    if data.is_empty() {
        return Ok(None);
    }
    let size: usize = data.values().map(String::len).sum();
    if size > CONFIG_MAP_MAX {
        return Err(BuildError::TemplateTooLarge { size });
    }
    if let Some(spec) = pod.spec.as_mut() {
        spec.volumes
            .get_or_insert_with(Vec::new)
            .push(env_config_volume(ctx.node_id));
    }
    Ok(Some(core::ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(ctx.node_id)),
            namespace: Some(ctx.wf.namespace.clone()),
            labels: Some(BTreeMap::from([(
                "workflows.argoproj.io/workflow".to_string(),
                ctx.wf.name.clone(),
            )])),
            annotations: Some(BTreeMap::from([
                (
                    "workflows.argoproj.io/node-name".to_string(),
                    format!("{}.{}", ctx.wf.name, ctx.template.name),
                ),
                (
                    "workflows.argoproj.io/node-id".to_string(),
                    ctx.node_id.to_string(),
                ),
            ])),
            owner_references: Some(vec![super::workflow_owner(ctx.wf)]),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }))
}

/// Offload the args of the first user container whose args JSON is too long; returns it.
fn offload_args(containers: &mut [core::Container]) -> Option<String> {
    let c = containers.iter_mut().find(|c| {
        c.name != argoexec_core::template::WAIT
            && !(c.name == argoexec_core::template::SUPERVISOR
                && c.env
                    .iter()
                    .flatten()
                    .any(|e| e.name == argoexec_core::ready::INITLESS_POD_ENV))
            && c.args
                .as_ref()
                .is_some_and(|a| serde_json::to_string(a).map_or(0, |j| j.len()) > ARGS_ENV_MAX)
    })?;
    let json = serde_json::to_string(&c.args.take()?).ok()?;
    c.env.get_or_insert_with(Vec::new).push(env(
        "ARGO_CONTAINER_ARGS_FILE",
        format!("{ARGO_CONFIG_DIR}/{ARGS_FILE_KEY}"),
    ));
    c.volume_mounts
        .get_or_insert_with(Vec::new)
        .push(env_config_mount());
    Some(json)
}
