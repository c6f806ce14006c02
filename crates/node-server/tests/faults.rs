//! The node's injected faults (`crate::faults`) as an independent client (kube-rs) meets
//! them: an exec that closes without its status is judged `NoStatus` (a failure, never a
//! success) as soon as the stream ends, API error bursts carry their codes and
//! `Retry-After`, and watches are cut and expired as asked. The end-to-end behaviour of
//! the executors under the same faults is in `crates/cli/tests/run_faults.rs`.
//! Skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1.

use std::time::Duration;

use argoexec_kube::exec::{ExecFailure, collect};
use argoexec_node::NodeConfig;
use argoexec_node_server::faults::FaultSpec;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pods, namespace: default}
rules:
- {apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"]}
- {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pods, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pods}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
"#;

fn skip() -> bool {
    std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some()
}

/// A node injecting `faults`, and the guard that removes its containers whatever happens.
async fn server(state: &std::path::Path, test: &str, faults: &str) -> (NodeServer, Sweep) {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let label = format!("faults-{test}-{}", std::process::id());
    let sweep = Sweep(label.clone());
    let node = NodeConfig {
        runtime: argoexec_node::RuntimeChoice::from_env(),
        state_dir: state.to_path_buf(),
        node_label: label,
        ..Default::default()
    };
    let s = NodeServer::start(ServerConfig {
        node,
        faults: FaultSpec::parse(faults).unwrap(),
        ..Default::default()
    })
    .await
    .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
    s.rbac().load_str(RBAC, "test").unwrap();
    (s, sweep)
}

async fn client(s: &NodeServer, token: &str) -> kube::Client {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(s.ca_pem());
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n",
        s.api_url()
    );
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(cfg).unwrap()
}

/// A running pod and a client holding a token bound to it (the faults apply to pods).
async fn running_pod(s: &NodeServer, name: &str) -> (Api<Pod>, kube::Client) {
    let admin = client(s, s.admin_token()).await;
    let pods: Api<Pod> = Api::namespaced(admin, "default");
    let p: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [{
            "name": "main", "image": "busybox:latest",
            "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 60 & wait"]
        }]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &p).await.unwrap();
    let running = await_condition(pods.clone(), name, |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref()?.phase.as_deref()) == Some("Running")
    });
    tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the pod runs within a minute")
        .unwrap();
    // The token the node projected into the pod: bound to it, so the faults apply.
    let dir = s
        .service_account_dir("default", name)
        .expect("a projected service-account volume");
    let token = std::fs::read_to_string(dir.join("token")).unwrap();
    (pods, client(s, &token).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_closed_without_its_status_is_a_failure_at_once() {
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let (s, _sweep) = server(state.path(), "exec", "exec-no-status=1").await;
    let (_, pod_client) = running_pod(&s, "silent").await;
    let pods: Api<Pod> = Api::namespaced(pod_client, "default");
    let ap = AttachParams::default()
        .container("main")
        .stdin(false)
        .stderr(true);
    let bound = Duration::from_secs(20);
    // The command succeeds, but its status never comes: NoStatus, not a success, and not a
    // hang until the timeout either.
    let first = pods.exec("silent", ["sh", "-c", "echo hi"], &ap).await.unwrap();
    let verdict = collect(first, 1024, bound).await;
    assert_eq!(verdict.unwrap_err(), ExecFailure::NoStatus);
    // The next exec has its status again.
    let second = pods.exec("silent", ["sh", "-c", "echo hi"], &ap).await.unwrap();
    let out = collect(second, 1024, bound).await.unwrap();
    assert_eq!(out.stdout, b"hi\n");
    assert_eq!(s.fault_report()["silentExecs"], 1);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_bursts_watch_cuts_and_expiry_reach_the_client() {
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let (s, _sweep) = server(
        state.path(),
        "api",
        "watch-cut-events=1,watch-expire=1,api-429=2:1",
    )
    .await;
    let (_, pod_client) = running_pod(&s, "watched").await;
    // Requests made by the pod: two 429s with Retry-After 1, then answers; kube-rs
    // retries 429 by itself, so the client sees the answer.
    let pods: Api<Pod> = Api::namespaced(pod_client.clone(), "default");
    assert!(pods.get("watched").await.is_ok());
    assert_eq!(s.fault_report()["apiErrors"], 2);
    // A raw request past the burst is answered normally.
    let req = http::Request::get("/api/v1/namespaces/default/pods/watched")
        .body(Vec::new())
        .unwrap();
    assert!(pod_client.request::<Pod>(req).await.is_ok());
    let pods: Api<Pod> = Api::namespaced(pod_client, "default");
    let p = pods.get("watched").await.unwrap();
    let rv = p.metadata.resource_version.clone().unwrap();
    // A watch from the current state ends after one event (the cut).
    let wp = WatchParams::default().fields("metadata.name=watched");
    let events: Vec<_> = pods.watch(&wp, "0").await.unwrap().try_collect().await.unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(matches!(events[0], WatchEvent::Added(_)));
    // A watch from a resourceVersion is answered 410 Expired (once).
    let mut st = pods.watch(&wp, &rv).await.unwrap().boxed();
    match st.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410, "{e:?}"),
        other => panic!("expected an ERROR 410 event, got {other:?}"),
    }
    let r = s.fault_report();
    assert_eq!(
        (r["apiErrors"].as_u64(), r["expiredWatches"].as_u64()),
        (Some(2), Some(1)),
        "{r}"
    );
    assert!(r["cutWatches"].as_u64() >= Some(1), "{r}");
    s.shutdown().await;
}
