//! The k8sapi backend's pod lookup against the local node's API server: a pod the watch
//! never delivers (wrong namespace) ends `wait` — and the other calls that need the pod —
//! with `NotFound` once the bound passed; a pod whose main is created late (held by an
//! init container) is waited for past the bound.

#[path = "../../kubelet/tests/support/local_node.rs"]
mod local_node;

use std::time::{Duration, Instant};

use argoexec_backend_k8sapi::K8sApiExecutor;
use argoexec_runtime::{ErrorKind, RuntimeExecutor};
use local_node::{LocalNode, contains_all, namespace_file};
use tokio_util::sync::CancellationToken;

/// The bound the tests use instead of the default 60 s.
const BOUND: Duration = Duration::from_secs(2);

fn executor(node: &LocalNode, namespace: &str, pod: &str) -> K8sApiExecutor {
    K8sApiExecutor::from_config(&node.in_cluster(), namespace, pod)
        .unwrap()
        .with_pod_lookup_timeout(BOUND)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_a_pod_the_watch_never_delivers_fails_after_the_bound() {
    let Some(node) = LocalNode::start("k8sapi-lookup-missing").await else {
        return;
    };
    let _gate = node.gated_pod("lookup-a");
    // The right name in the wrong namespace.
    let a = executor(&node, "elsewhere", "lookup-a");
    let started = Instant::now();
    let r = tokio::time::timeout(
        BOUND + Duration::from_secs(8),
        a.wait(&["main".into()], CancellationToken::new()),
    )
    .await
    .expect("wait gives up soon after the bound");
    let took = started.elapsed();
    let e = r.expect_err("no such pod in that namespace");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(took >= BOUND, "gave up before the bound: {took:?}");
    let file = namespace_file(&node.paths()).display().to_string();
    contains_all(
        &e.to_string(),
        &[
            "has not delivered pod elsewhere/lookup-a in 2 s",
            "fieldSelector=metadata.name=lookup-a",
            "no pod of that name in namespace \"elsewhere\"",
            "ARGO_NAMESPACE",
            &file,
        ],
    )
    .unwrap();
    // The calls that need the pod say the same, at once now that the bound has passed.
    let e = tokio::time::timeout(Duration::from_secs(5), a.list_container_names())
        .await
        .expect("no second wait")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_main_created_after_the_bound_is_still_waited_for() {
    let Some(node) = LocalNode::start("k8sapi-lookup-late").await else {
        return;
    };
    let gate = node.gated_pod("late-a");
    let a = executor(&node, "default", "late-a");
    // The watch delivers the pod: its main has not run.
    let names = a.list_container_names().await.expect("the pod is delivered");
    assert_eq!(names, ["main", "gate"]);
    let waiter_exec = a.clone();
    let mut waiter =
        tokio::spawn(async move { waiter_exec.wait(&["main".into()], CancellationToken::new()).await });
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
