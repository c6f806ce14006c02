//! The kubelet backend's pod lookup against the local node's kubelet endpoint: a pod the
//! kubelet does not list ends `wait` with `NotFound` once the bound passed, naming where a
//! pod of that name runs instead; a listed pod whose main is created late (held by an init
//! container) is waited for past the bound.

#[path = "support/local_node.rs"]
mod local_node;

use std::time::{Duration, Instant};

use argoexec_backend_kubelet::{KubeletConfig, KubeletExecutor};
use argoexec_kube::podstate::{ContainerState, state_of};
use argoexec_runtime::{ErrorKind, RuntimeExecutor};
use local_node::{LocalNode, contains_all, namespace_file};
use tokio_util::sync::CancellationToken;

/// The bound the tests use instead of the default 60 s.
const BOUND: Duration = Duration::from_secs(2);

fn executor(node: &LocalNode, namespace: &str, pod: &str) -> KubeletExecutor {
    let env = node.kubelet_env();
    let config =
        KubeletConfig::from_env(|k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).unwrap();
    KubeletExecutor::new(config, &node.paths(), namespace, pod)
        .unwrap()
        .with_pod_lookup_timeout(BOUND)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_a_pod_the_kubelet_does_not_list_fails_after_the_bound() {
    let Some(node) = LocalNode::start("kubelet-lookup-missing").await else {
        return;
    };
    let _gate = node.gated_pod("lookup-k");
    // The right name in the wrong namespace.
    let k = executor(&node, "elsewhere", "lookup-k");
    let started = Instant::now();
    let r = tokio::time::timeout(
        BOUND + Duration::from_secs(8),
        k.wait(&["main".into()], CancellationToken::new()),
    )
    .await
    .expect("wait gives up soon after the bound");
    let took = started.elapsed();
    let e = r.expect_err("no such pod on this kubelet");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(took >= BOUND, "gave up before the bound: {took:?}");
    let file = namespace_file(&node.paths()).display().to_string();
    contains_all(
        &e.to_string(),
        &[
            "pod elsewhere/lookup-k is not among the pods of the kubelet",
            "GET /pods for 2 s",
            "runs in namespace \"default\"",
            "ARGO_NAMESPACE",
            &file,
            "ARGO_KUBELET_HOST",
        ],
    )
    .unwrap();
    // A single look (list names, kill) says the same at once.
    let e = k.list_container_names().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_main_created_after_the_bound_is_still_waited_for() {
    let Some(node) = LocalNode::start("kubelet-lookup-late").await else {
        return;
    };
    let gate = node.gated_pod("late-k");
    let k = executor(&node, "default", "late-k");
    // The pod is listed: its main has no container yet.
    let pod = k.own_pod().await.expect("listed");
    let main = state_of(&pod, "main");
    assert!(!matches!(main, ContainerState::Terminated { .. }), "{main:?}");
    let mut waiter = tokio::spawn(async move { k.wait(&["main".into()], CancellationToken::new()).await });
    // The negative window: twice the bound without an end shows that no bound applies.
    let early = tokio::time::timeout(2 * BOUND, &mut waiter).await;
    assert!(early.is_err(), "wait ended although the pod exists: {early:?}");
    gate.release();
    let exits = tokio::time::timeout(Duration::from_secs(60), waiter)
        .await
        .expect("main ends once released")
        .expect("join")
        .expect("wait");
    assert_eq!(exits[0].exit_code, Some(4));
    node.shutdown().await;
}
