//! Images in containerd's content store, read the way the node needs them: a reference
//! normalised as `ctr images import` names it (`busybox` → `docker.io/library/busybox:latest`),
//! its manifest (the `linux/amd64` one of an index), its configuration (user, env,
//! entrypoint, command, working directory, layer diff IDs), the chain ID of its unpacked
//! snapshot, and its layers applied into a directory (image volumes; OCI whiteouts honoured).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::Mutex;

use containerd_client::services::v1::{GetImageRequest, ReadContentRequest};
use futures::TryStreamExt;
use serde_json::Value;

use super::Ctrd;
use crate::runtime::{RuntimeError, RuntimeResult};

/// What the node reads of an image's configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImageConfig {
    /// The normalised reference.
    pub name: String,
    /// The configuration's digest (the image ID, as Docker reports it).
    pub id: String,
    /// `USER` (`""`: root).
    pub user: String,
    /// `ENV`, `KEY=value`.
    pub env: Vec<String>,
    /// `ENTRYPOINT`.
    pub entrypoint: Vec<String>,
    /// `CMD`.
    pub cmd: Vec<String>,
    /// `WORKDIR`.
    pub working_dir: String,
    /// The chain ID of the top layer: the unpacked snapshot's name.
    pub chain_id: String,
    /// The layers' digests and media types, bottom first.
    pub layers: Vec<(String, String)>,
}

/// `reference` as containerd names an imported Docker image.
pub(crate) fn normalise(reference: &str) -> String {
    let (name, digest) = match reference.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (reference, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tagged = last.contains(':') || digest.is_some();
    let first = name.split('/').next().unwrap_or("");
    let has_domain =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut out = if has_domain {
        name.to_string()
    } else if name.contains('/') {
        format!("docker.io/{name}")
    } else {
        format!("docker.io/library/{name}")
    };
    if !tagged {
        out.push_str(":latest");
    }
    if let Some(d) = digest {
        out.push('@');
        out.push_str(d);
    }
    out
}

/// Configurations already read, by the digest of the image's target (content is addressed
/// by digest, so what one digest names never changes; a re-imported image has a new one).
#[derive(Debug, Default)]
pub(crate) struct ConfigCache(Mutex<HashMap<String, ImageConfig>>);

impl ConfigCache {
    /// The image's configuration; `None` when the image is not in the store. One call to
    /// containerd when its target was read before, three or four the first time.
    pub async fn config(&self, c: &Ctrd, reference: &str) -> RuntimeResult<Option<ImageConfig>> {
        let name = normalise(reference);
        let Some(target) = target(c, &name).await? else {
            return Ok(None);
        };
        let cached = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&target)
            .cloned();
        if let Some(mut hit) = cached {
            hit.name = name;
            return Ok(Some(hit));
        }
        let read = config(c, name, &target).await?;
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(target, read.clone());
        Ok(Some(read))
    }
}

/// The digest of image `name`'s target (its manifest or index); `None` when the image is
/// not in the store.
async fn target(c: &Ctrd, name: &str) -> RuntimeResult<Option<String>> {
    let got = c
        .images()
        .get(c.req(GetImageRequest {
            name: name.to_string(),
        }))
        .await;
    let image = match got {
        Ok(r) => r.into_inner().image,
        Err(s) if s.code() == containerd_client::tonic::Code::NotFound => return Ok(None),
        Err(s) => return Err(RuntimeError::containerd("get image", name, s)),
    };
    Ok(image.and_then(|i| i.target).map(|t| t.digest))
}

/// The configuration of image `name`, whose target is `target`.
async fn config(c: &Ctrd, name: String, target: &str) -> RuntimeResult<ImageConfig> {
    let mut manifest = json_blob(c, target).await?;
    if manifest.get("manifests").is_some() {
        let digest =
            pick_platform(&manifest).ok_or_else(|| invalid(&name, "no linux/amd64 manifest in its index"))?;
        manifest = json_blob(c, &digest).await?;
    }
    let config_digest = manifest["config"]["digest"]
        .as_str()
        .ok_or_else(|| invalid(&name, "its manifest names no configuration"))?
        .to_string();
    let config = json_blob(c, &config_digest).await?;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let cfg = &config["config"];
    let diff_ids = strings(&config["rootfs"]["diff_ids"]);
    let layers = manifest["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or_default().to_string();
            (s("digest"), s("mediaType"))
        })
        .collect();
    Ok(ImageConfig {
        name,
        id: config_digest,
        user: cfg["User"].as_str().unwrap_or_default().to_string(),
        env: strings(&cfg["Env"]),
        entrypoint: strings(&cfg["Entrypoint"]),
        cmd: strings(&cfg["Cmd"]),
        working_dir: cfg["WorkingDir"].as_str().unwrap_or_default().to_string(),
        chain_id: chain_id(&diff_ids),
        layers,
    })
}

/// The chain ID of layers with these diff IDs (the OCI image spec's `ChainID`).
pub(crate) fn chain_id(diff_ids: &[String]) -> String {
    let mut chain = String::new();
    for d in diff_ids {
        if chain.is_empty() {
            chain = d.clone();
        } else {
            let sum =
                aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, format!("{chain} {d}").as_bytes());
            chain = format!("sha256:{}", hex(sum.as_ref()));
        }
    }
    chain
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `linux/amd64` manifest of an index.
fn pick_platform(index: &Value) -> Option<String> {
    index["manifests"].as_array()?.iter().find_map(|m| {
        let p = &m["platform"];
        (p["os"] == "linux"
            && p["architecture"] == std::env::consts::ARCH.replace("x86_64", "amd64").as_str())
        .then(|| m["digest"].as_str().map(str::to_string))
        .flatten()
    })
}

