//! [`LocalNode`]: the entry point. Connects to the container runtime and starts pods: checks the
//! spec and images before creating anything, assigns the UID, prepares volumes, creates the
//! pause container that holds the pod's IPC (and PID) namespaces, then hands the pod to its
//! lifecycle task and returns a [`PodRun`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::NodeError;
use crate::hostfs::make_dir;
use crate::objects::{ObjectData, ObjectSource, PodObjects, StaticObjects, keys_only};
use crate::run::PodRun;
use crate::runtime::containerd::ContainerdRuntime;
use crate::runtime::docker::DockerRuntime;
use crate::runtime::{ContainerRuntime, SandboxSpec};
use crate::spec::{LABEL_NODE, docker_name, labels};
use crate::state::Shared;
use crate::status;
use crate::volumes;

/// The container runtime a node drives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RuntimeChoice {
    /// The Docker Engine at [`NodeConfig::docker_socket`].
    #[default]
    Docker,
    /// containerd, through its gRPC API.
    Containerd {
        /// Its socket.
        socket: PathBuf,
        /// The containerd namespace of the node's images and containers.
        namespace: String,
    },
}

impl RuntimeChoice {
    /// The default containerd of `scripts/containerd-up.sh`.
    pub fn containerd() -> Self {
        Self::Containerd {
            socket: PathBuf::from(DEFAULT_CONTAINERD_SOCKET),
            namespace: "argoexec".into(),
        }
    }

    /// The runtime the environment names for test suites: `ARGOEXEC_NODE_RUNTIME=containerd`
    /// gives [`Self::containerd`], anything else Docker (scripts/test.sh runs some suites
    /// once more on containerd this way).
    pub fn from_env() -> Self {
        match std::env::var("ARGOEXEC_NODE_RUNTIME").as_deref() {
            Ok("containerd") => Self::containerd(),
            _ => Self::Docker,
        }
    }

    /// `docker` or `containerd`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Containerd { .. } => "containerd",
        }
    }
}

/// The socket of the project's own containerd daemon (`scripts/containerd-up.sh`).
pub const DEFAULT_CONTAINERD_SOCKET: &str = "/run/argoexec-containerd/containerd.sock";

/// How the local node is set up.
#[derive(Clone)]
pub struct NodeConfig {
    /// The container runtime.
    pub runtime: RuntimeChoice,
    /// The Docker Engine socket.
    pub docker_socket: PathBuf,
    /// Host directory under which each pod gets `<uid>/` for its volumes and termination files.
    pub state_dir: PathBuf,
    /// The node's name (`spec.nodeName`, `ARGO_KUBELET_NODE_NAME`).
    pub node_name: String,
    /// Image of the pause container (the executor image has a `pause` command).
    pub pause_image: String,
    /// Entrypoint of the pause container.
    pub pause_command: Vec<String>,
    /// Value of the `io.argoexec-rs.node` label on every container this node makes.
    pub node_label: String,
    /// Secrets of the node itself: name → key → value, visible in every namespace, for
    /// names the pod's [`ObjectSource`] does not have (volumes and env). Never printed:
    /// `Debug` shows names and keys only.
    pub secrets: std::collections::BTreeMap<String, ObjectData>,
    /// The first wait before a failed container of a `restartPolicy: OnFailure` pod is
    /// started again (doubled each time, at most 5 minutes; the kubelet's is 10 s).
    pub restart_backoff: std::time::Duration,
}

impl std::fmt::Debug for NodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeConfig")
            .field("runtime", &self.runtime)
            .field("docker_socket", &self.docker_socket)
            .field("state_dir", &self.state_dir)
            .field("node_name", &self.node_name)
            .field("pause_image", &self.pause_image)
            .field("pause_command", &self.pause_command)
            .field("node_label", &self.node_label)
            .field("secrets", &keys_only(&self.secrets))
            .field("restart_backoff", &self.restart_backoff)
            .finish()
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            runtime: RuntimeChoice::Docker,
            docker_socket: PathBuf::from("/var/run/docker.sock"),
            state_dir: std::env::temp_dir().join("argoexec-node"),
            node_name: "argoexec-local".into(),
            pause_image: "argoexec:dev".into(),
            pause_command: vec!["/argoexec-emissary".into(), "pause".into()],
            node_label: format!("pid-{}", std::process::id()),
            secrets: std::collections::BTreeMap::new(),
            restart_backoff: std::time::Duration::from_secs(10),
        }
    }
}

/// A connection to the container runtime that runs pods.
#[derive(Debug, Clone)]
pub struct LocalNode {
    runtime: Arc<dyn ContainerRuntime>,
    config: NodeConfig,
    /// `config.secrets`, shared with every pod.
    node_secrets: Arc<std::collections::BTreeMap<String, ObjectData>>,
    /// The directory of the node's pods.
    pods_home: Arc<crate::leftovers::PodsHome>,
}

