//! What happens to a pod between the POST body and the node, as the API server's defaulting
//! and service-account admission do it ([`admit`]: name or `generateName`, namespace,
//! `restartPolicy` Never (the default) or OnFailure, `nodeName`, `serviceAccountName`,
//! `terminationGracePeriodSeconds`, the projected `kube-api-access-xxxxx` volume mounted in
//! every container), and what the kubelet adds when it runs the pod ([`kubelet_env`]: the
//! `KUBERNETES_SERVICE_*` env, the projection as a host directory).

use std::path::Path;

use k8s_openapi::api::core::v1::{EnvVar, HostPathVolumeSource, Pod, PodSpec, Volume, VolumeMount};
use serde_json::{Value, json};

use crate::faults::FaultSpec;
use crate::serviceaccount::MOUNT_PATH;
use crate::status::{ApiError, PODS};
use crate::store::{assign_name, check_namespace, new_uid};

/// A pod ready to be stored and run.
pub(crate) struct Admitted {
    /// The pod, defaulted.
    pub pod: Pod,
    /// The name of its projected service-account volume, unless it opted out.
    pub sa_volume: Option<String>,
}

/// Validate and default a pod POSTed to namespace `ns` of node `node_name`.
///
/// # Errors
/// 400 for bodies that are not pods or name another namespace, 422 for invalid specs.
pub(crate) fn admit(
    ns: &str,
    mut body: Value,
    node_name: &str,
    faults: &FaultSpec,
) -> Result<Admitted, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    check_namespace(&body, ns)?;
    let name = assign_name(&mut body, &PODS)?;
    let mut pod: Pod = serde_json::from_value(body).map_err(|e| {
        ApiError::bad_request(format!("Pod in version \"v1\" cannot be handled as a Pod: {e}"))
    })?;
    let spec = pod
        .spec
        .as_mut()
        .ok_or_else(|| ApiError::invalid(&PODS, &name, "spec", "Required value"))?;
    defaults(spec, &name, node_name)?;
    small_volumes(spec, faults);
    let sa_volume =
        (spec.automount_service_account_token != Some(false)).then(|| mount_service_account(spec));
    pod.status = Some(argoexec_node::status::initial(&pod));
    Ok(Admitted { pod, sa_volume })
}

fn defaults(spec: &mut PodSpec, name: &str, node_name: &str) -> Result<(), ApiError> {
    if spec.containers.is_empty() {
        return Err(ApiError::invalid(
            &PODS,
            name,
            "spec.containers",
            "Required value",
        ));
    }
    match spec.restart_policy.as_deref() {
        None | Some("Never") => spec.restart_policy = Some("Never".into()),
        Some("OnFailure") => {}
        Some(other) => {
            return Err(ApiError::invalid(
                &PODS,
                name,
                "spec.restartPolicy",
                &format!(
                    "Unsupported value: \"{other}\": the local node runs pods with restartPolicy Never or OnFailure"
                ),
            ));
        }
    }
    spec.node_name = Some(node_name.to_string());
    let sa = spec
        .service_account_name
        .clone()
        .unwrap_or_else(|| "default".into());
    spec.service_account_name = Some(sa.clone());
    spec.service_account = Some(sa);
    spec.termination_grace_period_seconds.get_or_insert(30);
    Ok(())
}

/// The `small-volume` fault: named `emptyDir`s become small tmpfs volumes.
fn small_volumes(spec: &mut PodSpec, faults: &FaultSpec) {
    for (name, size) in &faults.small_volumes {
        for v in spec.volumes.iter_mut().flatten().filter(|v| &v.name == name) {
            if let Some(ed) = v.empty_dir.as_mut() {
                tracing::warn!(volume = %name, %size, "fault: the emptyDir becomes a small tmpfs");
                ed.medium = Some("Memory".into());
                ed.size_limit = Some(k8s_openapi::apimachinery::pkg::api::resource::Quantity(
                    size.clone(),
                ));
            }
        }
    }
}

