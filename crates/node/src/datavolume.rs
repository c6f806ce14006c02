//! `configMap` and `secret` volumes, one code path for both as in the kubelet
//! (`MakePayload`): every key of the object, or only the `items` listed, each at its `path`,
//! as a file of mode `items[].mode`, else `defaultMode`, else 0644, in a directory mounted
//! read-only. The data is read once, when the pod starts. A `secret` volume's directory is a
//! tmpfs, as the kubelet keeps secrets off disk (a plain directory when the host refuses the
//! mount).
//!
//! A missing object fails the pod with the kubelet's `MountVolume.SetUp failed …` message
//! unless the volume is `optional` (the directory is then empty); so does a key of `items`
//! that the object lacks (skipped when `optional`).

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, KeyToPath, SecretVolumeSource};

use crate::error::NodeError;
use crate::hostfs::{make_dir, safe_relative, write_file};
use crate::objects::{ConfigError, DataKind, ObjectData, PodObjects};
use crate::volumes::HostVolume;

/// The kubelet's default file mode of both volume types.
const DEFAULT_MODE: u32 = 0o644;

/// A `configMap` or `secret` volume source, whichever it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DataVolume<'a> {
    /// ConfigMap or Secret.
    pub kind: DataKind,
    /// The object's name.
    pub name: &'a str,
    /// Keys to project (all when empty).
    pub items: &'a [KeyToPath],
    /// Mode of files without their own.
    pub default_mode: Option<i32>,
    /// A missing object or key is not an error.
    pub optional: bool,
}

impl<'a> DataVolume<'a> {
    /// A `configMap` volume.
    pub fn config_map(s: &'a ConfigMapVolumeSource) -> Self {
        Self {
            kind: DataKind::ConfigMap,
            name: &s.name,
            items: s.items.as_deref().unwrap_or_default(),
            default_mode: s.default_mode,
            optional: s.optional == Some(true),
        }
    }

    /// A `secret` volume.
    pub fn secret(s: &'a SecretVolumeSource) -> Self {
        Self {
            kind: DataKind::Secret,
            name: s.secret_name.as_deref().unwrap_or(""),
            items: s.items.as_deref().unwrap_or_default(),
            default_mode: s.default_mode,
            optional: s.optional == Some(true),
        }
    }
}

/// One file of the volume.
#[derive(Debug, PartialEq, Eq)]
struct File<'d> {
    path: PathBuf,
    bytes: &'d [u8],
    mode: u32,
}

/// Make volume `volume` of pod `pod` in `dir` from `src`, reading the object from `objects`.
///
/// # Errors
/// [`NodeError::Mount`] for a missing object or key (unless optional),
/// [`NodeError::Invalid`] for an item path that leaves the volume; host I/O failures.
pub(crate) fn prepare(
    pod: &str,
    volume: &str,
    src: &DataVolume<'_>,
    dir: &Path,
    objects: &PodObjects,
) -> Result<HostVolume, NodeError> {
    let mount_err = |source| NodeError::Mount {
        pod: pod.to_string(),
        volume: volume.to_string(),
        source: Box::new(source),
    };
    let data = match objects.require(src.kind, src.name) {
        Ok(d) => d,
        Err(_) if src.optional => ObjectData::new(),
        Err(e) => return Err(mount_err(e)),
    };
    let files = payload(src, &data).map_err(|e| match e {
        Payload::Missing(e) => mount_err(e),
        Payload::BadPath(path) => NodeError::Invalid {
            pod: pod.to_string(),
            message: format!(
                "{} volume {volume:?}: item path {path:?} must be relative, without '..'",
                src.kind.noun()
            ),
        },
    })?;
    make_dir(dir, 0o755)?;
    if src.kind == DataKind::Secret {
        match crate::tmpfs::mount(dir, None) {
            Ok(()) => make_dir(dir, 0o755)?,
            Err(e) => tracing::warn!(%volume, error = %e, "secret volume on disk: the host refused a tmpfs"),
        }
    }
    for f in files {
        write_file(&dir.join(&f.path), f.bytes, f.mode)?;
    }
    Ok(HostVolume {
        path: dir.to_path_buf(),
        owned: true,
        force_read_only: true,
    })
}

/// Why the files could not be listed.
enum Payload {
    Missing(ConfigError),
    BadPath(String),
}

