//! The pod's sandbox on containerd: what its containers join.
//!
//! Kubernetes' pause container holds a pod's shared namespaces. Here the pod's network is
//! the host's, so what it holds is the IPC namespace, and the PID namespace under
//! `shareProcessNamespace`. A PID namespace needs a process (its first, which also reaps),
//! so such a pod gets the pause container. Any other pod's IPC namespace is made by the node
//! itself and kept by a bind mount of its file, as `ip netns` keeps network namespaces: no
//! container, so no runc create, start, kill and delete and no shim on the pod's path. Its
//! containers join it by that path; the removal of the sandbox unmounts it.
//!
//! Docker keeps the pause container for every pod (its containers join a container's IPC
//! namespace, not a path).

use std::path::{Path, PathBuf};

use super::spec::SandboxNs;
use super::{ContainerSpec, ContainerdRuntime, not_ours};
use crate::runtime::{RuntimeError, RuntimeResult, SandboxSpec};

impl ContainerdRuntime {
    /// Make the sandbox of `spec`'s pod; its ID, or the ID of what was made and why it failed.
    pub(super) async fn run_sandbox_inner(
        &self,
        spec: SandboxSpec,
    ) -> Result<String, (Option<String>, RuntimeError)> {
        if !spec.share_pid {
            return self.hold_ipc().map_err(|e| (None, e));
        }
        let c = ContainerSpec {
            name: spec.name,
            image: spec.image,
            entrypoint: Some(spec.command),
            cmd: Some(Vec::new()),
            labels: spec.labels,
            ..Default::default()
        };
        let id = self.create_inner(c, true).await.map_err(|e| (None, e))?;
        self.start_inner(&id).await.map_err(|e| (Some(id.clone()), e))?;
        Ok(id)
    }

    /// A new IPC namespace kept at `<dir>/<id>/ipc`; its ID.
    fn hold_ipc(&self) -> RuntimeResult<String> {
        let id = crate::node::new_uid().replace('-', "");
        let dir = self.dir.join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| RuntimeError::io("create", &dir, e))?;
        let file = dir.join("ipc");
        if let Err(e) = new_ipc_namespace(&file) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(RuntimeError::io("keep a new IPC namespace at", &file, e));
        }
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), file);
        Ok(id)
    }

    /// Release the IPC namespace kept as sandbox `id`; whether `id` was one.
    pub(super) fn release_ipc(&self, id: &str) -> bool {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        let Some(file) = held else { return false };
        if let Err(e) = rustix::mount::unmount(&file, rustix::mount::UnmountFlags::DETACH) {
            tracing::warn!(path = %file.display(), error = %e, "could not release an IPC namespace");
        }
        if let Some(dir) = file.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
        true
    }

    /// Where a container of the pod whose sandbox is `id` joins its namespaces.
    pub(super) fn sandbox_ns(&self, id: &str) -> RuntimeResult<SandboxNs> {
        let held = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned();
        if let Some(path) = held {
            return Ok(SandboxNs::Ipc { path });
        }
        let e = self.entry(id).ok_or_else(|| not_ours(id))?;
        let pid = *e.pid.lock().unwrap_or_else(|p| p.into_inner());
        let pid = pid.ok_or_else(|| RuntimeError::Invalid {
            subject: id.to_string(),
            message: "the pod's sandbox is not running".into(),
        })?;
        Ok(SandboxNs::Pause { pid })
    }
}

/// Make a new IPC namespace and bind its file onto `at` (created empty). The namespace is
/// made by a thread of its own, which ends right after: `unshare` moves only the calling
/// thread, and no thread of the node (a tokio worker) may stay in it.
fn new_ipc_namespace(at: &Path) -> std::io::Result<()> {
    std::fs::File::create(at)?;
    let target: PathBuf = at.to_path_buf();
    let made = std::thread::Builder::new()
        .name("ipc-namespace".into())
        .spawn(move || -> std::io::Result<()> {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWIPC)?;
            rustix::mount::mount_bind("/proc/thread-self/ns/ipc", &target)?;
            Ok(())
        })?
        .join()
        .map_err(|_| std::io::Error::other("the thread making the namespace panicked"))?;
    if made.is_err() {
        let _ = std::fs::remove_file(at);
    }
    made
}
