//! Where a node keeps its pods' directories, and the removal of what a node that ended
//! without cleaning up (killed, crashed) left behind.
//!
//! A node's pod directories live in a directory it owns ([`crate::owned_dir`]):
//! `<state>/node-<random>/<pod uid>`, made with the node's first pod and removed with its
//! last, beside a file naming the node's container label. When a node connects, it looks
//! for such directories whose owner is gone and removes, for each: the containers carrying
//! the dead node's label (unless a live node in the same state directory has that label
//! too), then the directory with every mount below it (`emptyDir` tmpfs volumes). The state
//! directory may be shared by nodes running side by side (it is one per machine by
//! default): the lock tells a dead node's leftovers from a live one's.
//!
//! What else a dead node leaves is somebody else's: the containerd runtime sweeps its own
//! IPC namespaces the same way (`runtime/containerd/sandbox.rs`).

use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use crate::error::NodeError;
use crate::owned_dir::{self, OwnedDir};
use crate::runtime::ContainerRuntime;
use crate::spec::LABEL_NODE;

/// The name of a node's own directory under the state directory starts so.
const PREFIX: &str = "node-";

/// The file in it that names the node's container label.
const LABEL_FILE: &str = "node-label";

/// The directory of a node's pods: made with the first pod, removed when the last lets go.
#[derive(Debug, Default)]
pub(crate) struct PodsHome {
    current: Mutex<Weak<OwnedDir>>,
}

impl PodsHome {
    /// The directory for a new pod of the node labelled `label` (made if it has none now).
    ///
    /// # Errors
    /// [`NodeError::Io`] when it cannot be made.
    pub(crate) fn get(&self, state_dir: &Path, label: &str) -> Result<Arc<OwnedDir>, NodeError> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(home) = current.upgrade() {
            return Ok(home);
        }
        let io = |e| NodeError::io("make the node's own directory under", state_dir, e);
        let home = OwnedDir::create(state_dir, PREFIX).map_err(io)?;
        std::fs::write(home.path().join(LABEL_FILE), label).map_err(io)?;
        let home = Arc::new(home);
        *current = Arc::downgrade(&home);
        Ok(home)
    }
}

/// Remove what nodes that are gone left under `state_dir` (see the module's docs); how
/// many nodes' leftovers were removed.
pub(crate) async fn sweep(runtime: &dyn ContainerRuntime, state_dir: &Path) -> usize {
    let found = owned_dir::scan(state_dir, PREFIX);
    if found.dead.is_empty() {
        return 0;
    }
    let live_labels: Vec<String> = found.live.iter().filter_map(|d| read_label(d)).collect();
    let mut swept = 0;
    for dead in found.dead {
        let label = read_label(dead.path());
        let mut containers = 0;
        match &label {
            Some(l) if live_labels.contains(l) => {
                tracing::warn!(label = %l, "a live node has the dead node's label: its containers are left alone");
            }
            Some(l) => match runtime.list(LABEL_NODE, l).await {
                Ok(ids) => {
                    runtime.remove(&ids).await;
                    containers = ids.len();
                }
                Err(e) => tracing::warn!(label = %l, error = %e, "could not list a dead node's containers"),
            },
            None => {}
        }
        let path = dead.path().to_path_buf();
        match dead.remove() {
            Ok(()) => {
                swept += 1;
                tracing::info!(
                    dir = %path.display(),
                    label = label.as_deref().unwrap_or(""),
                    containers,
                    "removed what a node that ended without cleaning up left"
                );
            }
            Err(e) => {
                tracing::warn!(dir = %path.display(), error = %e, "could not remove a dead node's directory")
            }
        }
    }
    swept
}

/// The label a node's directory names, if it has one.
fn read_label(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(LABEL_FILE))
        .ok()
        .filter(|l| !l.is_empty())
}
