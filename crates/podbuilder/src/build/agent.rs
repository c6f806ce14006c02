//! The agent: the `WorkflowTaskSet` and the agent pod a controller creates for a workflow
//! with HTTP or executor-plugin nodes (AW@v4.1.2 `workflow/controller/agent.go`
//! `createAgentPod`, `taskset.go`; contract §1.4).
//!
//! - The task set has the workflow's name and namespace, is owned by the Workflow, and maps
//!   node IDs to their resolved templates; its label `workflows.argoproj.io/completed` starts
//!   `false`.
//! - The pod is `<wf.NodeID("agent")>-agent` (`<wf>-1340600742-agent`), labelled with the
//!   workflow, `completed=false` and `component=agent`, owned by the Workflow, with
//!   `restartPolicy: OnFailure`, the workflow's service account without an automounted
//!   token (the account's token Secret is mounted in its place, on a volume named
//!   `kube-api-access-<suffix>`), `init` (`agent init`) then the plugin sidecars and `main`
//!   (`agent main`), both with the version's log options (v3.5: `--loglevel` only),
//!   10m/64M requests, 100m/256M limits (the controller's `ARGO_AGENT_CPU_LIMIT` /
//!   `ARGO_AGENT_MEMORY_LIMIT` override them), Argo's minimal security contexts (v3.5: the
//!   non-root user 8737 without a seccomp profile).
//! - Not rendered (yet): the workflow's `imagePullSecrets`, scheduling constraints,
//!   `podMetadata`, `dnsConfig`, and the service-account token volumes of plugins that ask
//!   for one (`sidecar.automountServiceAccountToken`).
//! - Argo names the token volume with 5 random characters; here the suffix is derived from
//!   the workflow's UID, so the same workflow renders the same pod (golden tests).

use std::collections::BTreeMap;

use argoexec_core::ArgoVersion;
use argoexec_core::artifact_gc::fnv32a;
use argoexec_core::task_set::{API_VERSION, COMPLETED_LABEL, KIND, TaskSetSpec, WorkflowTaskSet};
use argoexec_core::template::{MAIN, Template};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use super::{BuildError, BuildOptions, WorkflowMeta, workflow_owner};

/// Where the controller mounts the optional CA Secret.
pub const CA_MOUNT: &str = "/etc/ssl/certs/ca-certificates/";
/// The optional CA Secret's name.
pub const CA_SECRET: &str = "argo-workflows-agent-ca-certificates";
/// Where the service-account token Secret is mounted.
pub const TOKEN_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// One executor plugin (a ConfigMap labelled `workflows.argoproj.io/configmap-type:
/// ExecutorPlugin`): its sidecar container, which must declare a port.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPlugin {
    /// The sidecar container (`sidecar.container` of the plugin's spec).
    pub container: core::Container,
}

/// What the agent pod runs as, beyond the workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPodInfo {
    /// The workflow's service account (`spec.serviceAccountName`; `default` when unset).
    pub service_account: String,
    /// The account's token Secret (its `secrets[0]`, or Argo's
    /// `<account>.service-account-token` convention).
    pub token_secret: String,
    /// `ARGO_AGENT_PATCH_RATE` (the controller's requeue time).
    pub patch_rate: String,
    /// `ARGO_AGENT_TASK_WORKERS`, when the controller sets it.
    pub task_workers: Option<String>,
    /// Whether the `argo-workflows-agent-ca-certificates` Secret exists (then mounted).
    pub ca_secret: bool,
    /// `ARGO_AGENT_CPU_LIMIT` and `ARGO_AGENT_MEMORY_LIMIT` of the controller.
    pub limits: (String, String),
}

impl AgentPodInfo {
    /// The defaults of a controller without overrides, for `service_account`.
    pub fn new(service_account: &str) -> Self {
        Self {
            service_account: service_account.into(),
            token_secret: format!("{service_account}.service-account-token"),
            patch_rate: "10s".into(),
            task_workers: None,
            ca_secret: false,
            limits: ("100m".into(), "256M".into()),
        }
    }
}

