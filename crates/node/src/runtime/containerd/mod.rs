//! [`ContainerdRuntime`]: the local node on containerd, driven through its gRPC API
//! (`containerd-client`) in a namespace of its own (`argoexec` by default).
//!
//! - Images come from containerd's content store (`ctr images import` of the image archive
//!   `scripts/image.sh` writes; nothing is pulled). A container's root is an overlayfs
//!   snapshot prepared on its image's unpacked chain.
//! - The node writes each container's OCI runtime spec itself ([`spec`]), as Docker would
//!   for the same request: host networking, the sandbox's IPC (and PID) namespace joined
//!   by path, bind mounts, limits in the cgroup `/argoexec/<id>`.
//! - The sandbox (the pause role) is a container like the others, with new IPC and PID
//!   namespaces that the pod's containers join through `/proc/<pid>/ns/…`.
//! - Output goes through FIFOs into one CRI-format log per container ([`logio`]); exec
//!   runs as a task process ([`exec`]).
//! - A task's end is read from its `Wait`; an OOM kill from the cgroup's `oom_kill`
//!   counter, read before the task is deleted (no event to race). A container that is
//!   started again (`restartPolicy: OnFailure`) gets a new task on the same snapshot.

mod exec;
pub(crate) mod image;
mod logio;
mod sandbox;
mod spec;
mod tasks;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use containerd_client::services::v1::container::Runtime;
use containerd_client::services::v1::snapshots::snapshots_client::SnapshotsClient;
use containerd_client::services::v1::snapshots::{PrepareSnapshotRequest, RemoveSnapshotRequest};
use containerd_client::services::v1::{
    Container, CreateContainerRequest, DeleteContainerRequest, ListContainersRequest,
    containers_client::ContainersClient, content_client::ContentClient, images_client::ImagesClient,
    tasks_client::TasksClient,
};
use containerd_client::tonic::transport::Channel;
use containerd_client::tonic::{Code, Request, Status};
use containerd_client::types::Mount;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use k8s_openapi::jiff::Timestamp;
use prost_types::Any;

use self::image::ImageConfig;
use self::logio::{Copier, LogFile};
use self::tasks::signal_number;
use super::{
    ContainerRuntime, ContainerSpec, ExecHandle, ExecRequest, Exit, ImageInfo, LogRequest, RuntimeError,
    RuntimeResult, SandboxSpec,
};

/// The snapshotter of containers' roots.
const SNAPSHOTTER: &str = "overlayfs";
/// The shim.
const SHIM: &str = "io.containerd.runc.v2";
/// The type of a runtime spec in an `Any`.
const SPEC_TYPE: &str = "types.containerd.io/opencontainers/runtime-spec/1/Spec";

/// A namespaced connection to containerd.
#[derive(Debug, Clone)]
pub(crate) struct Ctrd {
    channel: Channel,
    namespace: String,
}

impl Ctrd {
    /// `msg` as a request in the node's namespace.
    pub fn req<T>(&self, msg: T) -> Request<T> {
        let mut r = Request::new(msg);
        if let Ok(v) = self.namespace.parse() {
            r.metadata_mut().insert("containerd-namespace", v);
        }
        r
    }
    pub fn images(&self) -> ImagesClient<Channel> {
        ImagesClient::new(self.channel.clone())
    }
    pub fn content(&self) -> ContentClient<Channel> {
        ContentClient::new(self.channel.clone())
    }
    pub fn containers(&self) -> ContainersClient<Channel> {
        ContainersClient::new(self.channel.clone())
    }
    pub fn tasks(&self) -> TasksClient<Channel> {
        TasksClient::new(self.channel.clone())
    }
    pub fn snapshots(&self) -> SnapshotsClient<Channel> {
        SnapshotsClient::new(self.channel.clone())
    }
}

/// What the node keeps of a container it made.
#[derive(Debug)]
struct Entry {
    /// The OCI runtime spec (exec processes take their user, env and cwd from it).
    spec: serde_json::Value,
    rootfs: Vec<Mount>,
    /// FIFOs and the log.
    dir: PathBuf,
    log: Arc<LogFile>,
    tty: bool,
    memory_limited: bool,
    image_id: String,
    /// The running task's PID, its start, its output copier, and the starts so far.
    task: tokio::sync::Mutex<TaskState>,
    pid: Mutex<Option<u32>>,
}

#[derive(Debug, Default)]
struct TaskState {
    started_at: Option<Timestamp>,
    copier: Option<Copier>,
    starts: u32,
    last_exit: Option<Exit>,
    /// A task was made and not started yet (made with the container).
    created: bool,
    /// The deletion of the exited task, under way.
    deleting: Option<Deleting>,
}

/// A task's deletion running on (awaited by the next start and by the removal).
type Deleting = futures::future::Shared<BoxFuture<'static, ()>>;