/// Add the projected service-account volume and mount it in every container that does not
/// mount something there already; returns its name.
fn mount_service_account(spec: &mut PodSpec) -> String {
    let vol = format!("kube-api-access-{}", &new_uid()[..5]);
    spec.volumes
        .get_or_insert_with(Vec::new)
        .push(projected_volume(&vol));
    for c in spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
    {
        let mounts = c.volume_mounts.get_or_insert_with(Vec::new);
        if !mounts.iter().any(|m| m.mount_path == MOUNT_PATH) {
            mounts.push(VolumeMount {
                name: vol.clone(),
                mount_path: MOUNT_PATH.into(),
                read_only: Some(true),
                ..Default::default()
            });
        }
    }
    vol
}

/// The env the kubelet adds to every container (the API at 127.0.0.1:`api_port`), and the
/// projected volume as the host directory `sa_dir`.
pub(crate) fn kubelet_env(pod: &mut Pod, api_port: u16, sa_dir: &Path) {
    let port = api_port.to_string();
    let Some(spec) = pod.spec.as_mut() else { return };
    for v in spec.volumes.iter_mut().flatten() {
        if v.projected.is_some() && v.name.starts_with("kube-api-access-") {
            v.projected = None;
            v.host_path = Some(HostPathVolumeSource {
                path: sa_dir.display().to_string(),
                type_: Some("Directory".into()),
            });
        }
    }
    let env = [
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1".to_string()),
        ("KUBERNETES_SERVICE_PORT", port.clone()),
        ("KUBERNETES_SERVICE_PORT_HTTPS", port.clone()),
        ("KUBERNETES_PORT", format!("tcp://127.0.0.1:{port}")),
    ];
    for c in spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
    {
        let list = c.env.get_or_insert_with(Vec::new);
        for (k, v) in &env {
            if !list.iter().any(|e| e.name == *k) {
                list.push(EnvVar {
                    name: (*k).into(),
                    value: Some(v.clone()),
                    value_from: None,
                });
            }
        }
    }
}

fn projected_volume(name: &str) -> Volume {
    serde_json::from_value(json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]
        }
    }))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_failure_is_admitted_as_argo_s_agent_pod_asks() {
        let body = json!({"metadata": {"name": "a"}, "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "main"}]}});
        let a = admit("ns", body, "n", &FaultSpec::default()).unwrap();
        assert_eq!(a.pod.spec.unwrap().restart_policy.as_deref(), Some("OnFailure"));
    }

    #[test]
    fn pods_are_defaulted_and_get_the_projection() {
        let body = json!({"metadata": {"generateName": "p-"}, "spec": {"containers": [{"name": "main", "image": "busybox"}]}});
        let a = admit("ns", body, "node-1", &FaultSpec::default()).unwrap();
        let spec = a.pod.spec.as_ref().unwrap();
        assert!(a.pod.metadata.name.as_deref().unwrap().starts_with("p-"));
        assert_eq!(
            (
                spec.restart_policy.as_deref(),
                spec.node_name.as_deref(),
                spec.service_account_name.as_deref()
            ),
            (Some("Never"), Some("node-1"), Some("default"))
        );
        let vol = a.sa_volume.unwrap();
        let mounts = spec.containers[0].volume_mounts.as_ref().unwrap();
        assert!(mounts.iter().any(|m| m.name == vol && m.mount_path == MOUNT_PATH));
        for (body, code) in [
            (
                json!({"metadata": {"name": "p", "namespace": "other"}, "spec": {"containers": []}}),
                400,
            ),
            (
                json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
                422,
            ),
            (
                json!({"metadata": {"name": "p"}, "spec": {"restartPolicy": "Always", "containers": [{"name": "c"}]}}),
                422,
            ),
        ] {
            assert_eq!(
                admit("ns", body, "n", &FaultSpec::default())
                    .err()
                    .map(|e| e.code),
                Some(code)
            );
        }
    }
}
