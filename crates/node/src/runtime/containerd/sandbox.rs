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
//! The files are `<state>/containerd/ipc-<owner>/<sandbox id>`, in a directory this runtime
//! owns ([`crate::owned_dir`]: made with the first namespace, removed with the last). A
//! node that crashed leaves its namespaces mounted; the next runtime to connect to the same
//! state directory unmounts and removes those of owners no longer alive ([`sweep`]).
//!
//! Docker keeps the pause container for every pod (its containers join a container's IPC
//! namespace, not a path).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::spec::SandboxNs;
use super::{ContainerSpec, ContainerdRuntime, not_ours};
use crate::owned_dir::{self, OwnedDir};
use crate::runtime::{RuntimeError, RuntimeResult, SandboxSpec};

/// The name of the owned directory of a runtime's IPC namespaces starts so.
const IPC_PREFIX: &str = "ipc-";

/// The IPC namespaces a runtime keeps.
#[derive(Debug, Default)]
pub(super) struct HeldIpc {
    /// Their directory, while there is one.
    owner: Option<OwnedDir>,
    /// Each one's file, by sandbox ID.
    by_id: HashMap<String, PathBuf>,
}

/// Unmount and remove the IPC namespaces of runtimes that died, under `dir`
/// (`<state>/containerd`); how many runtimes' they were.
pub(super) fn sweep(dir: &Path) -> usize {
    let swept = owned_dir::sweep_dead(dir, IPC_PREFIX);
    if swept > 0 {
        tracing::info!(dir = %dir.display(), runtimes = swept, "swept the IPC namespaces of nodes that ended without removing their pods");
        // Only when empty, as after the last container.
        let _ = std::fs::remove_dir(dir);
    }
    swept
}

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

    /// A new IPC namespace kept at `<dir>/ipc-<owner>/<id>`; its ID.
    fn hold_ipc(&self) -> RuntimeResult<String> {
        let id = crate::node::new_uid().replace('-', "");
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.owner.is_none() {
            let owner = OwnedDir::create(&self.dir, IPC_PREFIX)
                .map_err(|e| RuntimeError::io("make a directory for IPC namespaces under", &self.dir, e))?;
            held.owner = Some(owner);
        }
        let file = held
            .owner
            .as_ref()
            .map(|o| o.path().join(&id))
            .unwrap_or_default();
        if let Err(e) = new_ipc_namespace(&file) {
            if held.by_id.is_empty() {
                held.owner = None;
            }
            return Err(RuntimeError::io("keep a new IPC namespace at", &file, e));
        }
        held.by_id.insert(id.clone(), file);
        Ok(id)
    }

    /// Release the IPC namespace kept as sandbox `id`; whether `id` was one.
    pub(super) fn release_ipc(&self, id: &str) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let Some(file) = held.by_id.remove(id) else {
            return false;
        };
        if let Err(e) = rustix::mount::unmount(&file, rustix::mount::UnmountFlags::DETACH) {
            tracing::warn!(path = %file.display(), error = %e, "could not release an IPC namespace");
        }
        let _ = std::fs::remove_file(&file);
        if held.by_id.is_empty() {
            // The directory goes with the last; and the runtime's, when it is empty.
            held.owner = None;
            let _ = std::fs::remove_dir(&self.dir);
        }
        true
    }

    /// Where a container of the pod whose sandbox is `id` joins its namespaces.
    pub(super) fn sandbox_ns(&self, id: &str) -> RuntimeResult<SandboxNs> {
        let held = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_id
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
