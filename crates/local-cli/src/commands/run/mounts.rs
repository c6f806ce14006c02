//! Host directories a run mounts into its pod: the local artifact repository (in init, wait
//! and artifact-plugin containers; its key directory handed to a non-root writer), and a self-signed kubelet's CA
//! bundle for wait.

use std::path::{Path, PathBuf};

use anyhow::Context;
use argoexec_node::NodeConfig;
use k8s_openapi::api::core::v1::{HostPathVolumeSource, Pod, Volume, VolumeMount};

use super::REPO_MOUNT;

pub const REPO_VOLUME: &str = "argoexec-artifacts";

/// A non-root writer of the local repository (the first artifact-plugin sidecar, which saves
/// the outputs when a plugin serves them, else wait; its or the pod's `runAsUser`, else its
/// image's numeric `USER`, as in the `-nonroot` executor image) writes its outputs under the
/// key directory of the local repository: create it and hand it to that user, as a bucket
/// policy would, instead of making the repository world-writable.
pub async fn give_key_dir_to_wait(node: NodeConfig, pod: &Pod, dir: &Path) -> anyhow::Result<()> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(());
    };
    let aux = super::outcome::aux_name(pod);
    let writer = spec
        .containers
        .iter()
        .find(|c| c.name.starts_with(PLUGIN_SIDECAR))
        .or_else(|| spec.containers.iter().find(|c| c.name == aux));
    let sc = writer.and_then(|c| c.security_context.as_ref());
    let psc = spec.security_context.as_ref();
    let uid = sc
        .and_then(|s| s.run_as_user)
        .or_else(|| psc.and_then(|s| s.run_as_user));
    let mut gid = sc
        .and_then(|s| s.run_as_group)
        .or_else(|| psc.and_then(|s| s.run_as_group));
    let uid = match (uid, writer.and_then(|c| c.image.as_deref())) {
        (Some(u), _) => Some(u),
        (None, Some(image)) => {
            let user = argoexec_node::LocalNode::connect(node)
                .await?
                .image_user(image)
                .await?;
            let (u, g) = numeric_user(&user);
            gid = gid.or(g);
            u
        }
        (None, None) => None,
    };
    let Some(uid) = uid.filter(|u| *u != 0) else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let id = |v: i64| u32::try_from(v).ok();
    nix::unistd::chown(
        dir,
        id(uid).map(nix::unistd::Uid::from_raw),
        gid.and_then(id).map(nix::unistd::Gid::from_raw),
    )
    .with_context(|| {
        format!(
            "cannot give {} to UID {uid} (the pod's repository writer)",
            dir.display()
        )
    })?;
    Ok(())
}

/// An image's `USER` as numbers (`8737`, `8737:0`); a name (resolved in the image's own
/// `/etc/passwd`) or nothing gives `None`.
fn numeric_user(user: &str) -> (Option<i64>, Option<i64>) {
    let (u, g) = user.split_once(':').unwrap_or((user, ""));
    (u.parse().ok(), g.parse().ok())
}

/// The names of artifact-plugin sidecars and (legacy) plugin init containers.
const PLUGIN_SIDECAR: &str = "artifact-plugin-";
const PLUGIN_INIT: &str = "init-artifact-";

/// Mount the host repository into init, wait (or the supervisor) and the artifact-plugin
/// containers (a plugin such as `argoexec-plugin-dir` configured with
/// `root: /argo/artifact-repository` keeps its objects there).
pub fn attach_repository(pod: &mut Pod, repo: &Path) {
    let aux = super::outcome::aux_name(pod).to_string();
    let mut names = vec!["init".to_string(), aux];
    if let Some(spec) = pod.spec.as_ref() {
        names.extend(
            spec.init_containers
                .iter()
                .flatten()
                .chain(&spec.containers)
                .map(|c| c.name.clone())
                .filter(|n| n.starts_with(PLUGIN_SIDECAR) || n.starts_with(PLUGIN_INIT)),
        );
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    attach_host_dir(pod, REPO_VOLUME, repo, REPO_MOUNT, &names);
}

/// Mount the host directory `dir` at `mount` in the named containers.
pub fn attach_host_dir(pod: &mut Pod, volume: &str, dir: &Path, mount: &str, containers: &[&str]) {
    let Some(spec) = pod.spec.as_mut() else { return };
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: volume.into(),
        host_path: Some(HostPathVolumeSource {
            path: dir.display().to_string(),
            type_: Some("DirectoryOrCreate".into()),
        }),
        ..Default::default()
    });
    let m = VolumeMount {
        name: volume.into(),
        mount_path: mount.into(),
        read_only: Some(true).filter(|_| volume != REPO_VOLUME),
        ..Default::default()
    };
    for c in spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
    {
        if containers.contains(&c.name.as_str()) {
            c.volume_mounts.get_or_insert_with(Vec::new).push(m.clone());
        }
    }
}

/// Removes a directory on drop.
pub struct RemoveDir(pub PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where the wait container finds a self-signed kubelet's CA bundle (`kubeletCAFile`).
pub const KUBELET_CA_MOUNT: &str = "/var/run/argoexec-kubelet-ca";
pub const KUBELET_CA_VOLUME: &str = "argoexec-kubelet-ca";

/// Write the node's kubelet CA bundle for the pod (given to it by configuration, as a
/// cluster admin would with a ConfigMap).
pub fn write_kubelet_ca(server: &argoexec_node_server::NodeServer, pod: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("argoexec-kubelet-ca-{pod}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(dir.join("ca.crt"), server.kubelet_ca_pem())
        .with_context(|| format!("cannot write {}", dir.display()))?;
    Ok(dir)
}

/// Remove the empty directories under `dir`, then `dir` itself if it is left empty; keeps
/// every file. Used for the default repository directory of a run that stored nothing
/// there (outputs in S3, or none), so runs do not litter the temporary directory. Returns
/// whether `dir` is gone.
pub fn prune_empty(dir: &Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                prune_empty(&e.path());
            }
        }
    }
    // remove_dir refuses a directory that still holds anything.
    std::fs::remove_dir(dir).is_ok()
}
