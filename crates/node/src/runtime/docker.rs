//! [`DockerRuntime`]: the local node on the Docker Engine, as dockershim ran pods: the
//! sandbox is a pause container with a shareable IPC namespace, each container joins it
//! (`container:<pause>` IPC, and PID with `shareProcessNamespace`) with host networking,
//! volumes are bind mounts, limits are the Engine's `Memory` and `NanoCpus`.
//!
//! OOM kills: Docker learns of a cgroup OOM kill from containerd's `TaskOOM` event, which
//! travels apart from the exit event. Under load the exit is recorded first, and the
//! container's inspect view says `OOMKilled: false` for a process the kernel killed for
//! memory (seen on cgroup v1 with Docker 20.10). The kubelet would report `OOMKilled`, and
//! Argo's message depends on it, so [`ContainerRuntime::late_oom`] looks for Docker's `oom`
//! event of that container, replayed from its start, for a short, bounded while.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bollard::models::{ContainerCreateBody, ContainerInspectResponse, HostConfig, Mount, MountType};
use bollard::query_parameters::{
    CreateContainerOptions, EventsOptionsBuilder, KillContainerOptions, ListContainersOptions,
    RemoveContainerOptions, StopContainerOptions, WaitContainerOptions,
};
use bollard::{API_DEFAULT_VERSION, Docker};
use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use k8s_openapi::jiff::Timestamp;

use super::error::is_docker_not_found;
use super::{
    ContainerRuntime, ContainerSpec, ExecHandle, ExecRequest, Exit, ImageInfo, LogRequest, RuntimeError,
    RuntimeResult, SandboxSpec,
};

/// How long after the exit an `oom` event may still arrive.
const LATE_OOM_WINDOW: Duration = Duration::from_secs(3);

/// A connection to the Docker Engine.
#[derive(Debug, Clone)]
pub struct DockerRuntime {
    docker: Docker,
}

impl DockerRuntime {
    /// Connect to the Engine at `socket` and check that it answers.
    ///
    /// # Errors
    /// [`RuntimeError::Docker`] when the socket does not answer.
    pub async fn connect(socket: &Path) -> RuntimeResult<Self> {
        let at = socket.display().to_string();
        let err = |e| RuntimeError::docker("connect to", at.clone(), e);
        let docker = Docker::connect_with_unix(&at, 120, API_DEFAULT_VERSION).map_err(err)?;
        let docker = docker.negotiate_version().await.map_err(err)?;
        docker.ping().await.map_err(err)?;
        Ok(Self { docker })
    }

    pub(super) fn client(&self) -> &Docker {
        &self.docker
    }
}

