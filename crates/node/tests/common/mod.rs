//! What the node's test files share: a node per test (its own label and state directory),
//! pods from YAML, container statuses, and a finish that checks nothing was left behind.

#![allow(dead_code)]

use std::time::Duration;

use argoexec_node::{LocalNode, NodeConfig, RuntimeChoice};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};

pub fn docker_ready() -> bool {
    if std::env::var("ARGOEXEC_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipped: ARGOEXEC_SKIP_DOCKER_TESTS=1");
        return false;
    }
    true
}

/// The runtime under test: `ARGOEXEC_NODE_RUNTIME=containerd` runs the same tests on the
/// project's containerd (scripts/containerd-up.sh); Docker otherwise.
pub fn runtime() -> RuntimeChoice {
    RuntimeChoice::from_env()
}

/// Whether the runtime under test is containerd.
pub fn on_containerd() -> bool {
    runtime() != RuntimeChoice::Docker
}

/// A node whose restart back-off is `backoff` (the kubelet's 10 s is too slow for tests).
pub async fn node_with_backoff(label: &str, state: &std::path::Path, backoff: Duration) -> LocalNode {
    LocalNode::connect(NodeConfig {
        runtime: runtime(),
        state_dir: state.to_path_buf(),
        node_label: format!("nodetest-{}-{label}", std::process::id()),
        restart_backoff: backoff,
        ..Default::default()
    })
    .await
    .expect("the container runtime with argoexec:dev and busybox:latest (run `bash scripts/setup.sh`)")
}

pub async fn node(label: &str, state: &std::path::Path) -> LocalNode {
    node_with_backoff(label, state, Duration::from_secs(10)).await
}

pub fn pod(yaml: &str) -> Pod {
    serde_saphyr::from_str(yaml).unwrap()
}

pub fn container<'a>(s: &'a PodStatus, name: &str) -> &'a ContainerStatus {
    argoexec_node::status::all(s).find(|c| c.name == name).unwrap()
}

/// Until `run`'s container `name` is running.
pub async fn until_running(run: &argoexec_node::PodRun, name: &str) {
    run.status()
        .wait_for(|s| {
            container(s, name)
                .state
                .as_ref()
                .is_some_and(|st| st.running.is_some())
        })
        .await
        .unwrap();
}

pub fn terminated(s: &PodStatus, name: &str) -> (i32, String, Option<String>) {
    let t = container(s, name)
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .unwrap_or_else(|| panic!("{name}: {s:?}"));
    (t.exit_code, t.reason.unwrap_or_default(), t.message)
}

pub async fn finish(node: &LocalNode, run: argoexec_node::PodRun, state: &std::path::Path) -> PodStatus {
    let s = tokio::time::timeout(Duration::from_secs(60), run.finished())
        .await
        .expect("pod did not finish");
    run.cleanup().await.unwrap();
    assert!(
        node.leftover_containers().await.unwrap().is_empty(),
        "containers left behind"
    );
    assert_eq!(
        std::fs::read_dir(state).unwrap().count(),
        0,
        "pod directory left behind"
    );
    s
}