/// A connection to containerd that runs the node's containers.
#[derive(Debug)]
pub struct ContainerdRuntime {
    c: Ctrd,
    dir: PathBuf,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    images: image::ConfigCache,
    /// Sandboxes that are an IPC namespace kept at a path ([`sandbox`]).
    held: Mutex<sandbox::HeldIpc>,
}

impl ContainerdRuntime {
    /// Connect to containerd at `socket`, working in `namespace`, with FIFOs and logs under
    /// `state_dir`.
    ///
    /// # Errors
    /// [`RuntimeError::Containerd`] when the socket does not answer.
    pub async fn connect(socket: &Path, namespace: &str, state_dir: &Path) -> RuntimeResult<Self> {
        let at = socket.display().to_string();
        let channel = containerd_client::connect(socket)
            .await
            .map_err(|e| RuntimeError::Connect {
                socket: at.clone(),
                source: Box::new(e),
            })?;
        let c = Ctrd {
            channel,
            namespace: namespace.to_string(),
        };
        containerd_client::services::v1::version_client::VersionClient::new(c.channel.clone())
            .version(())
            .await
            .map_err(|s| RuntimeError::containerd("ask the version of", at, s))?;
        // Made with the first container, removed with the last.
        let dir = state_dir.join("containerd");
        sandbox::sweep(&dir);
        Ok(Self {
            c,
            dir,
            entries: Mutex::new(HashMap::new()),
            images: image::ConfigCache::default(),
            held: Mutex::new(sandbox::HeldIpc::default()),
        })
    }

    fn entry(&self, id: &str) -> Option<Arc<Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Create container `spec` (joining `sandbox`'s namespaces unless it is the sandbox).
    async fn create_inner(&self, spec: ContainerSpec, is_sandbox: bool) -> RuntimeResult<String> {
        let image = self
            .images
            .config(&self.c, &spec.image)
            .await?
            .ok_or_else(|| RuntimeError::Invalid {
                subject: spec.image.clone(),
                message: "not present in containerd (import it: scripts/containerd-up.sh)".into(),
            })?;
        let sandbox = if is_sandbox {
            None
        } else {
            Some(self.sandbox_ns(&spec.sandbox)?)
        };
        let id = crate::node::new_uid().replace('-', "");
        let oci =
            spec::runtime_spec(&id, &spec, &image, sandbox).map_err(|message| RuntimeError::Invalid {
                subject: spec.image.clone(),
                message,
            })?;
        let container = Container {
            id: id.clone(),
            labels: spec.labels.clone(),
            image: image.name.clone(),
            runtime: Some(Runtime {
                name: SHIM.into(),
                options: None,
            }),
            spec: Some(Any {
                type_url: SPEC_TYPE.into(),
                value: serde_json::to_vec(&oci).unwrap_or_default(),
            }),
            snapshotter: SNAPSHOTTER.into(),
            snapshot_key: id.clone(),
            ..Default::default()
        };
        let created = self
            .c
            .containers()
            .create(self.c.req(CreateContainerRequest {
                container: Some(container),
            }))
            .await;
        if let Err(s) = created {
            return Err(RuntimeError::containerd("create container", &spec.name, s));
        }
        // After the container record that names it: containerd's garbage collector keeps
        // a snapshot a container refers to, and may remove one nothing refers to yet.
        let rootfs = match self.prepare_rootfs(&id, &image).await {
            Ok(m) => m,
            Err(e) => {
                let req = DeleteContainerRequest { id: id.clone() };
                let _ = self.c.containers().delete(self.c.req(req)).await;
                return Err(e);
            }
        };
        let dir = self.dir.join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| RuntimeError::io("create", &dir, e))?;
        let log = LogFile::open(&dir.join("container.log"))?;
        let entry = Arc::new(Entry {
            spec: oci,
            rootfs,
            dir,
            log,
            tty: spec.tty,
            memory_limited: spec.memory.is_some_and(|m| m > 0),
            image_id: image.id.clone(),
            task: tokio::sync::Mutex::new(TaskState::default()),
            pid: Mutex::new(None),
        });
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), entry.clone());
        // The task too (runc's create): the node makes a pod's containers together and then
        // starts them one by one, so their runc creates run side by side and each start is
        // only runc's start. A create that fails here is tried again by the start, whose
        // error it then is, as on Docker (where runc runs at the start).
        let mut t = entry.task.lock().await;
        if let Err(e) = self.create_task(&id, &entry, &mut t).await {
            tracing::debug!(container = %spec.name, error = %e, "the task is made at the start");
        }
        drop(t);
        Ok(id)
    }

    async fn prepare_rootfs(&self, id: &str, image: &ImageConfig) -> RuntimeResult<Vec<Mount>> {
        let req = PrepareSnapshotRequest {
            snapshotter: SNAPSHOTTER.into(),
            key: id.to_string(),
            parent: image.chain_id.clone(),
            labels: HashMap::new(),
        };
        let r = self
            .c
            .snapshots()
            .prepare(self.c.req(req))
            .await
            .map_err(|s| RuntimeError::containerd("prepare the root of", &image.name, s))?;
        Ok(r.into_inner().mounts)
    }

    async fn remove_snapshot(&self, id: &str) {
        let req = RemoveSnapshotRequest {
            snapshotter: SNAPSHOTTER.into(),
            key: id.to_string(),
        };
        if let Err(s) = self.c.snapshots().remove(self.c.req(req)).await
            && s.code() != Code::NotFound
        {
            tracing::warn!(container = id, error = %s, "could not remove a snapshot");
        }
    }
}

