//! kube-rs as an independent client of the node server (real pods on Docker): the API
//! side (create, watch until Running, exec with exit code, merge-patch of annotations,
//! workflow task results as dynamic objects) and the kubelet side through kube's
//! `kubelet-debug` calls (logs, exec), with the kubelet's 401/403 behaviour and the
//! request counts. Skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1; fails when Docker is absent.

use std::time::Duration;

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, AttachParams, DynamicObject, LogParams, Patch, PatchParams, PostParams};
use kube::core::kubelet_debug::KubeletDebugParams;
use kube::discovery::ApiResource;
use kube::runtime::wait::await_condition;
use serde_json::json;
use tokio::io::AsyncReadExt;

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubelet-proxy}
rules: [{apiGroups: [""], resources: ["nodes/proxy"], verbs: ["get", "create"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kubelet-proxy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kubelet-proxy}
subjects: [{kind: ServiceAccount, name: kubelet, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-pods}
rules: [{apiGroups: [""], resources: ["nodes/pods"], verbs: ["get"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: node-pods}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-pods}
subjects: [{kind: ServiceAccount, name: reader, namespace: default}]
"#;

fn skip() -> bool {
    std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some()
}

async fn server(state: &std::path::Path) -> NodeServer {
    server_with(state, argoexec_node_server::KubeletCert::default()).await
}

fn label(test: &str) -> String {
    format!("kube-rs-{test}-{}", std::process::id())
}

async fn server_with(state: &std::path::Path, cert: argoexec_node_server::KubeletCert) -> NodeServer {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let node = NodeConfig {
        runtime: argoexec_node::RuntimeChoice::from_env(),
        state_dir: state.to_path_buf(),
        node_label: label(match cert {
            argoexec_node_server::KubeletCert::ClusterCaIp => "ip",
            argoexec_node_server::KubeletCert::ClusterCaHostname => "hostname",
            argoexec_node_server::KubeletCert::SelfSigned => "self",
        }),
        ..Default::default()
    };
    let s = NodeServer::start(ServerConfig {
        node,
        kubelet_cert: cert,
        ..Default::default()
    })
    .await
    .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
    s.rbac().load_str(RBAC, "test").unwrap();
    s
}

/// A kube client for `url` trusting `ca_pem` with bearer `token`.
async fn client(url: &str, ca_pem: &str, token: &str) -> kube::Client {
    client_named(url, ca_pem, token, None).await
}

/// The same, verifying the server certificate against `server_name` instead of the host.
async fn client_named(url: &str, ca_pem: &str, token: &str, server_name: Option<&str>) -> kube::Client {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let sni = server_name
        .map(|n| format!("    tls-server-name: {n}\n"))
        .unwrap_or_default();
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\n{sni}users:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n"
    );
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(cfg).unwrap()
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"suite": "kube-rs"}},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [{
            "name": "main", "image": "busybox:latest",
            "command": ["sh", "-c", "echo out; echo err >&2; trap 'exit 0' TERM; sleep 60 & wait"]
        }]}
    }))
    .unwrap()
}

