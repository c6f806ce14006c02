//! The API reporter against a scripted HTTPS server (rcgen CA, rustls, hyper): the wire
//! calls, the handshake, the 403 fallback, retries, token rotation and TLS verification.
//! The real API-compatible server (crates/node-server) gets its own end-to-end tests.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argoexec_core::template::Outputs;
use argoexec_core::{ExecutorEnv, PodPaths};
use argoexec_report::retry::Backoff;
use argoexec_report::{ApiReporter, InClusterConfig, NodeResult, OutputReporter, ReportError};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    content_type: String,
    auth: String,
    body: Value,
}

type Script = dyn Fn(&Seen, usize) -> (u16, Vec<(&'static str, String)>, String) + Send + Sync;

struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    ca_pem: String,
}

fn status(code: u16, reason: &str, message: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
    .to_string()
}

async fn serve(script: Arc<Script>) -> Server {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, seen, script) = (acceptor.clone(), seen2.clone(), script.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (seen, script) = (seen.clone(), script.clone());
                    async move {
                        let header = |n: &str| {
                            req.headers()
                                .get(n)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("")
                                .to_string()
                        };
                        let (method, path) = (req.method().to_string(), req.uri().path().to_string());
                        let (content_type, auth) = (header("content-type"), header("authorization"));
                        let bytes = req.into_body().collect().await.unwrap().to_bytes();
                        let s = Seen {
                            method,
                            path,
                            content_type,
                            auth,
                            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                        };
                        let n = {
                            let mut v = seen.lock().unwrap();
                            v.push(s.clone());
                            v.len() - 1
                        };
                        let (code, headers, body) = script(&s, n);
                        let mut res = hyper::Response::builder()
                            .status(code)
                            .header("content-type", "application/json");
                        for (k, v) in headers {
                            res = res.header(k, v);
                        }
                        Ok::<_, std::convert::Infallible>(res.body(Full::new(Bytes::from(body))).unwrap())
                    }
                });
                let io = hyper_util::rt::TokioIo::new(tls);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
    Server { addr, seen, ca_pem }
}

fn sa_dir(d: &Path, ca_pem: &str) -> PathBuf {
    let sa = d.join("sa");
    std::fs::create_dir_all(&sa).unwrap();
    std::fs::write(sa.join("token"), "tok-1").unwrap();
    std::fs::write(sa.join("ca.crt"), ca_pem).unwrap();
    std::fs::write(sa.join("namespace"), "argo").unwrap();
    sa
}

const FAST: Backoff = Backoff {
    initial: Duration::from_millis(10),
    factor: 2.0,
    jitter: 0.1,
    steps: 5,
    cap: Duration::from_millis(100),
};