fn invalid(name: &str, what: &str) -> RuntimeError {
    RuntimeError::Invalid {
        subject: name.to_string(),
        message: what.to_string(),
    }
}

/// A whole blob of the content store.
pub(crate) async fn blob(c: &Ctrd, digest: &str) -> RuntimeResult<Vec<u8>> {
    let req = ReadContentRequest {
        digest: digest.to_string(),
        offset: 0,
        size: 0,
    };
    let mut stream = c
        .content()
        .read(c.req(req))
        .await
        .map_err(|s| RuntimeError::containerd("read content", digest, s))?
        .into_inner();
    let mut out = Vec::new();
    while let Some(chunk) = stream
        .try_next()
        .await
        .map_err(|s| RuntimeError::containerd("read content", digest, s))?
    {
        out.extend_from_slice(&chunk.data);
    }
    Ok(out)
}

async fn json_blob(c: &Ctrd, digest: &str) -> RuntimeResult<Value> {
    let bytes = blob(c, digest).await?;
    serde_json::from_slice(&bytes).map_err(|e| RuntimeError::Invalid {
        subject: digest.to_string(),
        message: format!("not JSON: {e}"),
    })
}

/// Apply the image's layers into the directory `into`, bottom first: each layer's files
/// replace the ones below; `.wh.<name>` removes `<name>` and `.wh..wh..opq` empties its
/// directory (OCI whiteouts).
pub(crate) async fn apply_layers(c: &Ctrd, image: &ImageConfig, into: &Path) -> RuntimeResult<()> {
    std::fs::create_dir_all(into).map_err(|e| RuntimeError::io("create", into, e))?;
    for (digest, media_type) in &image.layers {
        let bytes = blob(c, digest).await?;
        let gzip = media_type.contains("gzip") || bytes.starts_with(&[0x1f, 0x8b]);
        let target = into.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let reader: Box<dyn Read> = if gzip {
                Box::new(flate2::read::GzDecoder::new(&bytes[..]))
            } else {
                Box::new(&bytes[..])
            };
            apply_layer(reader, &target)
        })
        .await
        .map_err(|e| RuntimeError::io("apply a layer into", into, std::io::Error::other(e)))??;
    }
    Ok(())
}

/// Apply one layer (a tar stream) onto `into`.
fn apply_layer(reader: impl Read, into: &Path) -> RuntimeResult<()> {
    let err = |e| RuntimeError::io("apply a layer into", into, e);
    let mut tar = tar::Archive::new(reader);
    tar.set_preserve_permissions(true);
    // No setuid or setgid bits from an image: the files belong to the node's user.
    tar.set_mask(0o6000);
    tar.set_unpack_xattrs(false);
    tar.set_overwrite(true);
    for entry in tar.entries().map_err(err)? {
        let mut entry = entry.map_err(err)?;
        let path = entry.path().map_err(err)?.into_owned();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            entry.unpack_in(into).map_err(err)?;
            continue;
        };
        if name == ".wh..wh..opq" {
            let dir = into.join(path.parent().unwrap_or(Path::new("")));
            if let Ok(list) = std::fs::read_dir(&dir) {
                for e in list.flatten() {
                    let _ = remove_any(&e.path());
                }
            }
        } else if let Some(hidden) = name.strip_prefix(".wh.") {
            let victim = into.join(path.parent().unwrap_or(Path::new(""))).join(hidden);
            let _ = remove_any(&victim);
        } else {
            entry.unpack_in(into).map_err(err)?;
        }
    }
    Ok(())
}

fn remove_any(p: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_named_as_ctr_imports_them() {
        assert_eq!(normalise("busybox"), "docker.io/library/busybox:latest");
        assert_eq!(normalise("argoexec:dev"), "docker.io/library/argoexec:dev");
        assert_eq!(
            normalise("quay.io/argoproj/argoexec:v4.0.0"),
            "quay.io/argoproj/argoexec:v4.0.0"
        );
        assert_eq!(
            normalise("argoproj/argoexec"),
            "docker.io/argoproj/argoexec:latest"
        );
        assert_eq!(normalise("localhost:5000/x"), "localhost:5000/x:latest");
    }

    #[test]
    fn chain_ids_follow_the_image_spec() {
        let one = ["sha256:a".to_string()];
        assert_eq!(chain_id(&one), "sha256:a");
        let two = ["sha256:a".to_string(), "sha256:b".to_string()];
        let sum = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, b"sha256:a sha256:b");
        assert_eq!(chain_id(&two), format!("sha256:{}", hex(sum.as_ref())));
    }

    #[test]
    fn whiteouts_remove_what_lower_layers_left() {
        let dir = tempfile::tempdir().unwrap();
        let layer = |files: &[(&str, &[u8])]| {
            let mut b = tar::Builder::new(Vec::new());
            for (name, data) in files {
                let mut h = tar::Header::new_gnu();
                h.set_size(data.len() as u64);
                h.set_mode(0o644);
                h.set_cksum();
                b.append_data(&mut h, name, *data).unwrap();
            }
            b.into_inner().unwrap()
        };
        apply_layer(
            &layer(&[("a/x", b"1"), ("a/y", b"2"), ("b", b"3")])[..],
            dir.path(),
        )
        .unwrap();
        apply_layer(
            &layer(&[("a/.wh.x", b""), (".wh.b", b""), ("c", b"4")])[..],
            dir.path(),
        )
        .unwrap();
        assert!(!dir.path().join("a/x").exists() && dir.path().join("a/y").exists());
        assert!(!dir.path().join("b").exists());
        apply_layer(&layer(&[("a/.wh..wh..opq", b"")])[..], dir.path()).unwrap();
        assert!(dir.path().join("a").is_dir() && !dir.path().join("a/y").exists());
    }
}
