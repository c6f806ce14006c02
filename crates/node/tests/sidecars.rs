//! Sidecar containers (init containers with `restartPolicy: Always`, Kubernetes ≥ 1.29) on the
//! local node: started in init order and not waited for, started again when they exit while
//! the pod runs, stopped in reverse order once the app containers are done, and left out of
//! the pod's phase.

mod common;

use std::time::Duration;

use common::*;

/// Two sidecars record the order in which they are stopped in a host directory; main needs
/// both running before it ends.
#[tokio::test]
async fn sidecars_run_beside_main_and_stop_in_reverse_order() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    let node = node("sidecars", state.path()).await;
    let side = |name: &str, code: i32| {
        format!(
            r#"{{name: {name}, image: busybox, restartPolicy: Always, volumeMounts: [{{name: h, mountPath: /h}}],
        command: [sh, -c, 'trap "echo {name} >> /h/order; exit {code}" TERM; touch /h/{name}; while true; do sleep 0.05; done']}}"#
        )
    };
    let p = pod(&format!(
        r#"
metadata: {{name: sc1}}
spec:
  terminationGracePeriodSeconds: 10
  volumes: [{{name: h, hostPath: {{path: {host}, type: Directory}}}}]
  initContainers:
    - {a}
    - {b}
  containers:
    - {{name: main, image: busybox, volumeMounts: [{{name: h, mountPath: /h}}],
        command: [sh, -c, 'for i in $(seq 100); do [ -f /h/a ] && [ -f /h/b ] && exit 0; sleep 0.05; done; exit 7']}}
"#,
        host = host.path().display(),
        a = side("a", 0),
        // A sidecar's own exit code does not fail the pod.
        b = side("b", 1),
    ));
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Succeeded"), "{s:?}");
    assert_eq!(
        terminated(&s, "main").0,
        0,
        "both sidecars ran beside main: {s:?}"
    );
    assert_eq!(terminated(&s, "a").0, 0);
    assert_eq!(terminated(&s, "b").0, 1);
    let order = std::fs::read_to_string(host.path().join("order")).unwrap();
    assert_eq!(order, "b\na\n", "stopped in reverse order");
}

/// A sidecar that exits while main runs is started again after the back-off.
#[tokio::test]
async fn a_sidecar_that_exits_is_started_again() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    let node = node_with_backoff("sidecar-restart", state.path(), Duration::from_millis(100)).await;
    let p = pod(&format!(
        r#"
metadata: {{name: sc2}}
spec:
  volumes: [{{name: h, hostPath: {{path: {host}, type: Directory}}}}]
  initContainers:
    - {{name: side, image: busybox, restartPolicy: Always, volumeMounts: [{{name: h, mountPath: /h}}],
        command: [sh, -c, 'test -f /h/once || {{ touch /h/once; exit 3; }}; touch /h/again; trap "exit 0" TERM; while true; do sleep 0.05; done']}}
  containers:
    - {{name: main, image: busybox, volumeMounts: [{{name: h, mountPath: /h}}],
        command: [sh, -c, 'for i in $(seq 200); do [ -f /h/again ] && exit 0; sleep 0.05; done; exit 7']}}
"#,
        host = host.path().display(),
    ));
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Succeeded"), "{s:?}");
    let side = container(&s, "side");
    assert_eq!(side.restart_count, 1, "{side:?}");
    let last = side
        .last_state
        .as_ref()
        .and_then(|l| l.terminated.as_ref())
        .unwrap();
    assert_eq!(last.exit_code, 3);
}

/// A sidecar that ignores SIGTERM does not keep the pod: it is killed after the grace period
/// and the pod's phase is still the app containers'.
#[tokio::test]
async fn a_sidecar_that_ignores_term_is_killed_after_the_grace_period() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("sidecar-hang", state.path()).await;
    let p = pod(r#"
metadata: {name: sc3}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
    - {name: stuck, image: busybox, restartPolicy: Always, command: [sh, -c, 'trap "" TERM; while true; do sleep 0.05; done']}
  containers:
    - {name: main, image: busybox, command: [sh, -c, 'exit 0']}
"#);
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Succeeded"), "{s:?}");
    assert_eq!(terminated(&s, "stuck").0, 137, "{s:?}");
}