/// The agent pod's name (`wf.NodeID("agent") + "-agent"`).
pub fn agent_pod_name(wf: &str) -> String {
    format!("{wf}-{}-agent", fnv32a("agent"))
}

/// The task set of `tasks` (node ID → resolved template).
pub fn task_set(wf: &WorkflowMeta, tasks: BTreeMap<String, Template>) -> WorkflowTaskSet {
    WorkflowTaskSet {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        metadata: json!({
            "name": wf.name,
            "namespace": wf.namespace,
            "labels": {COMPLETED_LABEL: "false"},
            "ownerReferences": [workflow_owner(wf)],
        }),
        spec: TaskSetSpec { tasks },
        status: Default::default(),
    }
}

/// The agent pod.
///
/// # Errors
/// [`BuildError::BadValue`] for a plugin sidecar without a port (Argo's validation).
pub fn agent_pod(
    wf: &WorkflowMeta,
    plugins: &[AgentPlugin],
    info: &AgentPodInfo,
    opts: &BuildOptions,
) -> Result<core::Pod, BuildError> {
    let version = opts.argo_version;
    let mut names = Vec::new();
    let mut addresses = Vec::new();
    let mut sidecars = Vec::new();
    for p in plugins {
        let port = p
            .container
            .ports
            .as_ref()
            .and_then(|ports| ports.first())
            .ok_or_else(|| BuildError::BadValue {
                what: format!("executor plugin {}", p.container.name),
                message: "the sidecar declares no port".into(),
            })?;
        names.push(p.container.name.clone());
        addresses.push(format!("http://localhost:{}", port.container_port));
        let mut c = p.container.clone();
        c.volume_mounts
            .get_or_insert_with(Vec::new)
            .push(core::VolumeMount {
                name: "var-run-argo".into(),
                mount_path: "/var/run/argo".into(),
                sub_path: Some(p.container.name.clone()),
                read_only: Some(true),
                ..Default::default()
            });
        sidecars.push(c);
    }
    let token_volume = format!("kube-api-access-{}", suffix(&wf.uid));
    let mut mounts = vec![
        core::VolumeMount {
            name: "var-run-argo".into(),
            mount_path: "/var/run/argo".into(),
            ..Default::default()
        },
        core::VolumeMount {
            name: token_volume.clone(),
            mount_path: TOKEN_MOUNT.into(),
            read_only: Some(true),
            ..Default::default()
        },
    ];
    let mut volumes = vec![
        core::Volume {
            name: "var-run-argo".into(),
            empty_dir: Some(Default::default()),
            ..Default::default()
        },
        secret_volume(&token_volume, &info.token_secret),
    ];
    if info.ca_secret {
        volumes.push(secret_volume(CA_SECRET, CA_SECRET));
        mounts.push(core::VolumeMount {
            name: CA_SECRET.into(),
            mount_path: CA_MOUNT.into(),
            read_only: Some(true),
            ..Default::default()
        });
    }
    let env = agent_env(wf, info, &names, &addresses);
    let executor = |name: &str, action: &str| executor_container(name, action, &env, &mounts, info, opts);
    let mut containers = sidecars;
    containers.push(executor(MAIN, "main"));
    let mut labels = BTreeMap::from([
        ("workflows.argoproj.io/workflow".to_string(), wf.name.clone()),
        (COMPLETED_LABEL.to_string(), "false".to_string()),
        ("workflows.argoproj.io/component".to_string(), "agent".to_string()),
    ]);
    if let Some(id) = &opts.instance_id {
        labels.insert("workflows.argoproj.io/controller-instanceid".into(), id.clone());
    }
    let mut spec = core::PodSpec {
        init_containers: Some(vec![executor("init", "init")]),
        containers,
        volumes: Some(volumes),
        restart_policy: Some("OnFailure".into()),
        service_account_name: Some(info.service_account.clone()),
        automount_service_account_token: Some(false),
        security_context: Some(pod_sc(version)),
        ..Default::default()
    };
    if let Some(text) = &wf.pod_spec_patch {
        let mut value: serde_json::Value = super::convert("agent pod spec", &spec)?;
        super::patch::apply(&mut value, text, "podSpecPatch")?;
        spec = super::convert("agent pod spec after podSpecPatch", value)?;
    }
    Ok(core::Pod {
        metadata: ObjectMeta {
            name: Some(agent_pod_name(&wf.name)),
            namespace: Some(wf.namespace.clone()),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([(
                "kubectl.kubernetes.io/default-container".to_string(),
                MAIN.to_string(),
            )])),
            owner_references: Some(vec![workflow_owner(wf)]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// The pod's security context: `MinimalPodSC` from v3.6; v3.5 set the non-root user alone.
fn pod_sc(version: ArgoVersion) -> core::PodSecurityContext {
    if version >= ArgoVersion::V3_7 {
        super::artifact_gc::minimal_pod_sc()
    } else {
        core::PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(8737),
            ..Default::default()
        }
    }
}

/// Five characters from the workflow's UID, in Argo's random-suffix alphabet.
fn suffix(uid: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h = fnv32a(uid);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(h % 27) as usize] as char;
            h /= 27;
            c
        })
        .collect()
}

