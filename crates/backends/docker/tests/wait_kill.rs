//! Real-Docker tests of `wait` and `kill`. Synchronisation is on events (the wait probe, a
//! container's own output), never on sleeps.

mod common;

use std::time::{Duration, Instant};

use argoexec_runtime::{ErrorKind, RuntimeExecutor};
use common::{TestPod, blocked_on, wait_probe};
use tokio_util::sync::CancellationToken;

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn wait_returns_exit_code() {
    let Some(t) = TestPod::new().await else { return };
    t.run("main", "exit 3").await;
    t.run_to_exit("side", "true").await;
    let exits = t
        .exec
        .wait(&names(&["main", "side"]), CancellationToken::new())
        .await
        .expect("wait");
    assert_eq!(exits.len(), 2);
    assert_eq!((exits[0].name.as_str(), exits[0].exit_code), ("main", Some(3)));
    assert_eq!((exits[1].name.as_str(), exits[1].exit_code), ("side", Some(0)));
}

#[tokio::test]
async fn wait_for_container_created_later() {
    let Some(t) = TestPod::new().await else { return };
    let (_guard, mut probe) = wait_probe();
    let exec = t.exec.clone();
    let waiter = tokio::spawn(async move { exec.wait(&names(&["late"]), CancellationToken::new()).await });
    blocked_on(&mut probe, "\"late\", \"not created yet\"").await;
    assert!(!waiter.is_finished());
    t.run("late", "exit 4").await;
    let exits = waiter.await.expect("join").expect("wait");
    assert_eq!(exits[0].exit_code, Some(4));
}

#[tokio::test]
async fn wait_keeps_waiting_for_created_container() {
    let Some(t) = TestPod::new().await else { return };
    let id = t.create("main", "exit 5").await;
    let (_guard, mut probe) = wait_probe();
    let exec = t.exec.clone();
    let waiter = tokio::spawn(async move { exec.wait(&names(&["main"]), CancellationToken::new()).await });
    blocked_on(&mut probe, "\"main\", \"created, not started\"").await;
    assert!(!waiter.is_finished(), "a created container is not done");
    t.start(&id).await;
    let exits = waiter.await.expect("join").expect("wait");
    assert_eq!(exits[0].exit_code, Some(5));
}

#[tokio::test]
async fn wait_cancelled() {
    let Some(t) = TestPod::new().await else { return };
    let (_guard, mut probe) = wait_probe();
    let cancel = CancellationToken::new();
    let exec = t.exec.clone();
    let token = cancel.clone();
    let waiter = tokio::spawn(async move { exec.wait(&names(&["never"]), token).await });
    blocked_on(&mut probe, "never").await;
    cancel.cancel();
    let e = waiter.await.expect("join").expect_err("cancelled");
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
}

#[tokio::test]
async fn kill_term_trapped_exits_within_grace() {
    let Some(t) = TestPod::new().await else { return };
    let id = t
        .run("main", "trap 'exit 0' TERM; echo ready; sleep 1000 & wait")
        .await;
    t.await_line(&id, "ready").await;
    let grace = Duration::from_secs(20);
    let started = Instant::now();
    t.exec.kill(&names(&["main"]), grace).await.expect("kill");
    assert!(started.elapsed() < grace, "took {:?}", started.elapsed());
    assert_eq!(t.exit_code(&id).await, 0);
}

#[tokio::test]
async fn kill_term_ignored_gets_sigkill() {
    let Some(t) = TestPod::new().await else { return };
    let id = t.run("main", "trap '' TERM; echo ready; sleep 1000 & wait").await;
    t.await_line(&id, "ready").await;
    let grace = Duration::from_secs(2);
    let started = Instant::now();
    t.exec.kill(&names(&["main"]), grace).await.expect("kill");
    assert!(started.elapsed() >= grace, "took {:?}", started.elapsed());
    assert_eq!(t.exit_code(&id).await, 137);
}

#[tokio::test]
async fn kill_exited_unknown_and_unstarted_is_ok() {
    let Some(t) = TestPod::new().await else { return };
    t.run_to_exit("done", "exit 0").await;
    t.create("unstarted", "true").await;
    let started = Instant::now();
    t.exec
        .kill(&names(&["done", "unstarted", "ghost"]), Duration::from_secs(30))
        .await
        .expect("kill");
    assert!(started.elapsed() < Duration::from_secs(10), "nothing to wait for");
}