fn reporter(addr: SocketAddr, sa: &Path, extra: &[(&str, &str)]) -> ApiReporter {
    let vars: HashMap<String, String> = [
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1".to_string()),
        ("KUBERNETES_SERVICE_PORT", addr.port().to_string()),
        ("ARGOEXEC_SERVICEACCOUNT_DIR", sa.display().to_string()),
        ("ARGO_POD_NAME", "wf-main-1".to_string()),
        ("ARGO_POD_UID", "pod-uid".to_string()),
        ("ARGO_NODE_ID", "wf-1".to_string()),
        ("ARGO_WORKFLOW_NAME", "wf".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    .collect();
    let get = |k: &str| vars.get(k).cloned();
    let cfg = InClusterConfig::discover(get, &PodPaths::new("/nonexistent"))
        .unwrap()
        .unwrap();
    let env = ExecutorEnv::parse(get).unwrap();
    ApiReporter::connect(&cfg, &env).unwrap().with_backoff(FAST)
}

fn result() -> NodeResult {
    NodeResult {
        outputs: Outputs {
            result: Some("hello".into()),
            exit_code: Some("0".into()),
            ..Default::default()
        },
        message: None,
        progress: Some("1/1".into()),
    }
}

const TR: &str = "/apis/argoproj.io/v1alpha1/namespaces/argo/workflowtaskresults";

#[tokio::test]
async fn handshake_create_then_patch_on_conflict() {
    let server = serve(Arc::new(|s: &Seen, _| match s.method.as_str() {
        "POST" if s.body["outputs"].is_null() => (201, vec![], s.body.to_string()),
        "POST" => (
            409,
            vec![],
            status(
                409,
                "AlreadyExists",
                "workflowtaskresults.argoproj.io \"wf-1\" already exists",
            ),
        ),
        _ => (200, vec![], "{}".into()),
    }))
    .await;
    let d = tempfile::tempdir().unwrap();
    let sa = sa_dir(d.path(), &server.ca_pem);
    let r = reporter(server.addr, &sa, &[("ARGO_WORKFLOW_UID", "wf-uid")]);
    r.start().await.unwrap();
    // The kubelet rotates the token between the two calls.
    std::fs::write(sa.join("token.new"), "tok-2").unwrap();
    std::fs::rename(sa.join("token.new"), sa.join("token")).unwrap();
    r.report(&result()).await.unwrap();

    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        2,
        "start creates, report patches what it created: {seen:#?}"
    );
    let (start, patch) = (&seen[0], &seen[1]);
    assert_eq!((start.method.as_str(), start.path.as_str()), ("POST", TR));
    assert_eq!(start.content_type, "application/json");
    assert_eq!(start.auth, "Bearer tok-1");
    assert_eq!(start.body["kind"], "WorkflowTaskResult");
    assert_eq!(start.body["metadata"]["name"], "wf-1");
    assert_eq!(
        start.body["metadata"]["labels"],
        json!({"workflows.argoproj.io/workflow": "wf", "workflows.argoproj.io/report-outputs-completed": "false"})
    );
    assert_eq!(start.body["metadata"]["ownerReferences"][0]["kind"], "Workflow");
    assert_eq!(patch.auth, "Bearer tok-2", "the rotated token is used at once");
    assert_eq!(
        (patch.method.as_str(), patch.path.as_str()),
        ("PATCH", &*format!("{TR}/wf-1"))
    );
    assert_eq!(patch.content_type, "application/merge-patch+json");
    assert_eq!(patch.body["outputs"], json!({"result": "hello", "exitCode": "0"}));
    assert_eq!(patch.body["progress"], "1/1");
    assert_eq!(
        patch.body["metadata"]["labels"]["workflows.argoproj.io/report-outputs-completed"],
        "true"
    );

    // A reporter that did not write it (e.g. a restarted wait) creates, meets 409, patches.
    let r2 = reporter(server.addr, &sa, &[("ARGO_WORKFLOW_UID", "wf-uid")]);
    r2.report(&result()).await.unwrap();
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:#?}");
    let (create, patch) = (&seen[2], &seen[3]);
    assert_eq!((create.method.as_str(), create.path.as_str()), ("POST", TR));
    assert_eq!(
        create.body["metadata"]["labels"]["workflows.argoproj.io/report-outputs-completed"],
        "true"
    );
    assert_eq!(patch.method, "PATCH");
    assert_eq!(patch.body["outputs"], json!({"result": "hello", "exitCode": "0"}));
}

#[tokio::test]
async fn forbidden_falls_back_to_the_pod_annotation() {
    let server = serve(Arc::new(|s: &Seen, _| {
        if s.path.starts_with(TR) {
            (
                403,
                vec![],
                status(403, "Forbidden", "workflowtaskresults.argoproj.io is forbidden"),
            )
        } else {
            (200, vec![], "{}".into())
        }
    }))
    .await;
    let d = tempfile::tempdir().unwrap();
    // A v3.5 pod: ARGO_TEMPLATE on wait tells the executor its controller reads annotations.
    let r = reporter(
        server.addr,
        &sa_dir(d.path(), &server.ca_pem),
        &[("ARGO_TEMPLATE", "{}")],
    );
    r.start().await.unwrap();
    r.report(&result()).await.unwrap();
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        3,
        "start: one 403, report: one 403 and the pod patch: {seen:#?}"
    );
    assert_eq!(seen[0].body["metadata"]["ownerReferences"][0]["kind"], "Pod");
    let pod = &seen[2];
    assert_eq!(
        (pod.method.as_str(), pod.path.as_str()),
        ("PATCH", "/api/v1/namespaces/argo/pods/wf-main-1")
    );
    assert_eq!(pod.content_type, "application/merge-patch+json");
    let ann = &pod.body["metadata"]["annotations"];
    let outputs: Value =
        serde_json::from_str(ann["workflows.argoproj.io/outputs"].as_str().unwrap()).unwrap();
    assert_eq!(outputs["result"], "hello");
    assert_eq!(ann["workflows.argoproj.io/progress"], "1/1");
}