fn secret_volume(name: &str, secret: &str) -> core::Volume {
    core::Volume {
        name: name.into(),
        secret: Some(core::SecretVolumeSource {
            secret_name: Some(secret.into()),
            optional: (secret == CA_SECRET).then_some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn agent_env(
    wf: &WorkflowMeta,
    info: &AgentPodInfo,
    names: &[String],
    addresses: &[String],
) -> Vec<core::EnvVar> {
    let json_or_null = |v: &[String]| {
        if v.is_empty() {
            "null".to_string()
        } else {
            serde_json::to_string(v).unwrap_or_else(|_| "null".into())
        }
    };
    let env = |name: &str, value: String| core::EnvVar {
        name: name.into(),
        value: Some(value),
        value_from: None,
    };
    let mut e = vec![
        env("ARGO_WORKFLOW_NAME", wf.name.clone()),
        env("ARGO_WORKFLOW_UID", wf.uid.clone()),
        env("ARGO_AGENT_PATCH_RATE", info.patch_rate.clone()),
        env("ARGO_PLUGIN_ADDRESSES", json_or_null(addresses)),
        env("ARGO_PLUGIN_NAMES", json_or_null(names)),
    ];
    if let Some(w) = &info.task_workers {
        e.push(env("ARGO_AGENT_TASK_WORKERS", w.clone()));
    }
    e
}

fn executor_container(
    name: &str,
    action: &str,
    env: &[core::EnvVar],
    mounts: &[core::VolumeMount],
    info: &AgentPodInfo,
    opts: &BuildOptions,
) -> core::Container {
    let version = opts.argo_version;
    let mut args = vec!["agent".to_string(), action.to_string()];
    if version >= ArgoVersion::V3_7 {
        args.extend(super::containers::log_opts_of(version, opts));
    } else {
        args.extend(["--loglevel".to_string(), opts.log_level.clone()]);
    }
    let q = |s: &str| Quantity(s.into());
    core::Container {
        name: name.into(),
        image: Some(opts.executor_image.clone()),
        command: Some(vec!["argoexec".into()]),
        args: Some(args),
        env: Some(env.to_vec()),
        security_context: Some(super::resource::minimal_sc(version, true)),
        resources: Some(core::ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".into(), q("10m")),
                ("memory".into(), q("64M")),
            ])),
            limits: Some(BTreeMap::from([
                ("cpu".into(), q(&info.limits.0)),
                ("memory".into(), q(&info.limits.1)),
            ])),
            ..Default::default()
        }),
        volume_mounts: Some(mounts.to_vec()),
        ..Default::default()
    }
}