impl ContainerRuntime for DockerRuntime {
    fn scheme(&self) -> &'static str {
        "docker"
    }

    fn image(&self, reference: &str) -> BoxFuture<'_, RuntimeResult<Option<ImageInfo>>> {
        let reference = reference.to_string();
        Box::pin(async move {
            match self.docker.inspect_image(&reference).await {
                Ok(i) => Ok(Some(ImageInfo {
                    id: i.id.unwrap_or_default(),
                    user: i.config.and_then(|c| c.user).unwrap_or_default(),
                })),
                Err(e) if is_docker_not_found(&e) => Ok(None),
                Err(e) => Err(RuntimeError::docker("inspect image", reference, e)),
            }
        })
    }

    fn export_image<'a>(&'a self, reference: &'a str, into: &'a Path) -> BoxFuture<'a, RuntimeResult<()>> {
        Box::pin(super::docker_io::export_image(self, reference, into))
    }

    fn run_sandbox(
        &self,
        spec: SandboxSpec,
    ) -> BoxFuture<'_, Result<String, (Option<String>, RuntimeError)>> {
        Box::pin(async move {
            let body = ContainerCreateBody {
                image: Some(spec.image.clone()),
                entrypoint: Some(spec.command.clone()),
                cmd: Some(vec![]),
                labels: Some(spec.labels.clone()),
                host_config: Some(HostConfig {
                    network_mode: Some("host".into()),
                    ipc_mode: Some("shareable".into()),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let opts = CreateContainerOptions {
                name: Some(spec.name.clone()),
                ..Default::default()
            };
            let id = self
                .docker
                .create_container(Some(opts), body)
                .await
                .map_err(|e| {
                    (
                        None,
                        RuntimeError::docker("create pause container", &spec.name, e),
                    )
                })?
                .id;
            self.docker.start_container(&id, None).await.map_err(|e| {
                (
                    Some(id.clone()),
                    RuntimeError::docker("start pause container", &spec.name, e),
                )
            })?;
            Ok(id)
        })
    }

    fn create(&self, spec: ContainerSpec) -> BoxFuture<'_, RuntimeResult<String>> {
        Box::pin(async move {
            let opts = CreateContainerOptions {
                name: Some(spec.name.clone()),
                ..Default::default()
            };
            let name = spec.name.clone();
            let r = self.docker.create_container(Some(opts), create_body(spec)).await;
            Ok(r.map_err(|e| RuntimeError::docker("create container", name, e))?
                .id)
        })
    }

    fn start<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), (RuntimeError, Option<i64>)>> {
        Box::pin(async move {
            if let Err(e) = self.docker.start_container(id, None).await {
                let exit_code = self
                    .docker
                    .inspect_container(id, None)
                    .await
                    .ok()
                    .and_then(|i| i.state?.exit_code);
                return Err((RuntimeError::docker("start container", id, e), exit_code));
            }
            Ok(())
        })
    }

    fn wait<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Exit> {
        Box::pin(async move {
            let opts = WaitContainerOptions {
                condition: "not-running".into(),
            };
            let code = match self.docker.wait_container(id, Some(opts)).next().await {
                Some(Ok(r)) => r.status_code,
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
                Some(Err(e)) => {
                    tracing::warn!(container = id, error = %e, "waiting for container failed");
                    -1
                }
                None => -1,
            };
            match self.docker.inspect_container(id, None).await {
                Ok(i) => exit_of(&i, code),
                Err(_) => Exit {
                    code,
                    ..Default::default()
                },
            }
        })
    }

    fn late_oom<'a>(&'a self, id: &'a str, exit: &'a Exit) -> BoxFuture<'a, bool> {
        Box::pin(late_oom_event(&self.docker, id, exit.started_at))
    }

    fn stop<'a>(&'a self, id: &'a str, grace: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let opts = StopContainerOptions {
                t: Some(i32::try_from(grace.as_secs()).unwrap_or(i32::MAX)),
                signal: None,
            };
            if let Err(e) = self.docker.stop_container(id, Some(opts)).await {
                tracing::debug!(container = %id, error = %e, "stop container");
            }
        })
    }

    fn signal<'a>(&'a self, id: &'a str, signal: &'a str) -> BoxFuture<'a, RuntimeResult<()>> {
        Box::pin(async move {
            let opts = KillContainerOptions {
                signal: signal.to_string(),
            };
            self.docker
                .kill_container(id, Some(opts))
                .await
                .map_err(|e| RuntimeError::docker("kill container", id, e))
        })
    }

    fn remove<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let opts = RemoveContainerOptions {
                force: true,
                v: true,
                ..Default::default()
            };
            let removals = ids.iter().map(|id| {
                let opts = opts.clone();
                async move {
                    match self.docker.remove_container(id, Some(opts)).await {
                        Ok(()) => {}
                        Err(e) if is_docker_not_found(&e) => {}
                        Err(e) => tracing::warn!(container = %id, error = %e, "could not remove container"),
                    }
                }
            });
            futures::future::join_all(removals).await;
        })
    }

    fn list<'a>(&'a self, key: &'a str, value: &'a str) -> BoxFuture<'a, RuntimeResult<Vec<String>>> {
        Box::pin(async move {
            let filters = HashMap::from([("label".to_string(), vec![format!("{key}={value}")])]);
            let list = self
                .docker
                .list_containers(Some(ListContainersOptions {
                    all: true,
                    filters: Some(filters),
                    ..Default::default()
                }))
                .await
                .map_err(|e| RuntimeError::docker("list containers labelled", format!("{key}={value}"), e))?;
            Ok(list.into_iter().filter_map(|c| c.id).collect())
        })
    }

    fn logs(&self, id: &str, request: LogRequest) -> BoxStream<'static, std::io::Result<Bytes>> {
        super::docker_io::logs(&self.docker, id, &request)
    }

    fn exec(&self, id: &str, request: ExecRequest) -> BoxFuture<'static, RuntimeResult<ExecHandle>> {
        Box::pin(super::docker_io::exec(
            self.docker.clone(),
            id.to_string(),
            request,
        ))
    }
}

