//! The pod's volumes and the mounts the controller adds to its containers.
//!
//! Volumes, in Argo's creation order: `var-run-argo` (emptyDir), `tmp-dir-argo` (emptyDir,
//! v3.4+), the template's own volumes, one Secret volume per secret an artifact location
//! names, `input-artifacts` (with input artifacts), `argo-staging` (script templates),
//! `argo-env-config` (the `<pod>` ConfigMap, v3.6+, when something was offloaded), and for
//! v3.3's docker executor the `docker-sock` hostPath.
//!
//! Secret volumes (`createSecretVolumesAndMounts`): named after the Secret, with one
//! `items` entry per key used, mounted read-only at `/argo/secret/<name>` in init and wait.
//! Argo iterates a Go map, so its order varies between pods; ours is sorted. A Secret name
//! that is not a valid volume name (a dot, more than 63 characters) would make Argo's pod
//! invalid; we derive a valid one instead (`argo-secret-…`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use argoexec_core::Template;
use k8s_openapi::api::core::v1 as core;

/// `/var/run/argo`, shared by every container.
pub(crate) const VAR_RUN_ARGO: &str = "var-run-argo";
/// `/tmp` of the executor-image containers (subPath = the container's index).
pub(crate) const TMP_DIR: &str = "tmp-dir-argo";
/// Input artifacts, written by init, mounted by subPath in main.
pub(crate) const INPUT_ARTIFACTS: &str = "input-artifacts";
/// The staged script.
pub(crate) const STAGING: &str = "argo-staging";
/// The `<pod>` ConfigMap of offloaded values, at `/argo/config`.
pub(crate) const ENV_CONFIG: &str = "argo-env-config";
/// v3.3's docker executor: the node's Docker socket.
pub(crate) const DOCKER_SOCK: &str = "docker-sock";

/// A volume mount.
pub(crate) fn mount(name: &str, path: &str) -> core::VolumeMount {
    core::VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..Default::default()
    }
}

/// An emptyDir volume.
pub(crate) fn empty_dir(name: &str) -> core::Volume {
    core::Volume {
        name: name.into(),
        empty_dir: Some(Default::default()),
        ..Default::default()
    }
}

