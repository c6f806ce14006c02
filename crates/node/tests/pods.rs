//! The local node against the real Docker Engine: init ordering, shared PID namespace,
//! downward-API env and volumes, subPath, termination messages, deadlines, missing images,
//! status transitions, secret and configMap volumes and env (items, modes, optional, missing
//! ones), containers the engine refuses, and that cleanup leaves no container or directory
//! behind.

use std::time::Duration;

mod common;

use argoexec_node::{LocalNode, NodeConfig, NodeError};
use common::*;

/// Follows the container's stdout (a Docker log stream, no polling) until `line` appears.
async fn wait_for_log_line(node: &LocalNode, id: &str, line: &str) {
    use futures::StreamExt;
    let request = argoexec_node::runtime::LogRequest {
        follow: true,
        ..Default::default()
    };
    let mut logs = node.runtime().logs(runtime_id(id), request);
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(frame) = logs.next().await {
            seen.push_str(&String::from_utf8_lossy(&frame.expect("log stream")));
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
    assert!(id.starts_with(&format!("{}://", node.runtime().scheme())), "{id}");
    let out = logs(&node, &id).await;
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
    assert!(main.container_id.is_none(), "main must not be started: {main:?}");
}

/// The namespaces a pod's container is in: `(ipc, pid)` as `readlink` prints them.
async fn namespaces_of(
    node: &LocalNode,
    s: &k8s_openapi::api::core::v1::PodStatus,
    name: &str,
) -> (String, String) {
    let id = container(s, name).container_id.clone().unwrap();
    let out = logs(node, &id).await;
    let mut lines = out.lines().map(|l| l.trim().to_string());
    let (ipc, pid) = (lines.next().unwrap_or_default(), lines.next().unwrap_or_default());
    assert!(
        ipc.starts_with("ipc:[") && pid.starts_with("pid:["),
        "{name}: {out:?}"
    );
    (ipc, pid)
}

#[tokio::test]
async fn containers_share_the_pods_ipc_namespace_and_no_pid_namespace() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("ipc", state.path()).await;
    let print = "readlink /proc/self/ns/ipc; readlink /proc/self/ns/pid";
    // a and b live at the same time (each waits for the other's mark), so two distinct PID
    // namespaces cannot share an inode number, which the kernel reuses once one is gone.
    let both = "while [ ! -f /w/a ] || [ ! -f /w/b ]; do sleep 0.05; done";
    let p = pod(&format!(
        r#"
metadata: {{name: t-ipc}}
spec:
  volumes: [{{name: w, emptyDir: {{}}}}]
  initContainers: [{{name: init, image: busybox, command: [sh, -c, '{print}']}}]
  containers:
    - {{name: a, image: busybox, command: [sh, -c, '{print}; touch /w/a; {both}'], volumeMounts: [{{name: w, mountPath: /w}}]}}
    - {{name: b, image: busybox, command: [sh, -c, '{print}; touch /w/b; {both}'], volumeMounts: [{{name: w, mountPath: /w}}]}}
"#
    ));
    let run = node.start_pod(p).await.unwrap();
    let s = tokio::time::timeout(Duration::from_secs(60), run.finished())
        .await
        .unwrap();
    assert_eq!(s.phase.as_deref(), Some("Succeeded"), "{s:?}");
    let host = |ns: &str| std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
    let host = (host("ipc"), host("pid"));
    let mut seen = Vec::new();
    for name in ["init", "a", "b"] {
        seen.push(namespaces_of(&node, &s, name).await);
    }
    assert!(
        seen.iter().all(|(ipc, _)| *ipc == seen[0].0),
        "one IPC namespace for the pod: {seen:?}"
    );
    assert_ne!(
        std::path::Path::new(&seen[0].0),
        host.0,
        "not the host's IPC namespace"
    );
    assert!(
        seen.iter().all(|(_, pid)| std::path::Path::new(pid) != host.1),
        "not the host's PID namespace: {seen:?}"
    );
    assert_ne!(
        seen[1].1, seen[2].1,
        "a PID namespace per container without shareProcessNamespace"
    );
    run.cleanup().await.unwrap();
    assert!(node.leftover_containers().await.unwrap().is_empty());
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let root = state.path().to_string_lossy();
    assert!(
        !mounts.lines().any(|l| l.contains(root.as_ref())),
        "nothing stays mounted under the node's state directory"
    );
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
    until_running(&run, "main").await;
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

/// The whole log (stdout and stderr) of a finished container.
async fn logs(node: &LocalNode, id: &str) -> String {
    use futures::StreamExt;
    let mut s = node.runtime().logs(runtime_id(id), Default::default());
    let mut out = String::new();
    while let Some(frame) = s.next().await {
        out.push_str(&String::from_utf8_lossy(&frame.expect("log stream")));
    }
    out
}

/// The runtime's ID in a status `containerID` (`<scheme>://<id>`), or `id` itself.
fn runtime_id(id: &str) -> &str {
    id.split_once("://").map_or(id, |(_, i)| i)
}

fn data(pairs: &[(&str, &str)]) -> argoexec_node::ObjectData {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect()
}

/// Secrets of the source (the API store in the node server), one of the node's own
/// `NodeConfig::secrets`, and a ConfigMap, read by volumes and env.
fn objects() -> std::sync::Arc<argoexec_node::StaticObjects> {
    std::sync::Arc::new(argoexec_node::StaticObjects {
        secrets: [(
            "creds".to_string(),
            data(&[("user", "admin"), ("pass", "s3cr3t")]),
        )]
        .into(),
        config_maps: [("cfg".to_string(), data(&[("a", "1")]))].into(),
    })
}

#[tokio::test]
async fn secret_volumes_and_env_come_from_the_objects_with_items_and_modes() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = LocalNode::connect(NodeConfig {
        state_dir: state.path().to_path_buf(),
        node_label: format!("nodetest-{}-secrets", std::process::id()),
        secrets: [("node-own".to_string(), data(&[("token", "from-node")]))].into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let p = pod(r#"
metadata: {name: t8}
spec:
  volumes:
    # Modes in decimal, as JSON has them: 288 = 0440, 256 = 0400, 384 = 0600.
    - {name: items, secret: {secretName: creds, defaultMode: 288, items: [{key: pass, path: sub/p, mode: 256}, {key: user, path: u}]}}
    - {name: all, secret: {secretName: creds}}
    - {name: opt, secret: {secretName: gone, optional: true}}
    - {name: own, secret: {secretName: node-own}}
    - {name: cm, configMap: {name: cfg, items: [{key: a, path: a.txt, mode: 384}]}}
  containers:
    - name: main
      image: busybox
      command: [sh, -c]
      args:
        - |
          stat -c '%a %n' /items/sub/p /items/u /all/user /all/pass /cm/a.txt
          echo "items: $(cat /items/sub/p) $(cat /items/u) $(ls /items | tr '\n' ' ')"
          echo "opt: $(ls -A /opt | wc -l) own: $(cat /own/token)"
          grep -c ' /items tmpfs ' /proc/mounts
          echo "env: $PASS $CREDS_user $CREDS_pass $A $OWN [${MISSING-unset}] [${MISSING_CM-unset}] $(env | grep -c '^GONE_')"
      env:
        - {name: PASS, valueFrom: {secretKeyRef: {name: creds, key: pass}}}
        - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: a}}}
        - {name: OWN, valueFrom: {secretKeyRef: {name: node-own, key: token}}}
        - {name: MISSING, valueFrom: {secretKeyRef: {name: creds, key: nope, optional: true}}}
        - {name: MISSING_CM, valueFrom: {configMapKeyRef: {name: gone, key: a, optional: true}}}
      envFrom:
        - {secretRef: {name: creds}, prefix: CREDS_}
        - {secretRef: {name: gone, optional: true}, prefix: GONE_}
      volumeMounts:
        - {name: items, mountPath: /items}
        - {name: all, mountPath: /all}
        - {name: opt, mountPath: /opt}
        - {name: own, mountPath: /own}
        - {name: cm, mountPath: /cm}
"#);
    let run = node.start_pod_with(p, objects()).await.unwrap();
    let s = tokio::time::timeout(Duration::from_secs(60), run.finished())
        .await
        .expect("pod did not finish");
    assert_eq!(s.phase.as_deref(), Some("Succeeded"), "{s:?}");
    let out = logs(&node, run.container_id("main").as_deref().unwrap()).await;
    finish(&node, run, state.path()).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "400 /items/sub/p",
            "440 /items/u",
            "644 /all/user",
            "644 /all/pass",
            "600 /cm/a.txt",
            "items: s3cr3t admin sub u ",
            "opt: 0 own: from-node",
            "1",
            "env: s3cr3t admin s3cr3t 1 from-node [unset] [unset] 0",
        ],
        "{out}"
    );
}

