//! Templates too large for an environment variable.
//!
//! Linux caps one environment string at `MAX_ARG_STRLEN` = 131 072 bytes, the
//! `ARGO_TEMPLATE=` prefix included, so a container whose `ARGO_TEMPLATE` is larger fails to
//! start with `E2BIG` ("argument list too long", Argo #7586). The JSON is also copied into
//! every container of the pod object, which etcd caps at 1.5 MiB.
//!
//! When the template's JSON is longer than [`TEMPLATE_ENV_MAX`] (64 KiB — half the kernel's
//! limit, leaving room for the other variables and the command line), the pod builder leaves
//! `ARGO_TEMPLATE` out of every container and offloads the JSON to a ConfigMap, as Argo ≥ 3.5
//! does (#12325): [`template_config_map`] is the ConfigMap (`<pod>-template`, key
//! `template`), which the caller creates before the pod; the pod mounts it read-only in
//! **init only**, at `/argo/template`. Init reads `/argo/template/template` and writes
//! `/var/run/argo/template` (0444) on the shared `var-run-argo` volume, where wait and the
//! emissary read it (argoexec_core::env::load_template). User code that read
//! `$ARGO_TEMPLATE` finds the template in that file instead. A template at or below the
//! threshold stays in the environment, as in Argo.

use std::collections::BTreeMap;

use argoexec_core::Template;
use argoexec_core::paths::{OFFLOADED_TEMPLATE_DIR, OFFLOADED_TEMPLATE_KEY};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::build::{BuildError, WorkflowMeta};

/// Largest template JSON (in bytes) kept in `ARGO_TEMPLATE`; longer ones are offloaded.
pub const TEMPLATE_ENV_MAX: usize = 64 * 1024;

/// Largest template a ConfigMap can hold (Kubernetes refuses ConfigMaps whose data exceeds
/// 1 MiB).
pub const CONFIG_MAP_MAX: usize = 1024 * 1024;

/// The pod volume holding an offloaded template.
pub const TEMPLATE_VOLUME: &str = "argo-template";

/// Whether a template whose JSON is `json` leaves the environment.
pub fn is_offloaded(json: &str) -> bool {
    json.len() > TEMPLATE_ENV_MAX
}

/// The ConfigMap name for pod `pod_name` (a DNS subdomain of at most 253 characters).
pub fn config_map_name(pod_name: &str) -> String {
    const SUFFIX: &str = "-template";
    let mut base: String = pod_name.chars().take(253 - SUFFIX.len()).collect();
    while base.ends_with(['-', '.']) {
        base.pop();
    }
    format!("{base}{SUFFIX}")
}

/// The ConfigMap to create before pod `pod_name`, when `template` is offloaded.
///
/// # Errors
/// [`BuildError::TemplateTooLarge`] above [`CONFIG_MAP_MAX`].
pub fn template_config_map(
    wf: &WorkflowMeta,
    template: &Template,
    pod_name: &str,
) -> Result<Option<core::ConfigMap>, BuildError> {
    let json = template.to_json();
    if !is_offloaded(&json) {
        return Ok(None);
    }
    check_size(&json)?;
    Ok(Some(core::ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(pod_name)),
            namespace: Some(wf.namespace.clone()),
            labels: Some(BTreeMap::from([(
                "workflows.argoproj.io/workflow".to_string(),
                wf.name.clone(),
            )])),
            owner_references: Some(vec![crate::build::workflow_owner(wf)]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(OFFLOADED_TEMPLATE_KEY.to_string(), json)])),
        immutable: Some(true),
        ..Default::default()
    }))
}

pub(crate) fn check_size(json: &str) -> Result<(), BuildError> {
    if json.len() > CONFIG_MAP_MAX {
        return Err(BuildError::TemplateTooLarge { size: json.len() });
    }
    Ok(())
}

/// The pod volume of the ConfigMap.
pub(crate) fn volume(pod_name: &str) -> core::Volume {
    core::Volume {
        name: TEMPLATE_VOLUME.into(),
        config_map: Some(core::ConfigMapVolumeSource {
            name: config_map_name(pod_name),
            items: Some(vec![core::KeyToPath {
                key: OFFLOADED_TEMPLATE_KEY.into(),
                path: OFFLOADED_TEMPLATE_KEY.into(),
                mode: None,
            }]),
            default_mode: Some(0o444),
            optional: Some(false),
        }),
        ..Default::default()
    }
}

/// Its read-only mount in init.
pub(crate) fn mount() -> core::VolumeMount {
    core::VolumeMount {
        name: TEMPLATE_VOLUME.into(),
        mount_path: OFFLOADED_TEMPLATE_DIR.into(),
        read_only: Some(true),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_threshold() {
        assert_eq!(config_map_name("wf-abc12"), "wf-abc12-template");
        let long = format!("{}-", "a".repeat(260));
        let n = config_map_name(&long);
        assert!(n.len() <= 253 && n.ends_with("a-template"), "{n}");
        assert!(!is_offloaded(&"x".repeat(TEMPLATE_ENV_MAX)));
        assert!(is_offloaded(&"x".repeat(TEMPLATE_ENV_MAX + 1)));
        assert!(check_size(&"x".repeat(CONFIG_MAP_MAX + 1)).is_err());
    }
}
