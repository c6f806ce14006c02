//! `configMap` volumes, as the kubelet makes them: every key of the ConfigMap (or only the
//! `items` listed, each at its `path`) as a file of mode `items[].mode`, else `defaultMode`,
//! else 0644, in a directory mounted read-only. The data comes from the caller (the API
//! server's store) when the pod starts; the files are written once, like `secret` volumes.
//!
//! A ConfigMap that does not exist fails the pod with the kubelet's message unless the
//! volume is `optional` (then the directory is empty); so does an `items` key missing from the
//! ConfigMap.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, Volume};

use crate::error::NodeError;
use crate::volumes::{HostVolume, make_dir, safe_relative};

/// ConfigMaps a pod may mount, in its namespace: name → key → bytes (`data` and
/// `binaryData` together).
pub type ConfigMaps = BTreeMap<String, BTreeMap<String, Vec<u8>>>;

/// Write the files of `cm` (the source of volume `v`) into `dir`.
///
/// # Errors
/// [`NodeError::Invalid`] for a missing ConfigMap or key, or a path that is not relative;
/// host I/O failures.
pub(crate) fn prepare(
    pod: &str,
    v: &Volume,
    cm: &ConfigMapVolumeSource,
    dir: &Path,
    maps: &ConfigMaps,
) -> Result<HostVolume, NodeError> {
    let invalid = |message: String| NodeError::Invalid {
        pod: pod.to_string(),
        message,
    };
    make_dir(dir, 0o755)?;
    let optional = cm.optional == Some(true);
    let data = match maps.get(&cm.name) {
        Some(d) => d,
        None if optional => {
            return Ok(read_only(dir));
        }
        None => {
            return Err(invalid(format!(
                "MountVolume.SetUp failed for volume {:?} : configmap {:?} not found",
                v.name, cm.name
            )));
        }
    };
    let default_mode = cm.default_mode.map_or(0o644, |m| m.unsigned_abs() & 0o777);
    let files: Vec<(String, String, u32)> = match &cm.items {
        Some(items) if !items.is_empty() => items
            .iter()
            .map(|i| {
                let mode = i.mode.map_or(default_mode, |m| m.unsigned_abs() & 0o777);
                (i.key.clone(), i.path.clone(), mode)
            })
            .collect(),
        _ => data
            .keys()
            .map(|k| (k.clone(), k.clone(), default_mode))
            .collect(),
    };
    for (key, path, mode) in files {
        let Some(value) = data.get(&key) else {
            if optional {
                continue;
            }
            return Err(invalid(format!(
                "MountVolume.SetUp failed for volume {:?} : configmap references non-existent config key: {key}",
                v.name
            )));
        };
        let rel = safe_relative(&path).ok_or_else(|| {
            invalid(format!(
                "configMap volume {:?}: item path {path:?} must be relative, without '..'",
                v.name
            ))
        })?;
        let file = dir.join(rel);
        if let Some(parent) = file.parent() {
            make_dir(parent, 0o755)?;
        }
        std::fs::write(&file, value).map_err(|e| NodeError::io("write", &file, e))?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))
            .map_err(|e| NodeError::io("chmod", &file, e))?;
    }
    Ok(read_only(dir))
}

fn read_only(dir: &Path) -> HostVolume {
    HostVolume {
        path: dir.to_path_buf(),
        owned: true,
        force_read_only: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::KeyToPath;

    fn source(name: &str, items: Option<Vec<KeyToPath>>, optional: bool) -> ConfigMapVolumeSource {
        ConfigMapVolumeSource {
            name: name.into(),
            items,
            default_mode: Some(0o444),
            optional: Some(optional),
        }
    }

    #[test]
    fn keys_items_modes_and_missing_maps() {
        let d = tempfile::tempdir().unwrap();
        let v = Volume {
            name: "cfg".into(),
            ..Default::default()
        };
        let maps = ConfigMaps::from([(
            "c".to_string(),
            BTreeMap::from([
                ("template".to_string(), b"{}".to_vec()),
                ("other".to_string(), b"x".to_vec()),
            ]),
        )]);
        let all = d.path().join("all");
        prepare("p", &v, &source("c", None, false), &all, &maps).unwrap();
        assert_eq!(std::fs::read(all.join("template")).unwrap(), b"{}");
        let mode = std::fs::metadata(all.join("other")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o444);
        let one = d.path().join("one");
        let items = vec![KeyToPath {
            key: "template".into(),
            path: "sub/t.json".into(),
            mode: Some(0o400),
        }];
        prepare("p", &v, &source("c", Some(items), false), &one, &maps).unwrap();
        assert_eq!(std::fs::read(one.join("sub/t.json")).unwrap(), b"{}");
        assert!(!one.join("other").exists());
        let e = prepare("p", &v, &source("gone", None, false), &d.path().join("x"), &maps)
            .unwrap_err()
            .to_string();
        assert!(e.contains("configmap \"gone\" not found"), "{e}");
        assert!(prepare("p", &v, &source("gone", None, true), &d.path().join("y"), &maps).is_ok());
        let bad = vec![KeyToPath {
            key: "nope".into(),
            path: "n".into(),
            mode: None,
        }];
        let e = prepare(
            "p",
            &v,
            &source("c", Some(bad), false),
            &d.path().join("z"),
            &maps,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("non-existent config key: nope"), "{e}");
    }
}