impl LocalNode {
    /// Connect and check that the runtime answers; then remove what nodes that ended
    /// without cleaning up left in the state directory ([`crate::leftovers`]).
    ///
    /// # Errors
    /// [`NodeError::Connect`] when the socket does not answer.
    pub async fn connect(config: NodeConfig) -> Result<Self, NodeError> {
        let runtime: Arc<dyn ContainerRuntime> = match &config.runtime {
            RuntimeChoice::Docker => Arc::new(DockerRuntime::connect(&config.docker_socket).await.map_err(
                |source| NodeError::Connect {
                    runtime: "the Docker Engine",
                    socket: config.docker_socket.display().to_string(),
                    source,
                },
            )?),
            RuntimeChoice::Containerd { socket, namespace } => Arc::new(
                ContainerdRuntime::connect(socket, namespace, &config.state_dir)
                    .await
                    .map_err(|source| NodeError::Connect {
                        runtime: "containerd",
                        socket: socket.display().to_string(),
                        source,
                    })?,
            ),
        };
        crate::leftovers::sweep(runtime.as_ref(), &config.state_dir).await;
        let node_secrets = Arc::new(config.secrets.clone());
        Ok(Self {
            runtime,
            config,
            node_secrets,
            pods_home: Arc::default(),
        })
    }

    /// The container runtime (for the node server's logs and exec).
    pub fn runtime(&self) -> &Arc<dyn ContainerRuntime> {
        &self.runtime
    }

    /// The `USER` of `image`'s configuration (`""` when it sets none: root), as the kubelet
    /// reads it for `runAsNonRoot`.
    ///
    /// # Errors
    /// [`NodeError::ImageMissing`] when the image is not present, [`NodeError::Runtime`]
    /// when it cannot be inspected.
    pub async fn image_user(&self, image: &str) -> Result<String, NodeError> {
        let missing = || NodeError::ImageMissing {
            container: String::new(),
            image: image.to_string(),
        };
        Ok(self.runtime.image(image).await?.ok_or_else(missing)?.user)
    }

    /// The configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// Start `pod`, its ConfigMaps and Secrets being only the node's own secrets.
    /// Nothing is left behind when this fails.
    ///
    /// # Errors
    /// Invalid or unsupported specs, missing images, a missing ConfigMap or Secret of a
    /// volume (unless optional), Docker or host I/O failures.
    pub async fn start_pod(&self, pod: Pod) -> Result<PodRun, NodeError> {
        self.start_pod_with(pod, Arc::new(StaticObjects::default())).await
    }

