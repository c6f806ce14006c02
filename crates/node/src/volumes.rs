//! Pod volumes as host directories: `emptyDir` (a fresh 0777 directory under the pod's state
//! directory, removed with the pod; a sized tmpfs for `medium: Memory`, [`crate::tmpfs`]),
//! `hostPath` (the host path itself, created for the `*OrCreate` types, never removed) and `downwardAPI` (files rendered once at pod start).
//! Other volume types are refused with [`NodeError::Unsupported`].

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Pod, Volume};

use crate::downward::field_value;
use crate::error::NodeError;

/// A volume ready to be bind-mounted.
#[derive(Debug, Clone)]
pub struct HostVolume {
    /// Where it lives on the host.
    pub path: PathBuf,
    /// Whether the node made it (and removes it with the pod).
    pub owned: bool,
    /// Mounted read-only regardless of the mount's `readOnly` (downwardAPI).
    pub force_read_only: bool,
}

/// Create every volume of `pod` under `pod_dir/volumes`.
///
/// # Errors
/// Unsupported volume types, invalid downwardAPI items, host I/O failures.
pub fn prepare(
    pod: &Pod,
    node_name: &str,
    pod_dir: &Path,
    secrets: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<u8>>>,
    config_maps: &crate::configmap::ConfigMaps,
) -> Result<HashMap<String, HostVolume>, NodeError> {
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let mut out = HashMap::new();
    for v in pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
    {
        let dir = pod_dir.join("volumes").join(&v.name);
        let hv = if let Some(ed) = &v.empty_dir {
            make_dir(&dir, 0o777)?;
            if ed.medium.as_deref() == Some("Memory") {
                let size = ed
                    .size_limit
                    .as_ref()
                    .and_then(|q| crate::quantity::memory_bytes(&q.0));
                crate::tmpfs::mount(&dir, size)?;
            }
            HostVolume {
                path: dir,
                owned: true,
                force_read_only: false,
            }
        } else if let Some(hp) = &v.host_path {
            host_path(&pod_name, v, &hp.path, hp.type_.as_deref())?
        } else if let Some(d) = &v.downward_api {
            make_dir(&dir, 0o755)?;
            for item in d.items.iter().flatten() {
                let rel = safe_relative(&item.path).ok_or_else(|| NodeError::Invalid {
                    pod: pod_name.clone(),
                    message: format!(
                        "downwardAPI volume {:?}: item path {:?} must be relative",
                        v.name, item.path
                    ),
                })?;
                let value = match &item.field_ref {
                    Some(f) => {
                        field_value(pod, node_name, &f.field_path).ok_or_else(|| NodeError::Unsupported {
                            pod: pod_name.clone(),
                            what: format!("downwardAPI fieldPath {:?}", f.field_path),
                        })?
                    }
                    None => {
                        return Err(NodeError::Unsupported {
                            pod: pod_name.clone(),
                            what: format!("downwardAPI volume {:?} item without fieldRef", v.name),
                        });
                    }
                };
                let file = dir.join(rel);
                if let Some(parent) = file.parent() {
                    make_dir(parent, 0o755)?;
                }
                std::fs::write(&file, value).map_err(|e| NodeError::io("write", &file, e))?;
            }
            HostVolume {
                path: dir,
                owned: true,
                force_read_only: true,
            }
        } else if let Some(sv) = &v.secret {
            let name = sv.secret_name.clone().unwrap_or_default();
            let data = secrets.get(&name).ok_or_else(|| NodeError::Invalid {
                pod: pod_name.clone(),
                message: format!(
                    "secret volume {:?}: secret {name:?} does not exist on this node",
                    v.name
                ),
            })?;
            make_dir(&dir, 0o755)?;
            let mode = sv.default_mode.map_or(0o644, |m| m.unsigned_abs() & 0o777);
            for (key, value) in data {
                let file = dir.join(safe_relative(key).ok_or_else(|| NodeError::Invalid {
                    pod: pod_name.clone(),
                    message: format!("secret {name:?}: key {key:?} is not a file name"),
                })?);
                std::fs::write(&file, value).map_err(|e| NodeError::io("write", &file, e))?;
                std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(mode))
                    .map_err(|e| NodeError::io("chmod", &file, e))?;
            }
            HostVolume {
                path: dir,
                owned: true,
                force_read_only: true,
            }
        } else if let Some(cm) = &v.config_map {
            crate::configmap::prepare(&pod_name, v, cm, &dir, config_maps)?
        } else {
            return Err(NodeError::Unsupported {
                pod: pod_name,
                what: format!("volume {:?} of this type", v.name),
            });
        };
        out.insert(v.name.clone(), hv);
    }
    Ok(out)
}

fn host_path(pod: &str, v: &Volume, path: &str, kind: Option<&str>) -> Result<HostVolume, NodeError> {
    let p = PathBuf::from(path);
    if !p.is_absolute() {
        return Err(NodeError::Invalid {
            pod: pod.into(),
            message: format!("hostPath volume {:?}: path {path:?} must be absolute", v.name),
        });
    }
    match kind.unwrap_or("") {
        "DirectoryOrCreate" if !p.exists() => make_dir(&p, 0o755)?,
        "FileOrCreate" if !p.exists() => {
            std::fs::write(&p, b"").map_err(|e| NodeError::io("create", &p, e))?;
        }
        "" | "DirectoryOrCreate" | "FileOrCreate" => {}
        "Directory" | "File" | "Socket" | "CharDevice" | "BlockDevice" if !p.exists() => {
            return Err(NodeError::Invalid {
                pod: pod.into(),
                message: format!(
                    "hostPath volume {:?}: {path} does not exist (type {})",
                    v.name,
                    kind.unwrap_or("")
                ),
            });
        }
        _ => {}
    }
    Ok(HostVolume {
        path: p,
        owned: false,
        force_read_only: false,
    })
}

/// Create `dir` (and parents) with `mode` on the leaf.
pub(crate) fn make_dir(dir: &Path, mode: u32) -> Result<(), NodeError> {
    std::fs::create_dir_all(dir).map_err(|e| NodeError::io("create directory", dir, e))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
        .map_err(|e| NodeError::io("chmod", dir, e))
}

/// Set the mode of an existing file or directory.
pub(crate) fn make_dir_mode(path: &Path, mode: u32) -> Result<(), NodeError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| NodeError::io("chmod", path, e))
}

/// `p` as a relative path without `..`, or `None`.
pub(crate) fn safe_relative(p: &str) -> Option<PathBuf> {
    let path = Path::new(p);
    let ok = !p.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    ok.then(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_only() {
        assert!(safe_relative("a/b").is_some());
        assert!(safe_relative("../a").is_none());
        assert!(safe_relative("/a").is_none());
        assert!(safe_relative("a/../../b").is_none());
        assert!(safe_relative("").is_none());
    }
}
