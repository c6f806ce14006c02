//! Pod volumes as host directories: `emptyDir` (a fresh 0777 directory under the pod's state
//! directory, removed with the pod; a sized tmpfs for `medium: Memory`, [`crate::tmpfs`]),
//! `hostPath` (the host path itself, created for the `*OrCreate` types, never removed),
//! `downwardAPI` (files rendered once at pod start), `configMap`/`secret`
//! ([`crate::datavolume`]) and `image` (the image's file system, extracted once per image by
//! [`crate::image_volume`], read-only). Other volume types are refused with [`NodeError::Unsupported`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{DownwardAPIVolumeSource, EmptyDirVolumeSource, Pod, Volume};

use crate::datavolume::{self, DataVolume};
use crate::downward::field_value;
use crate::error::NodeError;
use crate::hostfs::{make_dir, safe_relative, write_file};
use crate::objects::PodObjects;

/// A volume ready to be bind-mounted.
#[derive(Debug, Clone)]
pub struct HostVolume {
    /// Where it lives on the host.
    pub path: PathBuf,
    /// Whether the node made it (and removes it with the pod).
    pub owned: bool,
    /// Mounted read-only regardless of the mount's `readOnly` (downwardAPI, configMap, secret).
    pub force_read_only: bool,
}

/// Create every volume of `pod` under `pod_dir/volumes`.
///
/// # Errors
/// Unsupported volume types, invalid items, a missing ConfigMap or Secret
/// ([`NodeError::Mount`]), host I/O failures.
pub(crate) fn prepare(
    pod: &Pod,
    node_name: &str,
    pod_dir: &Path,
    objects: &PodObjects,
    images: &HashMap<String, PathBuf>,
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
            empty_dir(ed, dir)?
        } else if let Some(hp) = &v.host_path {
            host_path(&pod_name, v, &hp.path, hp.type_.as_deref())?
        } else if let Some(d) = &v.downward_api {
            downward_api(pod, node_name, v, d, dir)?
        } else if let Some(s) = &v.secret {
            datavolume::prepare(&pod_name, &v.name, &DataVolume::secret(s), &dir, objects)?
        } else if let Some(cm) = &v.config_map {
            datavolume::prepare(&pod_name, &v.name, &DataVolume::config_map(cm), &dir, objects)?
        } else if let Some(path) = images.get(&v.name) {
            HostVolume {
                path: path.clone(),
                owned: false,
                force_read_only: true,
            }
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

fn empty_dir(ed: &EmptyDirVolumeSource, dir: PathBuf) -> Result<HostVolume, NodeError> {
    make_dir(&dir, 0o777)?;
    if ed.medium.as_deref() == Some("Memory") {
        let size = ed
            .size_limit
            .as_ref()
            .and_then(|q| crate::quantity::memory_bytes(&q.0));
        crate::tmpfs::mount(&dir, size)?;
    }
    Ok(HostVolume {
        path: dir,
        owned: true,
        force_read_only: false,
    })
}

fn downward_api(
    pod: &Pod,
    node_name: &str,
    v: &Volume,
    d: &DownwardAPIVolumeSource,
    dir: PathBuf,
) -> Result<HostVolume, NodeError> {
    let pod_name = || pod.metadata.name.clone().unwrap_or_default();
    make_dir(&dir, 0o755)?;
    for item in d.items.iter().flatten() {
        let rel = safe_relative(&item.path).ok_or_else(|| NodeError::Invalid {
            pod: pod_name(),
            message: format!(
                "downwardAPI volume {:?}: item path {:?} must be relative",
                v.name, item.path
            ),
        })?;
        let Some(f) = &item.field_ref else {
            return Err(NodeError::Unsupported {
                pod: pod_name(),
                what: format!("downwardAPI volume {:?} item without fieldRef", v.name),
            });
        };
        let value = field_value(pod, node_name, &f.field_path).ok_or_else(|| NodeError::Unsupported {
            pod: pod_name(),
            what: format!("downwardAPI fieldPath {:?}", f.field_path),
        })?;
        write_file(&dir.join(rel), value.as_bytes(), 0o644)?;
    }
    Ok(HostVolume {
        path: dir,
        owned: true,
        force_read_only: true,
    })
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