    /// [`Self::start_pod`] reading the pod's ConfigMaps and Secrets from `objects` (then
    /// from [`NodeConfig::secrets`]): `configMap`/`secret` volumes now, env when each
    /// container is created.
    ///
    /// # Errors
    /// As [`Self::start_pod`].
    pub async fn start_pod_with(
        &self,
        mut pod: Pod,
        objects: Arc<dyn ObjectSource>,
    ) -> Result<PodRun, NodeError> {
        self.admit(&mut pod)?;
        self.check_images(&pod).await?;
        if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
            pod.metadata.uid = Some(new_uid());
        }
        let ns = pod
            .metadata
            .namespace
            .get_or_insert_with(|| "default".into())
            .clone();
        let objects = PodObjects::new(objects, self.node_secrets.clone(), &ns);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let home = self
            .pods_home
            .get(&self.config.state_dir, &self.config.node_label)?;
        let pod_dir = home.path().join(&uid);
        make_dir(&pod_dir, 0o755)?;
        let discard_dir = |pod_dir: &std::path::Path| {
            crate::tmpfs::unmount_below(pod_dir);
            let _ = std::fs::remove_dir_all(pod_dir);
        };
        let images = match self.image_volumes(&pod).await {
            Ok(i) => i,
            Err(e) => {
                discard_dir(&pod_dir);
                return Err(e);
            }
        };
        let prepared = match volumes::prepare(&pod, &self.config.node_name, &pod_dir, &objects, &images) {
            Ok(v) => v,
            Err(e) => {
                discard_dir(&pod_dir);
                return Err(e);
            }
        };
        let pause_id = match self.create_pause(&pod).await {
            Ok(id) => id,
            Err((id, e)) => {
                if let Some(id) = id {
                    self.runtime.remove(&[id]).await;
                }
                discard_dir(&pod_dir);
                return Err(e);
            }
        };
        let (tx, _) = watch::channel(status::initial(&pod));
        let shared = Arc::new(Shared {
            runtime: self.runtime.clone(),
            node_name: self.config.node_name.clone(),
            node_label: self.config.node_label.clone(),
            pod,
            pod_dir,
            home: std::sync::Mutex::new(Some(home)),
            volumes: prepared,
            objects,
            pause_id: pause_id.clone(),
            status: tx,
            ids: std::sync::Mutex::new(vec![("POD".into(), pause_id)]),
            stop: CancellationToken::new(),
            stop_grace: std::sync::Mutex::new(None),
            restart_backoff: self.config.restart_backoff,
        });
        Ok(PodRun::spawn(shared))
    }

    /// Check the spec the node can run and default it (`restartPolicy` Never or OnFailure,
    /// `nodeName`).
    fn admit(&self, pod: &mut Pod) -> Result<(), NodeError> {
        let name = pod
            .metadata
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| NodeError::Invalid {
                pod: String::new(),
                message: "metadata.name is required".into(),
            })?;
        let invalid = |message: &str| NodeError::Invalid {
            pod: name.clone(),
            message: message.into(),
        };
        let spec = pod.spec.as_mut().ok_or_else(|| invalid("spec is required"))?;
        if spec.containers.is_empty() {
            return Err(invalid("spec.containers must not be empty"));
        }
        match spec.restart_policy.as_deref() {
            None | Some("Never") => spec.restart_policy = Some("Never".into()),
            Some("OnFailure") => {}
            Some(other) => {
                return Err(NodeError::Unsupported {
                    pod: name,
                    what: format!("restartPolicy {other}"),
                });
            }
        }
        spec.node_name = Some(self.config.node_name.clone());
        Ok(())
    }

    /// Every image the pod needs (the pause image too) must be present: no registry is
    /// reachable.
    async fn check_images(&self, pod: &Pod) -> Result<(), NodeError> {
        let mut images: Vec<(String, String)> = Vec::new();
        for c in pod
            .spec
            .iter()
            .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
        {
            let image = c.image.clone().ok_or_else(|| NodeError::Invalid {
                pod: pod.metadata.name.clone().unwrap_or_default(),
                message: format!("container {:?} has no image", c.name),
            })?;
            images.push((c.name.clone(), image));
        }
        images.push(("POD".into(), self.config.pause_image.clone()));
        for (container, image) in images {
            if self.runtime.image(&image).await?.is_none() {
                return Err(NodeError::ImageMissing { container, image });
            }
        }
        Ok(())
    }

    /// The host directories of the pod's `image` volumes, by volume name.
    async fn image_volumes(
        &self,
        pod: &Pod,
    ) -> Result<std::collections::HashMap<String, PathBuf>, NodeError> {
        let mut out = std::collections::HashMap::new();
        for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            let Some(reference) = v.image.as_ref().and_then(|i| i.reference.as_deref()) else {
                continue;
            };
            let dir = crate::image_volume::prepare(
                self.runtime.as_ref(),
                &self.config.state_dir,
                &v.name,
                reference,
            )
            .await?;
            out.insert(v.name.clone(), dir);
        }
        Ok(out)
    }

    async fn create_pause(&self, pod: &Pod) -> Result<String, (Option<String>, NodeError)> {
        let spec = SandboxSpec {
            name: docker_name(pod, "POD"),
            image: self.config.pause_image.clone(),
            command: self.config.pause_command.clone(),
            labels: labels(pod, &self.config.node_label, "POD"),
            share_pid: pod
                .spec
                .as_ref()
                .and_then(|s| s.share_process_namespace)
                .unwrap_or(false),
        };
        self.runtime
            .run_sandbox(spec)
            .await
            .map_err(|(id, e)| (id, e.into()))
    }

    /// IDs of every container (running or not) that carries this node's label.
    ///
    /// # Errors
    /// Runtime failures.
    pub async fn leftover_containers(&self) -> Result<Vec<String>, NodeError> {
        Ok(self.runtime.list(LABEL_NODE, &self.config.node_label).await?)
    }

    /// Remove every container carrying this node's label (a crashed run's leftovers).
    ///
    /// # Errors
    /// Runtime failures while listing.
    pub async fn sweep(&self) -> Result<usize, NodeError> {
        let ids = self.leftover_containers().await?;
        self.runtime.remove(&ids).await;
        Ok(ids.len())
    }
}

/// A random RFC 4122 UUID from the kernel, or a time-and-pid one when that is unavailable.
pub(crate) fn new_uid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or(Duration::ZERO);
            format!(
                "{:08x}-0000-4000-8000-{:012x}",
                std::process::id(),
                t.as_nanos() as u64 & 0xffff_ffff_ffff
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_secrets_but_not_their_values() {
        let config = NodeConfig {
            secrets: [(
                "s3".to_string(),
                ObjectData::from([("secretKey".to_string(), b"hunter2".to_vec())]),
            )]
            .into(),
            ..Default::default()
        };
        let d = format!("{config:?}");
        assert!(d.contains(r#"secrets: {"s3": ["secretKey"]}"#), "{d}");
        assert!(!d.contains("104, 117"), "no bytes of the value: {d}");
    }
}
