//! Real-Docker tests of how the docker backend finds its pod: by UID and name without a
//! namespace (as a pod whose namespace could not be resolved), by namespace and name without
//! a UID, never a same-named pod elsewhere; and the pod-lookup bound — `wait` for a pod
//! with no container at all fails with `NotFound` once the bound passed, while a pod that
//! is there but whose main is created late is waited for past it. Synchronisation is on the
//! backend's own log events (the wait probe), never on sleeps.

mod common;

use std::time::{Duration, Instant};

use argoexec_backend_docker::PodRef;
use argoexec_runtime::{ErrorKind, RuntimeExecutor};
use common::{TestPod, blocked_on, socket, wait_probe};
use tokio_util::sync::CancellationToken;

/// The bound the lookup tests use instead of the default 60 s.
const BOUND: Duration = Duration::from_secs(2);

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

/// `exec.wait(["main"])`, which must end with an error well within the bound plus a margin
/// (a hang fails the test instead of blocking it); returns the error and how long it took.
async fn wait_fails(
    exec: &argoexec_backend_docker::DockerExecutor,
) -> (argoexec_runtime::RuntimeError, Duration) {
    let started = Instant::now();
    let r = tokio::time::timeout(
        BOUND + Duration::from_secs(8),
        exec.wait(&names(&["main"]), CancellationToken::new()),
    )
    .await
    .expect("wait gives up soon after the bound (not only at the 30 s re-check)");
    (r.expect_err("no such pod"), started.elapsed())
}

#[tokio::test]
async fn finds_the_pods_containers_by_uid_without_a_namespace() {
    let Some(t) = TestPod::new().await else { return };
    // A pod of the same name in another namespace, with another UID.
    let twin = TestPod::named(&socket(), &t.pod, "elsewhere")
        .await
        .expect("twin");
    t.run("wait", "sleep 1000").await;
    t.run("main", "exit 3").await;
    twin.run_to_exit("main", "exit 9").await;
    twin.run_to_exit("other", "true").await;

    let by_uid = t.executor_for(PodRef::by_uid(&t.pod, &t.uid)).await;
    assert_eq!(by_uid.pod().namespace(), None, "no namespace involved");
    assert_eq!(by_uid.list_container_names().await.unwrap(), ["main", "wait"]);
    let exits = by_uid
        .wait(&names(&["main"]), CancellationToken::new())
        .await
        .expect("wait by UID");
    assert_eq!(exits[0].exit_code, Some(3), "the twin's main exited 9");

    // Without a UID the namespace tells the two apart.
    let twin_by_ns = t.executor_for(PodRef::by_namespace("elsewhere", &t.pod)).await;
    assert_eq!(
        twin_by_ns.list_container_names().await.unwrap(),
        ["main", "other"]
    );
    let by_ns = t.executor_for(PodRef::by_namespace(&t.namespace, &t.pod)).await;
    assert_eq!(by_ns.list_container_names().await.unwrap(), ["main", "wait"]);
}

#[tokio::test]
async fn wait_for_a_pod_without_containers_fails_after_the_bound() {
    let Some(t) = TestPod::new().await else { return };
    let uid = format!("{}-missing", t.uid);
    let exec = t
        .executor_for(PodRef::by_uid(&t.pod, &uid))
        .await
        .with_pod_lookup_timeout(BOUND);
    let (e, took) = wait_fails(&exec).await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(took >= BOUND, "gave up before the bound: {took:?}");
    let m = e.to_string();
    for part in [
        t.pod.as_str(),
        &format!("uid {uid}"),
        &format!("io.kubernetes.pod.uid={uid}"),
        "for 2 s",
        "another container runtime",
        "ARGO_POD_UID",
    ] {
        assert!(m.contains(part), "{part:?} missing from: {m}");
    }
}

#[tokio::test]
async fn without_a_uid_the_error_points_at_the_namespace() {
    let Some(t) = TestPod::new().await else { return };
    let exec = t
        .executor_for(PodRef::by_namespace("wrong-namespace", &t.pod))
        .await
        .with_pod_lookup_timeout(BOUND);
    let (e, took) = wait_fails(&exec).await;
    assert!(took >= BOUND, "gave up before the bound: {took:?}");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let m = e.to_string();
    assert!(m.contains("io.kubernetes.pod.namespace=wrong-namespace"), "{m}");
    assert!(
        m.contains("the namespace is wrong") && m.contains("ARGO_NAMESPACE"),
        "{m}"
    );
}

#[tokio::test]
async fn a_main_created_after_the_bound_is_still_waited_for() {
    let Some(t) = TestPod::new().await else { return };
    // The pod is there (its wait container), its main is not yet: image pulling.
    t.run("wait", "sleep 1000").await;
    let exec = t.exec.clone().with_pod_lookup_timeout(BOUND);
    let (_guard, mut probe) = wait_probe();
    let mut waiter =
        tokio::spawn(async move { exec.wait(&names(&["main"]), CancellationToken::new()).await });
    blocked_on(&mut probe, "\"main\", \"not created yet\"").await;
    // The negative window: twice the bound without an end shows that no bound applies.
    let early = tokio::time::timeout(2 * BOUND, &mut waiter).await;
    assert!(early.is_err(), "wait ended although the pod exists: {early:?}");
    t.run("main", "exit 4").await;
    let exits = waiter.await.expect("join").expect("wait");
    assert_eq!(exits[0].exit_code, Some(4));
}