/// The `argo-env-config` volume: the whole `<pod>` ConfigMap (no `items`, every key a file).
pub(crate) fn env_config_volume(pod_name: &str) -> core::Volume {
    core::Volume {
        name: ENV_CONFIG.into(),
        config_map: Some(core::ConfigMapVolumeSource {
            name: pod_name.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Its mount at `/argo/config`.
pub(crate) fn env_config_mount() -> core::VolumeMount {
    mount(ENV_CONFIG, argoexec_core::paths::ARGO_CONFIG_DIR)
}

/// Whether `name` is a valid volume name (a DNS-1123 label).
fn is_label(name: &str) -> bool {
    let b = name.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && ok(&b[0])
        && ok(&b[b.len() - 1])
        && b.iter().all(|c| ok(c) || *c == b'-')
}

/// The volume name for Secret `secret`: the Secret's own name when valid, as Argo does.
fn secret_volume_name(secret: &str) -> String {
    if is_label(secret) {
        return secret.to_string();
    }
    let mut vol: String = format!("argo-secret-{}", secret.replace('.', "-"))
        .chars()
        .take(63)
        .collect();
    while vol.ends_with('-') {
        vol.pop();
    }
    vol
}

/// The Secret volumes for every secret the template's artifact locations (archive location,
/// outputs, inputs, a data template's `artifactPaths`) name, and their read-only mounts at
/// `/argo/secret/<name>`.
pub(crate) fn secret_volumes(template: &Template) -> (Vec<core::Volume>, Vec<core::VolumeMount>) {
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let locations = template
        .archive_location
        .as_ref()
        .map(|a| &a.location)
        .into_iter()
        .chain(template.outputs.artifacts.iter().map(|a| &a.location))
        .chain(template.inputs.artifacts.iter().map(|a| &a.location))
        .chain(
            template
                .data
                .as_ref()
                .and_then(|d| d.source.artifact_paths.as_ref())
                .map(|a| &a.location),
        );
    for loc in locations {
        for sel in loc.secret_refs() {
            keys.entry(sel.name.clone()).or_default().insert(sel.key.clone());
        }
    }
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    for (name, keys) in keys {
        let vol = secret_volume_name(&name);
        let items = keys
            .into_iter()
            .filter(|k| !k.is_empty())
            .map(|k| core::KeyToPath {
                key: k.clone(),
                path: k,
                mode: None,
            })
            .collect::<Vec<_>>();
        volumes.push(core::Volume {
            name: vol.clone(),
            secret: Some(core::SecretVolumeSource {
                secret_name: Some(name.clone()),
                items: (!items.is_empty()).then_some(items),
                ..Default::default()
            }),
            ..Default::default()
        });
        mounts.push(core::VolumeMount {
            read_only: Some(true),
            ..mount(&vol, &format!("/argo/secret/{name}"))
        });
    }
    (volumes, mounts)
}

/// The subPath mounts of supplied input artifacts outside user volumes, at their paths (or,
/// for wait, under `/mainctrfs`).
pub(crate) fn input_mounts(template: &Template) -> Vec<core::VolumeMount> {
    template
        .inputs
        .artifacts
        .iter()
        .filter_map(|a| {
            let p = a.path.as_deref()?;
            let placed =
                template.overlapping_volume(Path::new(p)).is_none() && (a.is_supplied() || !a.optional);
            placed.then(|| core::VolumeMount {
                sub_path: Some(a.name.clone()),
                ..mount(INPUT_ARTIFACTS, p)
            })
        })
        .collect()
}

/// `mounts` remapped under `/mainctrfs`: for wait all of main's mounts, made writable
/// (`addOutputArtifactsVolumes`); for init with input artifacts the template's own volume
/// mounts as they are (`addInputArtifactsVolumes`). Later mounts at a path already seen are
/// left out, as v4.1 does.
pub(crate) fn mirrored(mounts: &[core::VolumeMount], writable: bool) -> Vec<core::VolumeMount> {
    let mut seen = BTreeSet::new();
    mounts
        .iter()
        .filter(|m| seen.insert(m.mount_path.clone()))
        .map(|m| core::VolumeMount {
            mount_path: format!("/mainctrfs{}", m.mount_path),
            read_only: if writable { Some(false) } else { m.read_only },
            ..m.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_volume_names() {
        assert_eq!(secret_volume_name("my-minio-cred"), "my-minio-cred");
        assert_eq!(secret_volume_name("s3.creds"), "argo-secret-s3-creds");
        assert!(secret_volume_name(&"a".repeat(80)).len() <= 63);
    }

    #[test]
    fn secrets_from_every_location_with_their_keys() {
        let t = Template::from_json(
            r#"{"archiveLocation": {"s3": {"key": "k", "accessKeySecret": {"name": "repo", "key": "ak"},
                "secretKeySecret": {"name": "repo", "key": "sk"}}},
              "inputs": {"artifacts": [{"name": "i", "path": "/i", "s3": {"key": "x",
                "accessKeySecret": {"name": "other", "key": "id"}}}]}}"#,
        )
        .unwrap();
        let (vols, mounts) = secret_volumes(&t);
        let names: Vec<_> = vols.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["other", "repo"]);
        let items = vols[1].secret.as_ref().unwrap().items.clone().unwrap();
        assert_eq!(
            items.iter().map(|i| i.key.as_str()).collect::<Vec<_>>(),
            ["ak", "sk"]
        );
        assert_eq!(mounts[1].mount_path, "/argo/secret/repo");
        assert_eq!(mounts[1].read_only, Some(true));
    }
}
