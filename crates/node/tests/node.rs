//! The local node against the real Docker Engine: init ordering, shared PID namespace,
//! downward-API env and volumes, subPath, termination messages, deadlines, missing images,
//! status transitions, and that cleanup leaves no container or directory behind.

use std::time::Duration;

use argoexec_node::{LocalNode, NodeConfig, NodeError};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};

fn docker_ready() -> bool {
    if std::env::var("ARGOEXEC_SKIP_DOCKER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipped: ARGOEXEC_SKIP_DOCKER_TESTS=1");
        return false;
    }
    true
}

async fn node(label: &str, state: &std::path::Path) -> LocalNode {
    LocalNode::connect(NodeConfig {
        state_dir: state.to_path_buf(),
        node_label: format!("nodetest-{}-{label}", std::process::id()),
        ..Default::default()
    })
    .await
    .expect("Docker Engine with argoexec:dev and busybox:latest (run `bash scripts/setup.sh`)")
}

fn pod(yaml: &str) -> Pod {
    serde_saphyr::from_str(yaml).unwrap()
}

fn container<'a>(s: &'a PodStatus, name: &str) -> &'a ContainerStatus {
    argoexec_node::status::all(s).find(|c| c.name == name).unwrap()
}

fn terminated(s: &PodStatus, name: &str) -> (i32, String, Option<String>) {
    let t = container(s, name)
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .unwrap_or_else(|| panic!("{name}: {s:?}"));
    (t.exit_code, t.reason.unwrap_or_default(), t.message)
}

