//! The agent's task set and pod, per Argo version (AW@v4.1.2 `workflow/controller/agent.go`;
//! argo-2026-contract.md §1.4). fnv32a("agent") = 1340600742 was computed apart from the
//! crate (FNV-1a 32-bit in a few lines of Python).

use std::collections::BTreeMap;

use argoexec_core::ArgoVersion;
use argoexec_core::template::Template;
use argoexec_podbuilder::build::agent::{
    AgentPlugin, AgentPodInfo, TOKEN_MOUNT, agent_pod, agent_pod_name, task_set,
};
use argoexec_podbuilder::{BuildError, BuildOptions, WorkflowMeta};
use k8s_openapi::api::core::v1::{Container, Pod};
use serde_json::{Value, json};

fn wf() -> WorkflowMeta {
    WorkflowMeta {
        name: "wf".into(),
        namespace: "argo".into(),
        uid: "wf-uid".into(),
        ..Default::default()
    }
}

fn opts(version: ArgoVersion) -> BuildOptions {
    BuildOptions {
        argo_version: version,
        executor_image: "argoexec-rs:test".into(),
        log_level: "info".into(),
        log_format: "text".into(),
        ..Default::default()
    }
}

fn hello() -> AgentPlugin {
    let container: Container = serde_json::from_value(json!({
        "name": "hello-executor-plugin", "image": "hello:1", "ports": [{"containerPort": 4355}]}))
    .unwrap();
    AgentPlugin { container }
}

fn pod(version: ArgoVersion, plugins: &[AgentPlugin], info: &AgentPodInfo) -> Value {
    let p: Pod = agent_pod(&wf(), plugins, info, &opts(version)).unwrap();
    serde_json::to_value(p).unwrap()
}

fn env_of(c: &Value, name: &str) -> Value {
    c["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .map_or(Value::Null, |e| e["value"].clone())
}

#[test]
fn the_pod_as_a_v4_1_controller_writes_it() {
    let p = pod(ArgoVersion::V4_1, &[], &AgentPodInfo::new("wf-sa"));
    assert_eq!(agent_pod_name("wf"), "wf-1340600742-agent");
    assert_eq!(p["metadata"]["name"], "wf-1340600742-agent");
    let labels = &p["metadata"]["labels"];
    assert_eq!(labels["workflows.argoproj.io/component"], "agent");
    assert_eq!(labels["workflows.argoproj.io/completed"], "false");
    assert_eq!(labels["workflows.argoproj.io/workflow"], "wf");
    assert_eq!(
        p["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "main"
    );
    assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "Workflow");
    let spec = &p["spec"];
    assert_eq!(spec["restartPolicy"], "OnFailure");
    assert_eq!(spec["serviceAccountName"], "wf-sa");
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(spec["securityContext"]["runAsUser"], 8737);
    let init = &spec["initContainers"][0];
    assert_eq!(init["name"], "init");
    assert_eq!(init["command"], json!(["argoexec"]));
    let args: Vec<&str> = init["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(&args[..2], ["agent", "init"]);
    assert!(args.contains(&"--log-format"), "{args:?}");
    let main = &spec["containers"][0];
    assert_eq!(main["args"][1], "main");
    assert_eq!(env_of(main, "ARGO_PLUGIN_NAMES"), "null");
    assert_eq!(env_of(main, "ARGO_AGENT_PATCH_RATE"), "10s");
    assert_eq!(env_of(main, "ARGO_WORKFLOW_UID"), "wf-uid");
    assert_eq!(
        main["resources"]["limits"],
        json!({"cpu": "100m", "memory": "256M"})
    );
    assert_eq!(main["securityContext"]["readOnlyRootFilesystem"], true);
    let token = main["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == TOKEN_MOUNT)
        .expect("the token Secret mounted where the in-cluster config looks");
    let vol = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == token["name"])
        .unwrap();
    assert_eq!(vol["secret"]["secretName"], "wf-sa.service-account-token");
    assert!(token["name"].as_str().unwrap().starts_with("kube-api-access-"));
    assert_eq!(
        pod(ArgoVersion::V4_1, &[], &AgentPodInfo::new("wf-sa")),
        p,
        "the same workflow, the same pod"
    );
}

#[test]
fn plugins_get_sidecars_tokens_and_addresses() {
    let mut info = AgentPodInfo::new("default");
    info.ca_secret = true;
    info.task_workers = Some("4".into());
    let p = pod(ArgoVersion::V4_0, &[hello()], &info);
    let containers = p["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 2);
    assert_eq!(
        containers[0]["name"], "hello-executor-plugin",
        "sidecars first, main last"
    );
    let m = &containers[0]["volumeMounts"][0];
    assert_eq!(
        (m["subPath"].as_str(), m["readOnly"].as_bool()),
        (Some("hello-executor-plugin"), Some(true))
    );
    let main = &containers[1];
    assert_eq!(env_of(main, "ARGO_PLUGIN_NAMES"), r#"["hello-executor-plugin"]"#);
    assert_eq!(
        env_of(main, "ARGO_PLUGIN_ADDRESSES"),
        r#"["http://localhost:4355"]"#
    );
    assert_eq!(env_of(main, "ARGO_AGENT_TASK_WORKERS"), "4");
    let ca = main["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["mountPath"] == "/etc/ssl/certs/ca-certificates/");
    assert!(ca, "the CA Secret is mounted when it exists");
    let mut bad = hello();
    bad.container.ports = None;
    let e = agent_pod(&wf(), &[bad], &info, &opts(ArgoVersion::V4_0)).unwrap_err();
    assert!(matches!(e, BuildError::BadValue { .. }), "{e}");
}

#[test]
fn v3_5_passes_the_log_level_alone_and_no_seccomp_profile() {
    let p = pod(ArgoVersion::V3_5, &[], &AgentPodInfo::new("default"));
    assert_eq!(
        p["spec"]["initContainers"][0]["args"],
        json!(["agent", "init", "--loglevel", "info"])
    );
    assert_eq!(
        p["spec"]["securityContext"],
        json!({"runAsNonRoot": true, "runAsUser": 8737})
    );
}

#[test]
fn the_task_set_is_named_after_the_workflow_and_owned_by_it() {
    let t: Template = Template::from_json(r#"{"name":"h","http":{"url":"http://x"}}"#).unwrap();
    let ts = task_set(&wf(), BTreeMap::from([("wf-1".to_string(), t)]));
    let v = serde_json::to_value(&ts).unwrap();
    assert_eq!(v["kind"], "WorkflowTaskSet");
    assert_eq!(v["metadata"]["name"], "wf");
    assert_eq!(
        v["metadata"]["labels"]["workflows.argoproj.io/completed"],
        "false"
    );
    assert_eq!(v["metadata"]["ownerReferences"][0]["uid"], "wf-uid");
    assert_eq!(v["spec"]["tasks"]["wf-1"]["http"]["url"], "http://x");
}