fn not_ours(id: &str) -> RuntimeError {
    RuntimeError::containerd("find", id, Status::not_found("no such container on this node"))
}

impl ContainerRuntime for ContainerdRuntime {
    fn scheme(&self) -> &'static str {
        "containerd"
    }

    fn image(&self, reference: &str) -> BoxFuture<'_, RuntimeResult<Option<ImageInfo>>> {
        let reference = reference.to_string();
        Box::pin(async move {
            Ok(self.images.config(&self.c, &reference).await?.map(|i| ImageInfo {
                id: i.id,
                user: i.user,
            }))
        })
    }

    fn export_image<'a>(&'a self, reference: &'a str, into: &'a Path) -> BoxFuture<'a, RuntimeResult<()>> {
        Box::pin(async move {
            let image =
                self.images
                    .config(&self.c, reference)
                    .await?
                    .ok_or_else(|| RuntimeError::Invalid {
                        subject: reference.to_string(),
                        message: "not present in containerd".into(),
                    })?;
            image::apply_layers(&self.c, &image, into).await
        })
    }

    fn run_sandbox(
        &self,
        spec: SandboxSpec,
    ) -> BoxFuture<'_, Result<String, (Option<String>, RuntimeError)>> {
        Box::pin(async move { self.run_sandbox_inner(spec).await })
    }

    fn create(&self, spec: ContainerSpec) -> BoxFuture<'_, RuntimeResult<String>> {
        Box::pin(self.create_inner(spec, false))
    }

    fn start<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), (RuntimeError, Option<i64>)>> {
        Box::pin(async move { self.start_inner(id).await.map_err(|e| (e, None)) })
    }

    fn wait<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Exit> {
        Box::pin(self.wait_inner(id))
    }

    fn stop<'a>(&'a self, id: &'a str, grace: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if self.kill(id, 15, false).await.is_err() {
                return;
            }
            if !self.exited_within(id, grace).await
                && let Err(s) = self.kill(id, 9, true).await
            {
                tracing::debug!(container = id, error = %s, "kill task");
            }
        })
    }

    fn signal<'a>(&'a self, id: &'a str, signal: &'a str) -> BoxFuture<'a, RuntimeResult<()>> {
        Box::pin(async move {
            let n = signal_number(signal).ok_or_else(|| RuntimeError::Invalid {
                subject: id.to_string(),
                message: format!("unknown signal {signal:?}"),
            })?;
            self.kill(id, n, false)
                .await
                .map_err(|s| RuntimeError::containerd("signal the task of", id, s))
        })
    }

    fn remove<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            futures::future::join_all(ids.iter().map(|id| self.remove_one(id))).await;
        })
    }

    fn list<'a>(&'a self, key: &'a str, value: &'a str) -> BoxFuture<'a, RuntimeResult<Vec<String>>> {
        Box::pin(async move {
            let req = ListContainersRequest {
                filters: vec![format!("labels.\"{key}\"==\"{value}\"")],
            };
            let r = self.c.containers().list(self.c.req(req)).await.map_err(|s| {
                RuntimeError::containerd("list containers labelled", format!("{key}={value}"), s)
            })?;
            Ok(r.into_inner().containers.into_iter().map(|c| c.id).collect())
        })
    }

    fn logs(&self, id: &str, request: LogRequest) -> BoxStream<'static, std::io::Result<Bytes>> {
        match self.entry(id) {
            Some(e) => e.log.stream(request),
            None => Box::pin(futures::stream::once(futures::future::ready(Err(
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no container {id} on this node"),
                ),
            )))),
        }
    }

    fn exec(&self, id: &str, request: ExecRequest) -> BoxFuture<'static, RuntimeResult<ExecHandle>> {
        let entry = self.entry(id);
        let c = self.c.clone();
        let id = id.to_string();
        Box::pin(async move {
            let e = entry.ok_or_else(|| not_ours(&id))?;
            exec::start(c, id, &e.spec, &e.dir, request).await
        })
    }
}
