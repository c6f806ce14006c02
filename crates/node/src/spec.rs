//! Turning one Kubernetes container of a pod into the runtime's create request
//! ([`ContainerSpec`]), as dockershim did: `command` → Entrypoint and `args` → Cmd (so an explicit command drops the image's
//! Cmd), env resolved by [`crate::env`] and `$(VAR)` references expanded, container names and
//! labels, volume mounts as bind mounts (subPath directories created like the kubelet does), the
//! termination-message file, securityContext user/capabilities/privileged/read-only root,
//! resource limits, host networking, and the pause container's IPC (and PID, with
//! `shareProcessNamespace`) namespaces.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::error::NodeError;
use crate::expand::expand;
use crate::hostfs::{make_dir, safe_relative};
use crate::objects::PodObjects;
use crate::quantity::{cpu_nanos, memory_bytes};
use crate::runtime::{BindMount, ContainerSpec};
use crate::volumes::HostVolume;

/// Label keys dockershim put on containers (what Argo's docker executor looks up).
pub const LABEL_POD_NAME: &str = "io.kubernetes.pod.name";
/// Pod namespace label.
pub const LABEL_POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
/// Pod UID label.
pub const LABEL_POD_UID: &str = "io.kubernetes.pod.uid";
/// Container name label (`POD` for the pause container).
pub const LABEL_CONTAINER_NAME: &str = "io.kubernetes.container.name";
/// The local node's own label: which node instance made the container (for leak checks).
pub const LABEL_NODE: &str = "io.argoexec-rs.node";

/// Where the kubelet mounts the termination-message file by default.
pub const DEFAULT_TERMINATION_PATH: &str = "/dev/termination-log";

/// What a container needs from its pod to be created.
pub(crate) struct PodContext<'a> {
    /// The pod (with its UID assigned).
    pub pod: &'a Pod,
    /// The node's name (`spec.nodeName`).
    pub node_name: &'a str,
    /// The node's label value.
    pub node_label: &'a str,
    /// The sandbox's (pause container's) ID.
    pub pause_id: &'a str,
    /// Prepared volumes by name.
    pub volumes: &'a HashMap<String, HostVolume>,
    /// The ConfigMaps and Secrets the env may read.
    pub objects: &'a PodObjects,
    /// Host file bind-mounted as this container's termination-message file.
    pub termination_file: PathBuf,
}

/// dockershim's container name: `k8s_<container>_<pod>_<namespace>_<uid>_0`.
pub(crate) fn docker_name(pod: &Pod, container: &str) -> String {
    format!(
        "k8s_{container}_{}_{}_{}_0",
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.uid.as_deref().unwrap_or("")
    )
}

/// The labels for container `name` of `pod`.
pub fn labels(pod: &Pod, node_label: &str, name: &str) -> HashMap<String, String> {
    HashMap::from([
        (
            LABEL_POD_NAME.into(),
            pod.metadata.name.clone().unwrap_or_default(),
        ),
        (
            LABEL_POD_NAMESPACE.into(),
            pod.metadata.namespace.clone().unwrap_or_else(|| "default".into()),
        ),
        (LABEL_POD_UID.into(), pod.metadata.uid.clone().unwrap_or_default()),
        (LABEL_CONTAINER_NAME.into(), name.into()),
        (LABEL_NODE.into(), node_label.into()),
    ])
}