async fn read_all(mut r: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut s = String::new();
    r.read_to_string(&mut s).await.unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_agrees_with_both_endpoints() {
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let _sweep = Sweep(label("ip"));
    let s = server(state.path()).await;
    let admin = client(&s.api_url(), &s.ca_pem(), s.admin_token()).await;
    let pods: Api<Pod> = Api::default_namespaced(admin.clone());

    // API: create, then watch until Running (kube-runtime's watcher under the hood).
    let created = pods.create(&PostParams::default(), &pod("kr")).await.unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let running = |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref())
            .is_some_and(|s| s.phase.as_deref() == Some("Running"))
    };
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(pods.clone(), "kr", running),
    )
    .await
    .expect("Running within 30 s")
    .unwrap();

    // API exec: stdout, stderr and the exit code from the v5 status.
    let ap = AttachParams::default().stdout(true).stderr(true);
    let mut p = pods
        .exec("kr", ["sh", "-c", "echo hi; echo oops >&2; exit 3"], &ap)
        .await
        .unwrap();
    let (out, err) = (p.stdout().unwrap(), p.stderr().unwrap());
    let status = p.take_status().unwrap();
    let (out, err) = tokio::join!(read_all(out), read_all(err));
    let status = status.await.unwrap();
    assert_eq!((out.as_str(), err.as_str()), ("hi\n", "oops\n"), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let code = status.details.unwrap().causes.unwrap()[0].message.clone();
    assert_eq!(code.as_deref(), Some("3"));

    // API patch: merge patch of an annotation.
    let patched = pods
        .patch(
            "kr",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"a": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.annotations.unwrap()["a"], "1");

    // API: workflow task results through the dynamic API; strategic merge is refused (415).
    let ar = ApiResource {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        api_version: "argoproj.io/v1alpha1".into(),
        kind: "WorkflowTaskResult".into(),
        plural: "workflowtaskresults".into(),
    };
    let trs: Api<DynamicObject> = Api::namespaced_with(admin.clone(), "default", &ar);
    let tr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskResult",
        "metadata": {"name": "node-1", "labels": {"workflows.argoproj.io/report-outputs-completed": "false"}},
        "outputs": {"result": "42"}
    }))
    .unwrap();
    trs.create(&PostParams::default(), &tr).await.unwrap();
    let e = trs.create(&PostParams::default(), &tr).await.unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    let patch = json!({"metadata": {"labels": {"workflows.argoproj.io/report-outputs-completed": "true"}}});
    let got = trs
        .patch("node-1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(
        got.labels()["workflows.argoproj.io/report-outputs-completed"],
        "true"
    );
    assert_eq!(got.data["outputs"]["result"], "42");
    let e = trs
        .patch("node-1", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("415") || e.to_string().contains("UnsupportedMediaType"),
        "{e}"
    );

    // Kubelet: kube's kubelet-debug logs and exec, with a token holding nodes/proxy.
    let token = s.issue_token("default", "kubelet", None);
    let kubelet = client(&s.kubelet_url(), &s.kubelet_ca_pem(), &token).await;
    let kp = KubeletDebugParams {
        name: "kr",
        namespace: "default",
        pod_uid: Some(&uid),
    };
    let logs = kubelet
        .kubelet_node_logs(&kp, "main", &LogParams::default())
        .await
        .unwrap();
    let lines: Vec<String> = logs.lines().try_collect().await.unwrap();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(sorted, ["err", "out"], "{lines:?}");
    let mut p = kubelet
        .kubelet_node_exec(
            &kp,
            "main",
            ["sh", "-c", "echo via-kubelet"],
            &AttachParams::default().stdout(true).stderr(false),
        )
        .await
        .unwrap();
    let out = read_all(p.stdout().unwrap()).await;
    let status = p.take_status().unwrap().await.unwrap();
    assert_eq!(out, "via-kubelet\n");
    assert_eq!(status.status.as_deref(), Some("Success"));

    // Kubelet authn/authz: unknown token → 401; nodes/pods only → /pods yes, logs 403.
    let bad = client(&s.kubelet_url(), &s.kubelet_ca_pem(), "not-a-token").await;
    let e = bad
        .kubelet_node_logs(&kp, "main", &LogParams::default())
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("401"), "{e}");
    let reader = client(
        &s.kubelet_url(),
        &s.kubelet_ca_pem(),
        &s.issue_token("default", "reader", None),
    )
    .await;
    let e = reader
        .kubelet_node_logs(&kp, "main", &LogParams::default())
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("Forbidden (user=system:serviceaccount:default:reader, verb=get, resource=nodes, subresource(s)=[proxy])"),
        "{e}"
    );
    let list = reader
        .request_text(http::Request::get("/pods").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert!(
        list.contains("\"PodList\"")
            && list.contains(&format!(
                "\"{}://",
                argoexec_node::RuntimeChoice::from_env().name()
            )),
        "{list}"
    );

    // The node counted the kubelet calls against the pod.
    let counts = s.counts(Some("default/kr"));
    let logs_calls: u64 = counts
        .iter()
        .filter(|r| r.call.endpoint == "kubelet" && r.call.path == "/containerLogs/default/kr/main")
        .map(|r| r.count)
        .sum();
    // The allowed call and the forbidden one; the unauthenticated one is counted under "-".
    assert_eq!(logs_calls, 2, "{counts:?}");
    assert!(
        s.counts(Some("-"))
            .iter()
            .any(|r| r.call.verb == "unauthenticated")
    );

    // A watch from a compacted version: one ERROR event with 410 Expired, then the end.
    let old = created.metadata.resource_version.clone().unwrap();
    s.compact();
    let mut w = pods
        .watch(&kube::api::WatchParams::default(), &old)
        .await
        .unwrap()
        .boxed();
    match w.next().await {
        Some(Ok(kube::api::WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"), "{e:?}");
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    assert!(w.next().await.is_none(), "the stream ends after the 410");
    // Resuming from the list's version works.
    let list = pods.list(&Default::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut w = pods
        .watch(&kube::api::WatchParams::default().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    assert!(
        w.next().await.is_none(),
        "no change after the list's version within 1 s"
    );

    // Deletion: the watch sees the pod go.
    pods.delete("kr", &Default::default()).await.unwrap();
    let gone = await_condition(pods.clone(), "kr", |p: Option<&Pod>| p.is_none());
    tokio::time::timeout(Duration::from_secs(30), gone)
        .await
        .expect("deleted")
        .unwrap();
    let mut w = std::pin::pin!(kube::runtime::watcher(pods.clone(), Default::default()));
    assert!(w.next().await.is_some());
    s.shutdown().await;
    assert_eq!(
        std::fs::read_dir(state.path()).unwrap().count(),
        0,
        "state dir left behind"
    );
}

/// The three kubelet certificate setups of real clusters, checked with kube-rs: the IP-SAN
/// cert verifies by IP; the hostname-only cert verifies only against the node name; the
/// self-signed cert verifies only with its own CA bundle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_certificate_setups() {
    use argoexec_node_server::KubeletCert;
    if skip() {
        return;
    }
    let healthz = |c: kube::Client| async move {
        c.request_text(http::Request::get("/healthz").body(Vec::new()).unwrap())
            .await
    };
    let state = tempfile::tempdir().unwrap();
    let _sweep = [Sweep(label("hostname")), Sweep(label("self"))];
    let s = server_with(state.path(), KubeletCert::ClusterCaHostname).await;
    let t = s.issue_token("default", "kubelet", None);
    let by_ip = healthz(client(&s.kubelet_url(), &s.ca_pem(), &t).await).await;
    assert!(
        by_ip.is_err(),
        "a hostname-only cert must not verify for 127.0.0.1"
    );
    let by_name = healthz(client_named(&s.kubelet_url(), &s.ca_pem(), &t, Some(s.node_name())).await).await;
    assert_eq!(by_name.unwrap(), "ok");
    s.shutdown().await;

    let s = server_with(state.path(), KubeletCert::SelfSigned).await;
    let t = s.issue_token("default", "kubelet", None);
    assert_ne!(&s.kubelet_ca_pem(), &s.ca_pem());
    let cluster_ca =
        healthz(client_named(&s.kubelet_url(), &s.ca_pem(), &t, Some(s.node_name())).await).await;
    assert!(
        cluster_ca.is_err(),
        "the cluster CA must not verify a self-signed kubelet cert"
    );
    let own_ca =
        healthz(client_named(&s.kubelet_url(), &s.kubelet_ca_pem(), &t, Some(s.node_name())).await).await;
    assert_eq!(own_ca.unwrap(), "ok");
    s.shutdown().await;

    let s = server_with(state.path(), KubeletCert::ClusterCaIp).await;
    let t = s.issue_token("default", "kubelet", None);
    assert_eq!(
        healthz(client(&s.kubelet_url(), &s.ca_pem(), &t).await)
            .await
            .unwrap(),
        "ok"
    );
    s.shutdown().await;
}

/// The raw exec stream, byte for byte: subprotocol echo, the greeting frame on stdout,
/// a pong for a ping, and the exact final status, then a normal close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_websocket_exec_frames() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};
    if skip() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let _sweep = Sweep(label("raw"));
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let s = NodeServer::start(ServerConfig {
        node: NodeConfig {
            runtime: argoexec_node::RuntimeChoice::from_env(),
            state_dir: state.path().to_path_buf(),
            node_label: label("raw"),
            ..Default::default()
        },
        ..Default::default()
    })
    .await
    .unwrap();
    let admin = client(&s.api_url(), &s.ca_pem(), s.admin_token()).await;
    let pods: Api<Pod> = Api::default_namespaced(admin);
    pods.create(&PostParams::default(), &pod("raw")).await.unwrap();
    let running = |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref())
            .is_some_and(|s| s.phase.as_deref() == Some("Running"))
    };
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(pods.clone(), "raw", running),
    )
    .await
    .unwrap()
    .unwrap();

    // TLS by hand (rustls, the cluster CA), then the WebSocket handshake over it.
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(s.ca_pem().as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let cfg = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.api_port()))
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg))
        .connect(name, tcp)
        .await
        .unwrap();
    let url = format!(
        "wss://127.0.0.1:{}/api/v1/namespaces/default/pods/raw/exec?command=sh&command=-c&command=head+-c+1+%3E%2Fdev%2Fnull%3B+echo+hi&stdin=true&stdout=true&stderr=true",
        s.api_port()
    );
    let mut req = url.into_client_request().unwrap();
    req.headers_mut().insert(
        "Authorization",
        format!("Bearer {}", s.admin_token()).parse().unwrap(),
    );
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        "v4.channel.k8s.io, v5.channel.k8s.io".parse().unwrap(),
    );
    let (mut ws, resp) = tokio_tungstenite::client_async(req, tls).await.unwrap();
    assert_eq!(
        resp.headers()["sec-websocket-protocol"],
        "v4.channel.k8s.io",
        "client preference wins"
    );
    let first = ws.next().await.unwrap().unwrap();
    assert_eq!(first, Message::binary(vec![1u8]), "greeting on stdout");
    // The command waits for one stdin byte: ping first, and send the byte once the pong
    // is back, so the order is set by events, not by time.
    ws.send(Message::Ping(b"p".to_vec().into())).await.unwrap();
    let mut pong = false;
    let mut frames = Vec::new();
    while let Some(m) = ws.next().await {
        match m.unwrap() {
            Message::Pong(p) => {
                pong = p.as_ref() == b"p";
                ws.send(Message::binary(vec![0u8, b'x'])).await.unwrap();
            }
            Message::Binary(b) => frames.push(b.to_vec()),
            Message::Close(c) => {
                assert_eq!(c.map(|c| u16::from(c.code)), Some(1000));
                break;
            }
            _ => {}
        }
    }
    assert!(pong, "the server answers pings");
    assert_eq!(frames.first().map(Vec::as_slice), Some(&b"\x01hi\n"[..]));
    assert_eq!(
        frames.last().map(Vec::as_slice),
        Some(&b"\x03{\"metadata\":{},\"status\":\"Success\"}"[..])
    );
    s.shutdown().await;
}