#[tokio::test]
async fn missing_secrets_fail_the_pod_with_the_kubelet_message() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("missing", state.path()).await;
    for (volume, message) in [
        (
            "{secretName: gone}",
            "pod \"t9\": MountVolume.SetUp failed for volume \"s\" : secret \"gone\" not found",
        ),
        (
            "{secretName: creds, items: [{key: nope, path: n}]}",
            "pod \"t9\": MountVolume.SetUp failed for volume \"s\" : references non-existent secret key: nope",
        ),
    ] {
        let p = pod(&format!(
            "metadata: {{name: t9}}\nspec:\n  volumes: [{{name: s, secret: {volume}}}]\n  containers: [{{name: main, image: busybox}}]\n"
        ));
        match node.start_pod_with(p, objects()).await {
            Err(e @ NodeError::Mount { .. }) => assert_eq!(e.to_string(), message),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("a pod whose secret volume cannot be made must not start"),
        }
        assert!(node.leftover_containers().await.unwrap().is_empty());
        assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
    }

    // An env key that the Secret lacks: the container waits with the kubelet's
    // CreateContainerConfigError, and the pod ends: nothing is started.
    let p = pod(r#"
metadata: {name: t10}
spec:
  terminationGracePeriodSeconds: 5
  containers:
    - {name: side, image: busybox, command: [sh, -c, 'trap "exit 0" TERM; sleep 600 & wait']}
    - name: main
      image: busybox
      command: ['true']
      env: [{name: X, valueFrom: {secretKeyRef: {name: creds, key: nope}}}]
"#);
    let run = node.start_pod_with(p, objects()).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Failed"), "{s:?}");
    let waiting = container(&s, "main")
        .state
        .as_ref()
        .unwrap()
        .waiting
        .clone()
        .unwrap();
    assert_eq!(
        (waiting.reason.as_deref(), waiting.message.as_deref()),
        (
            Some("CreateContainerConfigError"),
            Some("couldn't find key nope in Secret default/creds")
        )
    );
    assert_eq!(
        s.message.as_deref(),
        Some("container \"main\" could not run: couldn't find key nope in Secret default/creds")
    );
    assert!(
        container(&s, "side").container_id.is_none(),
        "nothing starts once a container cannot be created"
    );
}