/// The Engine's create body for `spec`.
fn create_body(spec: ContainerSpec) -> ContainerCreateBody {
    let some_vec = |v: Vec<String>| (!v.is_empty()).then_some(v);
    let mounts = spec
        .mounts
        .into_iter()
        .map(|m| Mount {
            source: Some(m.source.display().to_string()),
            target: Some(m.target),
            typ: Some(MountType::BIND),
            read_only: Some(m.read_only),
            ..Default::default()
        })
        .collect();
    ContainerCreateBody {
        image: Some(spec.image),
        entrypoint: spec.entrypoint,
        cmd: spec.cmd,
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        working_dir: spec.working_dir,
        user: spec.user,
        tty: Some(spec.tty),
        open_stdin: Some(spec.stdin),
        labels: Some(spec.labels),
        host_config: Some(HostConfig {
            network_mode: Some("host".into()),
            ipc_mode: Some(format!("container:{}", spec.sandbox)),
            pid_mode: spec.share_pid.then(|| format!("container:{}", spec.sandbox)),
            privileged: Some(spec.privileged),
            cap_add: some_vec(spec.cap_add),
            cap_drop: some_vec(spec.cap_drop),
            readonly_rootfs: Some(spec.read_only_rootfs),
            memory: spec.memory,
            nano_cpus: spec.nano_cpus,
            mounts: Some(mounts),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// How the inspected container ended (`code`: what the wait returned).
fn exit_of(i: &ContainerInspectResponse, code: i64) -> Exit {
    let st = i.state.as_ref();
    Exit {
        code: st.and_then(|s| s.exit_code).unwrap_or(code),
        oom_killed: st.and_then(|s| s.oom_killed).unwrap_or(false),
        memory_limited: i
            .host_config
            .as_ref()
            .and_then(|h| h.memory)
            .is_some_and(|m| m > 0),
        started_at: st.and_then(|s| s.started_at.as_deref()).and_then(parse_time),
        finished_at: st.and_then(|s| s.finished_at.as_deref()).and_then(parse_time),
        image_id: i.image.clone().unwrap_or_default(),
    }
}

/// Docker's RFC 3339 time, `None` for its zero time.
fn parse_time(s: &str) -> Option<Timestamp> {
    let t: Timestamp = s.parse().ok()?;
    (t.as_second() > 0).then_some(t)
}

/// Whether Docker reports an `oom` event for container `id` from its start until a moment
/// from now; returns as soon as one is seen.
async fn late_oom_event(docker: &Docker, id: &str, started: Option<Timestamp>) -> bool {
    let started = started.map_or(0, |t| t.as_second().max(0));
    let until = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| (d + LATE_OOM_WINDOW).as_secs());
    let filters = HashMap::from([
        ("type", vec!["container".to_string()]),
        ("container", vec![id.to_string()]),
        ("event", vec!["oom".to_string()]),
    ]);
    let opts = EventsOptionsBuilder::new()
        .since(&started.to_string())
        .until(&until.to_string())
        .filters(&filters)
        .build();
    let mut events = docker.events(Some(opts));
    // The stream ends by itself at `until`; the timeout only guards a daemon that never answers.
    let first = tokio::time::timeout(LATE_OOM_WINDOW * 2, events.next()).await;
    matches!(first, Ok(Some(Ok(_))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::BindMount;

    #[test]
    fn a_container_joins_the_sandbox_and_binds_its_volumes() {
        let spec = ContainerSpec {
            image: "busybox".into(),
            env: vec![("A".into(), "1".into())],
            mounts: vec![BindMount {
                source: "/host/v".into(),
                target: "/v".into(),
                read_only: true,
            }],
            sandbox: "pause1".into(),
            share_pid: true,
            memory: Some(64 << 20),
            ..Default::default()
        };
        let body = create_body(spec);
        let host = body.host_config.unwrap();
        assert_eq!(host.ipc_mode.as_deref(), Some("container:pause1"));
        assert_eq!(host.pid_mode.as_deref(), Some("container:pause1"));
        assert_eq!(host.network_mode.as_deref(), Some("host"));
        assert_eq!(host.memory, Some(64 << 20));
        assert_eq!(host.cap_add, None, "no capability list when none is asked for");
        let m = &host.mounts.unwrap()[0];
        assert_eq!(
            (m.source.as_deref(), m.target.as_deref()),
            (Some("/host/v"), Some("/v"))
        );
        assert_eq!(m.read_only, Some(true));
        assert_eq!(body.env.unwrap(), ["A=1"]);
        let alone = create_body(ContainerSpec {
            sandbox: "p".into(),
            ..Default::default()
        });
        assert_eq!(
            alone.host_config.unwrap().pid_mode,
            None,
            "no shared PID namespace unless asked"
        );
    }

    #[test]
    fn an_exit_reads_dockers_zero_time_as_unknown() {
        let i = ContainerInspectResponse {
            state: Some(bollard::models::ContainerState {
                exit_code: Some(137),
                oom_killed: Some(false),
                started_at: Some("2026-12-06T10:00:00.5Z".into()),
                finished_at: Some("0001-01-01T00:00:00Z".into()),
                ..Default::default()
            }),
            host_config: Some(HostConfig {
                memory: Some(1 << 20),
                ..Default::default()
            }),
            ..Default::default()
        };
        let e = exit_of(&i, -1);
        assert_eq!(e.code, 137);
        assert!(e.started_at.is_some() && e.finished_at.is_none());
        assert!(e.may_be_late_oom());
    }
}