#[tokio::test]
async fn both_failures_are_named() {
    let server = serve(Arc::new(|s: &Seen, _| {
        if s.path.starts_with(TR) {
            (
                403,
                vec![],
                status(403, "Forbidden", "task results are forbidden"),
            )
        } else {
            (
                403,
                vec![],
                status(403, "Forbidden", "pods \"wf-main-1\" is forbidden"),
            )
        }
    }))
    .await;
    let d = tempfile::tempdir().unwrap();
    let r = reporter(
        server.addr,
        &sa_dir(d.path(), &server.ca_pem),
        &[("ARGOEXEC_ARGO_VERSION", "3.5")],
    );
    let e = r.report(&result()).await.unwrap_err();
    assert!(matches!(e, ReportError::Fallback { .. }), "{e}");
    let s = e.to_string();
    assert!(
        s.contains("workflowtaskresult argo/wf-1: HTTP 403 Forbidden: task results are forbidden"),
        "{s}"
    );
    assert!(
        s.contains("pod argo/wf-main-1: HTTP 403 Forbidden: pods \"wf-main-1\" is forbidden"),
        "{s}"
    );
}

#[tokio::test]
async fn transient_errors_are_retried_permanent_ones_not() {
    let server = serve(Arc::new(|_: &Seen, n| match n {
        0 => (503, vec![], status(503, "ServiceUnavailable", "etcd is sad")),
        1 => (
            429,
            vec![("retry-after", "0".into())],
            status(429, "TooManyRequests", "slow down"),
        ),
        2 => (201, vec![], "{}".into()),
        _ => (422, vec![], status(422, "Invalid", "outputs: Invalid value")),
    }))
    .await;
    let d = tempfile::tempdir().unwrap();
    let r = reporter(server.addr, &sa_dir(d.path(), &server.ca_pem), &[]);
    r.start().await.unwrap();
    assert_eq!(server.seen.lock().unwrap().len(), 3);
    let e = r.report(&result()).await.unwrap_err();
    assert_eq!(e.status_code(), Some(422));
    assert!(
        e.to_string().contains("HTTP 422 Invalid: outputs: Invalid value"),
        "{e}"
    );
    assert_eq!(server.seen.lock().unwrap().len(), 4, "422 is not retried");
}

#[tokio::test]
async fn wrong_ca_is_a_tls_error_and_refused_connections_are_retried() {
    let server = serve(Arc::new(|_: &Seen, _| (201, vec![], "{}".into()))).await;
    let other = {
        let k = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.self_signed(&k).unwrap().pem()
    };
    let d = tempfile::tempdir().unwrap();
    let r = reporter(server.addr, &sa_dir(d.path(), &other), &[]);
    let e = r.start().await.unwrap_err();
    assert!(matches!(e, ReportError::Tls { .. }), "{e}");
    assert!(server.seen.lock().unwrap().is_empty());

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let r = reporter(closed, &sa_dir(d.path(), &server.ca_pem), &[]);
    let t0 = std::time::Instant::now();
    let e = r.report(&result()).await.unwrap_err();
    assert!(matches!(e, ReportError::Transport { .. }), "{e}");
    assert!(
        t0.elapsed() >= Duration::from_millis(70),
        "four waits of the fast backoff"
    );
}