#[tokio::test]
async fn containers_the_engine_refuses_fail_the_pod_with_its_message() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node("refused", state.path()).await;
    // Refused at create: a privileged container with a capability Docker does not know.
    let p = pod(r#"
metadata: {name: t11}
spec:
  containers:
    - {name: side, image: busybox, command: [sh, -c, 'sleep 600']}
    - {name: main, image: busybox, command: ['true'], securityContext: {privileged: true, capabilities: {add: [NOT_A_CAP]}}}
"#);
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Failed"), "{s:?}");
    let (code, reason, msg) = terminated(&s, "main");
    assert_eq!((code, reason.as_str()), (128, "ContainerCannotRun"));
    let msg = msg.unwrap_or_default();
    assert!(msg.contains("unknown capability: \"CAP_NOT_A_CAP\""), "{msg}");
    assert_eq!(
        s.message,
        Some(format!("container \"main\" could not run: {msg}"))
    );

    // Refused at start (runc will not mount inside /proc), after the sidecar started: the
    // sidecar is stopped (TERM, which it traps) and the pod ends instead of running on.
    let p = pod(r#"
metadata: {name: t12}
spec:
  terminationGracePeriodSeconds: 30
  volumes: [{name: w, emptyDir: {}}]
  containers:
    - {name: side, image: busybox, command: [sh, -c, 'trap "exit 0" TERM; sleep 600 & wait']}
    - {name: main, image: busybox, command: ['true'], securityContext: {privileged: true}, volumeMounts: [{name: w, mountPath: /proc/x}]}
"#);
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Failed"), "{s:?}");
    let (_, reason, msg) = terminated(&s, "main");
    assert_eq!(reason, "ContainerCannotRun");
    assert!(msg.unwrap_or_default().contains("inside /proc"), "{s:?}");
    assert_eq!(terminated(&s, "side").0, 0, "the sidecar was stopped with TERM");

    // An init container the engine refuses: the pod fails, nothing else is created.
    let p = pod(r#"
metadata: {name: t13}
spec:
  initContainers: [{name: init, image: busybox, command: ['true'], securityContext: {capabilities: {add: [NOT_A_CAP]}}}]
  containers: [{name: main, image: busybox, command: ['true']}]
"#);
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(
        (s.phase.as_deref(), s.message.as_deref()),
        (Some("Failed"), Some("init container \"init\" failed"))
    );
    assert!(
        terminated(&s, "init")
            .2
            .unwrap_or_default()
            .contains("CAP_NOT_A_CAP")
    );
    assert!(container(&s, "main").container_id.is_none());
}

#[tokio::test]
async fn on_failure_restarts_failed_containers_until_they_succeed() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node_with_backoff("onfailure", state.path(), Duration::from_millis(100)).await;
    // Fails once (init and main alike), then succeeds: the emptyDir remembers the first try.
    let p = pod(r#"
metadata: {name: t13}
spec:
  restartPolicy: OnFailure
  volumes: [{name: w, emptyDir: {}}]
  initContainers:
    - {name: init, image: busybox, command: [sh, -c, 'test -f /w/i || { touch /w/i; exit 4; }'], volumeMounts: [{name: w, mountPath: /w}]}
  containers:
    - {name: main, image: busybox, command: [sh, -c, 'test -f /w/m || { touch /w/m; exit 3; }'], volumeMounts: [{name: w, mountPath: /w}]}
"#);
    let run = node.start_pod(p).await.unwrap();
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Succeeded"), "{s:?}");
    for (name, code) in [("init", 4), ("main", 3)] {
        let c = container(&s, name);
        assert_eq!(c.restart_count, 1, "{name}: {c:?}");
        let last = c.last_state.as_ref().and_then(|l| l.terminated.as_ref()).unwrap();
        assert_eq!(last.exit_code, code, "{name}");
        assert_eq!(terminated(&s, name).0, 0);
    }
}

#[tokio::test]
async fn a_stop_during_the_back_off_ends_an_on_failure_pod() {
    if !docker_ready() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let node = node_with_backoff("backoff", state.path(), Duration::from_secs(3600)).await;
    let p = pod(r#"
metadata: {name: t14}
spec:
  restartPolicy: OnFailure
  containers:
    - {name: main, image: busybox, command: [sh, -c, 'exit 2']}
"#);
    let run = node.start_pod(p).await.unwrap();
    let mut status = run.status();
    let waiting = status
        .wait_for(|s| argoexec_node::status::all(s).any(|c| c.name == "main" && c.restart_count == 1))
        .await
        .unwrap()
        .clone();
    let c = container(&waiting, "main");
    let reason = c
        .state
        .as_ref()
        .and_then(|st| st.waiting.as_ref())
        .and_then(|w| w.reason.clone());
    assert_eq!(reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(
        waiting.phase.as_deref(),
        Some("Running"),
        "a restarting pod is still running"
    );
    run.stop(Duration::from_secs(1));
    let s = finish(&node, run, state.path()).await;
    assert_eq!(s.phase.as_deref(), Some("Failed"), "{s:?}");
}