/// The runtime's create request for container `c`.
///
/// # Errors
/// Env refs to missing ConfigMaps/Secrets ([`NodeError::ContainerConfig`]), unsupported
/// env sources, unknown volumes, host I/O failures.
pub(crate) fn create_spec(ctx: &PodContext<'_>, c: &Container) -> Result<ContainerSpec, NodeError> {
    let pod = ctx.pod;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let env = crate::env::resolve(ctx, c)?;
    let lookup: HashMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let expand_all = |v: &Option<Vec<String>>| {
        v.as_ref()
            .map(|xs| xs.iter().map(|x| expand(x, &lookup)).collect())
    };

    let spec = pod.spec.as_ref();
    let pod_sc = spec.and_then(|s| s.security_context.as_ref());
    let sc = c.security_context.as_ref();
    let uid = sc
        .and_then(|s| s.run_as_user)
        .or_else(|| pod_sc.and_then(|s| s.run_as_user));
    let gid = sc
        .and_then(|s| s.run_as_group)
        .or_else(|| pod_sc.and_then(|s| s.run_as_group));
    let user = match (uid, gid) {
        (Some(u), Some(g)) => Some(format!("{u}:{g}")),
        (Some(u), None) => Some(u.to_string()),
        (None, Some(g)) => Some(format!("0:{g}")),
        (None, None) => None,
    };
    let caps = sc.and_then(|s| s.capabilities.as_ref());
    let limits = c.resources.as_ref().and_then(|r| r.limits.as_ref());
    let memory = limits
        .and_then(|l| l.get("memory"))
        .and_then(|q| memory_bytes(&q.0));
    let nano_cpus = limits.and_then(|l| l.get("cpu")).and_then(|q| cpu_nanos(&q.0));
    let share_pid = spec.and_then(|s| s.share_process_namespace).unwrap_or(false);

    let mut mounts = mounts(ctx, c, &pod_name)?;
    let term_path = c
        .termination_message_path
        .clone()
        .unwrap_or_else(|| DEFAULT_TERMINATION_PATH.into());
    mounts.push(bind(&ctx.termination_file, &term_path, false));

    Ok(ContainerSpec {
        name: docker_name(pod, &c.name),
        image: c.image.clone().unwrap_or_default(),
        entrypoint: expand_all(&c.command),
        cmd: expand_all(&c.args),
        env,
        working_dir: c.working_dir.clone(),
        user,
        tty: c.tty.unwrap_or(false),
        stdin: c.stdin.unwrap_or(false),
        labels: labels(pod, ctx.node_label, &c.name),
        mounts,
        sandbox: ctx.pause_id.to_string(),
        share_pid,
        privileged: sc.and_then(|s| s.privileged).unwrap_or(false),
        cap_add: caps.and_then(|c| c.add.clone()).unwrap_or_default(),
        cap_drop: caps.and_then(|c| c.drop.clone()).unwrap_or_default(),
        read_only_rootfs: sc.and_then(|s| s.read_only_root_filesystem).unwrap_or(false),
        memory,
        nano_cpus,
    })
}

fn mounts(ctx: &PodContext<'_>, c: &Container, pod: &str) -> Result<Vec<BindMount>, NodeError> {
    let mut out = Vec::new();
    for m in c.volume_mounts.iter().flatten() {
        let v = ctx.volumes.get(&m.name).ok_or_else(|| NodeError::Invalid {
            pod: pod.into(),
            message: format!(
                "container {:?} mounts volume {:?}, which the pod does not declare",
                c.name, m.name
            ),
        })?;
        let source = match m.sub_path.as_deref().filter(|s| !s.is_empty()) {
            None => v.path.clone(),
            Some(sub) => {
                let rel = safe_relative(sub).ok_or_else(|| NodeError::Invalid {
                    pod: pod.into(),
                    message: format!(
                        "container {:?}: subPath {sub:?} must be relative without '..'",
                        c.name
                    ),
                })?;
                let p = v.path.join(rel);
                if !p.exists() {
                    make_dir(&p, 0o777)?;
                }
                p
            }
        };
        out.push(bind(
            &source,
            &m.mount_path,
            m.read_only.unwrap_or(false) || v.force_read_only,
        ));
    }
    Ok(out)
}

fn bind(source: &Path, target: &str, read_only: bool) -> BindMount {
    BindMount {
        source: source.to_path_buf(),
        target: target.to_string(),
        read_only,
    }
}