/// v3.6+ pods: no annotation fallback; the 403 names the missing rule.
#[tokio::test]
async fn forbidden_in_a_3_6_pod_names_the_missing_rule() {
    let server = serve(Arc::new(|_: &Seen, _| {
        (
            403,
            vec![],
            status(403, "Forbidden", "workflowtaskresults.argoproj.io is forbidden"),
        )
    }))
    .await;
    let d = tempfile::tempdir().unwrap();
    let r = reporter(
        server.addr,
        &sa_dir(d.path(), &server.ca_pem),
        &[("ARGO_WORKFLOW_UID", "wf-uid")],
    );
    assert_eq!(
        r.version(),
        argoexec_core::ArgoVersion::V3_7,
        "no ARGO_TEMPLATE on wait"
    );
    r.start().await.unwrap();
    let e = r.report(&result()).await.unwrap_err();
    assert!(
        matches!(e, ReportError::MissingRule { verb: "create", .. }),
        "{e}"
    );
    let s = e.to_string();
    assert!(
        s.contains("`create` on `workflowtaskresults.argoproj.io` in namespace \"argo\""),
        "{s}"
    );
    let seen = server.seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|s| s.path.starts_with(TR)),
        "never the pod: {seen:#?}"
    );
}

/// v3.3 pods: one write, no announcement.
#[tokio::test]
async fn a_3_3_pod_writes_once() {
    let server = serve(Arc::new(|s: &Seen, _| (201, vec![], s.body.to_string()))).await;
    let d = tempfile::tempdir().unwrap();
    let r = reporter(
        server.addr,
        &sa_dir(d.path(), &server.ca_pem),
        &[
            ("ARGO_CONTAINER_RUNTIME_EXECUTOR", "k8sapi"),
            ("ARGO_TEMPLATE", "{}"),
        ],
    );
    r.start().await.unwrap();
    r.report(&result()).await.unwrap();
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].method, "POST");
}

/// v3.7+: an API server away for longer than five attempts is waited out.
#[tokio::test]
async fn v3_7_pods_retry_until_the_api_server_is_back() {
    let script = |_: &Seen, n: usize| {
        if n < 12 {
            (
                503,
                vec![],
                status(503, "ServiceUnavailable", "apiserver restarting"),
            )
        } else {
            (201, vec![], "{}".into())
        }
    };
    let server = serve(Arc::new(script)).await;
    let d = tempfile::tempdir().unwrap();
    let sa = sa_dir(d.path(), &server.ca_pem);
    let forever = Backoff {
        steps: u32::MAX,
        ..FAST
    };
    let r = reporter(server.addr, &sa, &[]).with_backoff(forever);
    r.start().await.unwrap();
    assert_eq!(
        server.seen.lock().unwrap().len(),
        13,
        "12 refusals, then the create"
    );
    // The same outage under v3.5's five attempts fails.
    let server = serve(Arc::new(script)).await;
    let r = reporter(
        server.addr,
        &sa_dir(d.path(), &server.ca_pem),
        &[("ARGO_TEMPLATE", "{}")],
    )
    .with_backoff(FAST);
    assert_eq!(r.report(&result()).await.unwrap_err().status_code(), Some(503));
}

/// Progress ticks: a merge patch of `progress` on the task result (v3.6+), the pod's
/// annotation (≤ v3.5).
#[tokio::test]
async fn progress_goes_to_the_task_result_or_the_annotation() {
    let server = serve(Arc::new(|s: &Seen, _| (201, vec![], s.body.to_string()))).await;
    let d = tempfile::tempdir().unwrap();
    let sa = sa_dir(d.path(), &server.ca_pem);
    let r = reporter(server.addr, &sa, &[]);
    r.start().await.unwrap();
    r.progress("3/10").await.unwrap();
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("PATCH", &*format!("{TR}/wf-1"))
    );
    assert_eq!(seen[1].body, json!({"progress": "3/10"}));
    let r = reporter(server.addr, &sa, &[("ARGO_TEMPLATE", "{}")]);
    r.progress("4/10").await.unwrap();
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen[2].path, "/api/v1/namespaces/argo/pods/wf-main-1");
    assert_eq!(
        seen[2].body,
        json!({"metadata": {"annotations": {"workflows.argoproj.io/progress": "4/10"}}})
    );
}