/// The files of `src` over `data`, as the kubelet's `MakePayload` lists them.
fn payload<'d>(src: &DataVolume<'_>, data: &'d ObjectData) -> Result<Vec<File<'d>>, Payload> {
    let mode_of = |m: Option<i32>| m.map(|m| m.unsigned_abs() & 0o777);
    let default_mode = mode_of(src.default_mode).unwrap_or(DEFAULT_MODE);
    if src.items.is_empty() {
        return Ok(data
            .iter()
            .map(|(k, v)| File {
                path: PathBuf::from(k),
                bytes: v,
                mode: default_mode,
            })
            .collect());
    }
    let mut files = Vec::new();
    for item in src.items {
        let Some(bytes) = data.get(&item.key) else {
            if src.optional {
                continue;
            }
            return Err(Payload::Missing(ConfigError::NoVolumeKey {
                kind: src.kind,
                key: item.key.clone(),
            }));
        };
        let path = safe_relative(&item.path).ok_or_else(|| Payload::BadPath(item.path.clone()))?;
        files.push(File {
            path,
            bytes,
            mode: mode_of(item.mode).unwrap_or(default_mode),
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    use super::*;
    use crate::objects::StaticObjects;

    fn item(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
        KeyToPath {
            key: key.into(),
            path: path.into(),
            mode,
        }
    }

    fn objects() -> PodObjects {
        let data = ObjectData::from([("a".into(), b"1".to_vec()), ("b".into(), b"2".to_vec())]);
        let source = StaticObjects {
            config_maps: BTreeMap::from([("c".into(), data)]),
            ..Default::default()
        };
        PodObjects::new(Arc::new(source), Arc::default(), "ns")
    }

    fn volume<'a>(name: &'a str, items: &'a [KeyToPath], optional: bool) -> DataVolume<'a> {
        DataVolume {
            kind: DataKind::ConfigMap,
            name,
            items,
            default_mode: Some(0o440),
            optional,
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn all_keys_or_the_items_with_their_modes() {
        let d = tempfile::tempdir().unwrap();
        let all = d.path().join("all");
        prepare("p", "v", &volume("c", &[], false), &all, &objects()).unwrap();
        assert_eq!(std::fs::read(all.join("b")).unwrap(), b"2");
        assert_eq!(mode(&all.join("a")), 0o440);
        let one = d.path().join("one");
        let items = [item("a", "sub/x", Some(0o400)), item("b", "y", None)];
        prepare("p", "v", &volume("c", &items, false), &one, &objects()).unwrap();
        assert_eq!(std::fs::read(one.join("sub/x")).unwrap(), b"1");
        assert_eq!((mode(&one.join("sub/x")), mode(&one.join("y"))), (0o400, 0o440));
        assert!(!one.join("a").exists());
    }

    #[test]
    fn missing_objects_and_keys_fail_unless_optional() {
        let d = tempfile::tempdir().unwrap();
        let e = prepare(
            "p",
            "v",
            &volume("gone", &[], false),
            &d.path().join("x"),
            &objects(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "pod \"p\": MountVolume.SetUp failed for volume \"v\" : configmap \"gone\" not found"
        );
        assert!(!d.path().join("x").exists(), "nothing made for a failed volume");
        let empty = d.path().join("y");
        prepare("p", "v", &volume("gone", &[], true), &empty, &objects()).unwrap();
        assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
        let items = [item("nope", "n", None), item("a", "a", None)];
        let e = prepare(
            "p",
            "v",
            &volume("c", &items, false),
            &d.path().join("z"),
            &objects(),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .ends_with(": configmap references non-existent config key: nope"),
            "{e}"
        );
        let some = d.path().join("w");
        prepare("p", "v", &volume("c", &items, true), &some, &objects()).unwrap();
        assert!(some.join("a").exists() && !some.join("n").exists());
        let bad = [item("a", "../escape", None)];
        let e = prepare(
            "p",
            "v",
            &volume("c", &bad, false),
            &d.path().join("b"),
            &objects(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("must be relative"), "{e}");
    }

    #[test]
    fn secret_keys_use_the_secret_wording() {
        let items = [item("k", "k", None)];
        let src = DataVolume {
            kind: DataKind::Secret,
            name: "s",
            items: &items,
            default_mode: None,
            optional: false,
        };
        match payload(&src, &ObjectData::new()) {
            Err(Payload::Missing(e)) => assert_eq!(e.to_string(), "references non-existent secret key: k"),
            _ => panic!("a missing key must be an error"),
        }
    }
}