async fn finish(node: &LocalNode, run: argoexec_node::PodRun, state: &std::path::Path) -> PodStatus {
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

/// Follows the container's stdout (a Docker log stream, no polling) until `line` appears.
async fn wait_for_log_line(node: &LocalNode, id: &str, line: &str) {
    use futures::StreamExt;
    let opts = bollard::query_parameters::LogsOptionsBuilder::new()
        .follow(true)
        .stdout(true)
        .build();
    let mut logs = node.docker().logs(id.trim_start_matches("docker://"), Some(opts));
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(frame) = logs.next().await {
            seen.push_str(&frame.expect("log stream").to_string());
            if seen.lines().any(|l| l.trim() == line) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{line:?} never printed; log so far: {seen:?}");
}

#[tokio::test]
async fn init_runs_first_and_containers_share_volumes_and_pid_namespace() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("pid", state.path()).await;
    let p = pod(r#"
metadata: {name: t1, namespace: ns1, labels: {app: x}}
spec:
  shareProcessNamespace: true
  volumes: [{name: w, emptyDir: {}}, {name: meta, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}]
  initContainers:
    - {name: init, image: busybox, command: [sh, -c, 'echo from-init > /w/init.txt'], volumeMounts: [{name: w, mountPath: /w}]}
  containers:
    - name: main
      image: busybox
      command: [sh, -c]
      args: ['while [ ! -f /w/side-up ]; do sleep 0.05; done; cat /w/init.txt; cat /meta/labels; echo "$POD/$NS/$(NODE_IP_X)"; ps -o comm | grep -c "^sleep$"; cat /sub/x 2>/dev/null || echo nosub; echo done > /dev/termination-log']
      env:
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: NODE_IP_X, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
      volumeMounts: [{name: w, mountPath: /w}, {name: meta, mountPath: /meta}, {name: w, mountPath: /sub, subPath: nested/dir}]
    - {name: side, image: busybox, command: [sh, -c, 'touch /w/side-up; exec sleep 2'], volumeMounts: [{name: w, mountPath: /w}]}
"#);
    let run = node.start_pod(p).await.unwrap();
    let w = run.volume_path("w").unwrap().to_path_buf();
    let s = tokio::time::timeout(Duration::from_secs(60), run.finished())
        .await
        .unwrap();
    assert_eq!(s.phase.as_deref(), Some("Succeeded"), "{s:?}");
    assert_eq!(terminated(&s, "init").0, 0);
    let (code, reason, msg) = terminated(&s, "main");
    assert_eq!(
        (code, reason.as_str(), msg.as_deref()),
        (0, "Completed", Some("done\n"))
    );
    assert!(
        w.join("nested/dir").is_dir(),
        "subPath directory created like the kubelet does"
    );
    let id = container(&s, "main").container_id.clone().unwrap();
    assert!(id.starts_with("docker://"), "{id}");
    let logs = std::process::Command::new("/usr/bin/docker")
        .args(["logs", id.trim_start_matches("docker://")])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&logs.stdout);
    assert!(out.contains("from-init"), "init ran before main: {out}");
    assert!(out.contains("app=\"x\""), "downwardAPI volume: {out}");
    assert!(
        out.contains("t1/ns1/127.0.0.1"),
        "downward env and $(VAR) expansion: {out}"
    );
    assert!(
        out.lines().any(|l| l.trim() == "1"),
        "shared PID namespace shows the sidecar's process: {out}"
    );
    assert!(out.contains("nosub"), "{out}");
    run.cleanup().await.unwrap();
    assert!(node.leftover_containers().await.unwrap().is_empty());
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn failed_init_fails_the_pod_and_starts_nothing_else() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("init", state.path()).await;
    let p = pod(r#"
metadata: {name: t2}
spec:
  initContainers: [{name: init, image: busybox, command: [sh, -c, 'echo broken >&2; exit 7']}]
  containers: [{name: main, image: busybox, command: [echo, never]}]
"#);
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Failed"));
    assert_eq!(terminated(&s, "init").0, 7);
    let main = container(&s, "main");
    assert!(main.container_id.is_none(), "main must not be created: {main:?}");
}

#[tokio::test]
async fn exit_codes_reasons_and_cannot_run() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("codes", state.path()).await;
    let p = pod(r#"
metadata: {name: t3}
spec:
  containers:
    - {name: ok, image: busybox, command: [sh, -c, 'exit 0']}
    - {name: bad, image: busybox, command: [sh, -c, 'exit 3']}
    - {name: missing, image: busybox, command: [no-such-binary]}
"#);
    let mut rx = {
        let run = node.start_pod(p).await.unwrap();
        let rx = run.status();
        let s = finish(&node, run, state.path()).await;
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        assert_eq!(terminated(&s, "ok").0, 0);
        assert_eq!(terminated(&s, "bad"), (3, "Error".into(), None));
        let (code, reason, msg) = terminated(&s, "missing");
        assert_eq!(reason, "ContainerCannotRun");
        assert_ne!(code, 0);
        assert!(msg.unwrap_or_default().contains("executable file not found"));
        rx
    };
    assert_eq!(
        rx.borrow_and_update().phase.as_deref(),
        Some("Failed"),
        "subscribers see the final phase"
    );
}

#[tokio::test]
async fn deadline_stops_the_pod() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("deadline", state.path()).await;
    let p = pod(r#"
metadata: {name: t4}
spec:
  activeDeadlineSeconds: 1
  terminationGracePeriodSeconds: 1
  containers: [{name: main, image: busybox, command: [sh, -c, 'trap "" TERM; sleep 60 & wait; sleep 60']}]
"#);
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(
        (s.phase.as_deref(), s.reason.as_deref()),
        (Some("Failed"), Some("DeadlineExceeded"))
    );
    assert_eq!(
        terminated(&s, "main").0,
        137,
        "TERM ignored, so KILL after the grace period"
    );
}

#[tokio::test]
async fn stop_is_a_deletion_and_missing_images_create_nothing() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("stop", state.path()).await;
    let p = pod(
        "metadata: {name: t5}\nspec:\n  containers: [{name: main, image: busybox, command: [sh, -c, 'trap \"exit 143\" TERM; echo trap-set; sleep 60 & wait']}]\n",
    );
    let run = node.start_pod(p).await.unwrap();
    let mut rx = run.status();
    rx.wait_for(|s| {
        container(s, "main")
            .state
            .as_ref()
            .is_some_and(|st| st.running.is_some())
    })
    .await
    .unwrap();
    // "Running" means the process exists, not that its shell has installed the trap yet; a
    // TERM before that is ignored by PID 1. Follow the log to the line printed after `trap`.
    let id = run.container_id("main").expect("main has a container id");
    wait_for_log_line(&node, &id, "trap-set").await;
    run.stop(Duration::from_secs(5));
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Failed"));
    assert_eq!(
        terminated(&s, "main").0,
        143,
        "the TERM trap ran: a stop is TERM first"
    );

    let p = pod("metadata: {name: t6}\nspec:\n  containers: [{name: main, image: 'registry.invalid/x:1'}]\n");
    match node.start_pod(p).await {
        Err(NodeError::ImageMissing { container, image }) => assert_eq!(
            (container.as_str(), image.as_str()),
            ("main", "registry.invalid/x:1")
        ),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a pod with a missing image must not start"),
    }
    assert!(node.leftover_containers().await.unwrap().is_empty());
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);

    let p = pod(
        "metadata: {name: t7}\nspec:\n  volumes: [{name: s, secret: {secretName: x}}]\n  containers: [{name: main, image: busybox}]\n",
    );
    let e = node
        .start_pod(p)
        .await
        .err()
        .expect("a secret volume of a secret the node does not have");
    assert!(e.to_string().contains("\"s\""), "{e}");
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}
