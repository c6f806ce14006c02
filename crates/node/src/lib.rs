//! The local node: runs Kubernetes Pod specs on a local container runtime (the Docker
//! Engine, behind the [`runtime`] seam) the way dockershim did, so every executor backend
//! can run for real on one machine.
//!
//! A pod gets a pause container (`POD`) holding its IPC namespace (and its PID namespace
//! when `shareProcessNamespace` is set); every container joins it, with host networking so
//! containers reach endpoints on loopback. Volumes are host directories (`emptyDir`,
//! `hostPath`, `downwardAPI`, `secret`, `configMap`), mounted with subPath support; ConfigMaps
//! and Secrets (volumes, env) are read from an [`ObjectSource`]. Containers carry dockershim's
//! labels (`io.kubernetes.pod.name/namespace/uid`, `io.kubernetes.container.name`), which
//! is how the docker backend finds them. The live [`k8s_openapi::api::core::v1::PodStatus`]
//! is published on a watch channel.
//!
//! ```no_run
//! # async fn demo(pod: k8s_openapi::api::core::v1::Pod) -> Result<(), argoexec_node::NodeError> {
//! let node = argoexec_node::LocalNode::connect(Default::default()).await?;
//! let run = node.start_pod(pod).await?;
//! let status = run.finished().await;
//! println!("{:?}", status.phase);
//! run.cleanup().await
//! # }
//! ```

mod datavolume;
pub mod downward;
mod env;
mod error;
mod expand;
mod hostfs;
mod image_volume;
mod leftovers;
mod lifecycle;
mod node;
pub mod nonroot;
pub mod objects;
mod owned_dir;
pub mod quantity;
mod run;
pub mod runtime;
mod sidecars;
pub mod spec;
mod state;
pub mod status;
pub mod tmpfs;
mod volumes;

pub use error::NodeError;
pub use node::{DEFAULT_CONTAINERD_SOCKET, LocalNode, NodeConfig, RuntimeChoice};
pub use objects::{ConfigError, ObjectData, ObjectSource, StaticObjects};
pub use run::PodRun;
pub use state::{EVICTED_MESSAGE, StopReason};
pub use volumes::HostVolume;
