//! The kubelet backend against the local node's kubelet endpoint, below the flows: exec'd
//! file reads while a container runs (and §5.4's answer once it exited), logs, names, the
//! graceful kill, and a certificate name that does not match.

use std::time::Duration;

use argoexec_backend_kubelet::{KubeletConfig, KubeletExecutor};
use argoexec_core::PodPaths;
use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_runtime::{ErrorKind, RuntimeExecutor, StreamKind};
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

const RBAC: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubelet-exec}
rules: [{apiGroups: [""], resources: [nodes/proxy], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kubelet-exec}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubelet-exec}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
"#;

fn executor(
    server: &NodeServer,
    root: &std::path::Path,
    extra: &[(&str, &str)],
) -> Result<KubeletExecutor, argoexec_runtime::RuntimeError> {
    let paths = PodPaths::new(root);
    let sa = paths.service_account_dir();
    std::fs::create_dir_all(&sa).unwrap();
    std::fs::write(sa.join("token"), server.issue_token("default", "default", None)).unwrap();
    std::fs::write(sa.join("ca.crt"), server.ca_pem()).unwrap();
    std::fs::write(sa.join("namespace"), "default").unwrap();
    let port = server.kubelet_port().to_string();
    let node = server.node_name().to_string();
    let mut env: Vec<(String, String)> = vec![
        ("ARGO_KUBELET_HOST".into(), "127.0.0.1".into()),
        ("ARGO_KUBELET_PORT".into(), port),
        ("ARGO_KUBELET_NODE_NAME".into(), node),
    ];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config =
        KubeletConfig::from_env(|k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).unwrap();
    KubeletExecutor::new(config, &paths, "default", "kube-files")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_reads_logs_names_kill_and_tls_names() {
    if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
        return;
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let state = tempfile::tempdir().unwrap();
    let label = format!("kubelet-backend-{}", std::process::id());
    let server = NodeServer::start(ServerConfig {
        node: NodeConfig {
            state_dir: state.path().to_path_buf(),
            node_label: label,
            ..Default::default()
        },
        ..Default::default()
    })
    .await
    .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
    server.rbac().load_str(RBAC, "test").unwrap();
    server
        .create_pod(
            "default",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kube-files"},
                "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
                    {"name": "run", "image": "busybox:latest", "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 60 & wait"]},
                    {"name": "quick", "image": "busybox:latest", "command": ["sh", "-c", "echo bye"]}]}}),
        )
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let k = executor(&server, root.path(), &[]).unwrap();

    // wait() itself: the quick container ends on its own.
    let exits = tokio::time::timeout(
        Duration::from_secs(60),
        k.wait(&["quick".into()], CancellationToken::new()),
    )
    .await
    .expect("quick terminates")
    .unwrap();
    assert_eq!(exits[0].exit_code, Some(0));
    let mut names = k.list_container_names().await.unwrap();
    names.sort();
    assert_eq!(names, ["quick", "run"]);
    let mut log = String::new();
    k.output_stream("quick", StreamKind::Combined)
        .await
        .unwrap()
        .read_to_string(&mut log)
        .await
        .unwrap();
    assert_eq!(log, "bye\n");

    // Base-layer reads by exec while the container runs.
    let passwd = k.get_file_contents("run", "/etc/passwd".as_ref()).await.unwrap();
    assert!(String::from_utf8_lossy(&passwd).starts_with("root:"));
    let e = k.get_file_contents("run", "/no/such".as_ref()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let dest = root.path().join("etc.tgz");
    k.copy_file("run", "/etc".as_ref(), &dest, Some(1)).await.unwrap();
    let mut tar = tar::Archive::new(flate2::read::MultiGzDecoder::new(
        std::fs::File::open(&dest).unwrap(),
    ));
    let entries: Vec<String> = tar
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert!(entries.iter().any(|p| p == "etc/passwd"), "{entries:?}");
    assert!(entries.iter().all(|p| p.starts_with("etc")), "{entries:?}");
    // …and §5.4's answer once it exited.
    let e = k
        .get_file_contents("quick", "/etc/passwd".as_ref())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(
        e.to_string()
            .contains("does not support outputs from base image layer"),
        "{e}"
    );

    // TERM → the trap → exit 0, well within the grace.
    k.kill(&["run".into()], Duration::from_secs(20)).await.unwrap();
    let pod = k.own_pod().await.unwrap();
    assert_eq!(
        argoexec_kube::podstate::state_of(&pod, "run"),
        argoexec_kube::podstate::ContainerState::Terminated {
            exit_code: 0,
            reason: Some("Completed".into())
        }
    );

    // A fixed verify name that is not on the certificate: refused, with what was tried.
    let wrong = executor(
        &server,
        root.path(),
        &[("ARGO_KUBELET_SERVER_NAME", "wrong.example")],
    )
    .unwrap();
    let e = wrong.own_pod().await.unwrap_err().to_string();
    assert!(
        e.contains("x509") && e.contains("wrong.example") && e.contains("ca.crt"),
        "{e}"
    );
    server.shutdown().await;
}
