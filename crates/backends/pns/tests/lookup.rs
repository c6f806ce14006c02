//! The pns backend's pod lookup against the local node's API server. The process tracker
//! scans an empty directory instead of `/proc` (this test process shares no pod's pid
//! namespace), so main's process is never seen: `wait` must then rely on the pod watch.
//! A pod the watch never delivers (wrong namespace) ends `wait` with `NotFound` once the
//! bound passed; a pod whose main is created late (held by an init container) is waited
//! for past the bound, through the watch, with main's exit code.

#[path = "../../kubelet/tests/support/local_node.rs"]
mod local_node;

use std::time::{Duration, Instant};

use argoexec_backend_k8sapi::K8sApiExecutor;
use argoexec_backend_pns::{PnsExecutor, Tracker};
use argoexec_core::ExecutorKind;
use argoexec_runtime::{ErrorKind, RuntimeExecutor};
use local_node::{LocalNode, contains_all};
use tokio_util::sync::CancellationToken;

/// The bound the tests use instead of the default 60 s.
const BOUND: Duration = Duration::from_secs(2);

/// A pns backend for `namespace`/`pod` whose tracker sees no process; the returned
/// directory is its `/proc`.
fn executor(node: &LocalNode, namespace: &str, pod: &str) -> (PnsExecutor, tempfile::TempDir) {
    let proc = tempfile::tempdir().unwrap();
    let tracker = Tracker::start(proc.path().to_path_buf(), Duration::from_millis(10)).unwrap();
    let api = K8sApiExecutor::from_config(&node.in_cluster(), namespace, pod).unwrap();
    let pns = PnsExecutor::from_parts(tracker, Some(api), None).with_pod_lookup_timeout(BOUND);
    (pns, proc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_a_pod_the_watch_never_delivers_fails_after_the_bound() {
    let Some(node) = LocalNode::start("pns-lookup-missing").await else {
        return;
    };
    let _gate = node.gated_pod("lookup-p");
    let (p, _proc) = executor(&node, "elsewhere", "lookup-p");
    let started = Instant::now();
    let r = tokio::time::timeout(
        BOUND + Duration::from_secs(8),
        p.wait(&["main".into()], CancellationToken::new()),
    )
    .await
    .expect("wait gives up soon after the bound");
    let took = started.elapsed();
    let e = r.expect_err("no such pod in that namespace");
    assert_eq!(
        (e.kind(), e.backend),
        (ErrorKind::NotFound, ExecutorKind::Pns),
        "{e}"
    );
    // The bound, not pns's own 5 s grace for unseen processes.
    assert!(
        took >= BOUND && took < argoexec_backend_pns::MAP_GRACE,
        "took {took:?}"
    );
    contains_all(
        &e.to_string(),
        &[
            "pns executor: wait for \"main\"",
            "has not delivered pod elsewhere/lookup-p",
            "ARGO_NAMESPACE",
        ],
    )
    .unwrap();
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_main_created_after_the_bound_is_still_waited_for() {
    let Some(node) = LocalNode::start("pns-lookup-late").await else {
        return;
    };
    let gate = node.gated_pod("late-p");
    let (p, _proc) = executor(&node, "default", "late-p");
    let mut waiter = tokio::spawn(async move { p.wait(&["main".into()], CancellationToken::new()).await });
    // The negative window: twice the bound without an end shows that no bound applies.
    let early = tokio::time::timeout(2 * BOUND, &mut waiter).await;
    assert!(early.is_err(), "wait ended although the pod exists: {early:?}");
    gate.release();
    let exits = tokio::time::timeout(Duration::from_secs(60), waiter)
        .await
        .expect("main ends once released")
        .expect("join")
        .expect("wait");
    assert_eq!(exits[0].exit_code, Some(4), "from the pod watch");
    node.shutdown().await;
}
