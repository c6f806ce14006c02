//! `argoexec_data::run` against the project's local node (its API server, started per test;
//! no pods) and moto (S3 with signature checking on): a key-only `artifactPaths` relocated
//! onto the template's archive location, listed with credentials read only from a
//! Secret-volume-like directory, filtered and mapped by expressions; the task result carries
//! `outputs.result` as Go's `json.Marshal` prints it, or the error worded as Argo's; a prefix
//! of more than one S3 listing page (1003 keys). Skipped
//! with ARGOEXEC_SKIP_DOCKER_TESTS=1 (the node server needs Docker to start).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use argoexec_artifacts::{AnyDriver, ArtifactDriver, Settings};
use argoexec_core::template::{ArtifactLocation, Template};
use argoexec_core::{ExecutorEnv, PodPaths};
use argoexec_data::DataError;
use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_report::{ApiReporter, InClusterConfig};
use argoexec_testkit::moto::Moto;
use argoexec_testkit::sweep::Sweep;
use serde_json::{Value, json};

const BUCKET: &str = "data-bucket";

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: data, namespace: default}
rules:
- {apiGroups: ["argoproj.io"], resources: ["workflowtaskresults"], verbs: ["create", "patch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: data, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: data}
subjects: [{kind: ServiceAccount, name: data, namespace: default}]
"#;

fn moto() -> &'static Moto {
    static M: OnceLock<Moto> = OnceLock::new();
    M.get_or_init(|| Moto::start(&[BUCKET]))
}

/// Settings whose secret mount (and nothing else) holds the S3 keys.
fn settings(root: &Path) -> Arc<Settings> {
    let m = moto();
    let s = root.join("argo/secret/repo-creds");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("accesskey"), m.access_key()).unwrap();
    std::fs::write(s.join("secretkey"), m.secret_key()).unwrap();
    Arc::new(Settings {
        paths: PodPaths::new(root),
        ..Settings::default()
    })
}

fn archive() -> Value {
    json!({"s3": {"endpoint": moto().host_port(), "insecure": true, "bucket": BUCKET, "key": "",
                  "accessKeySecret": {"name": "repo-creds", "key": "accesskey"},
                  "secretKeySecret": {"name": "repo-creds", "key": "secretkey"}}})
}

async fn put(settings: &Arc<Settings>, key: &str) {
    let mut loc = archive();
    loc["s3"]["key"] = json!(key);
    let loc: ArtifactLocation = serde_json::from_value(loc).unwrap();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), key).unwrap();
    AnyDriver::for_location(&loc, settings)
        .unwrap()
        .save(f.path())
        .await
        .unwrap();
}

struct Node {
    server: NodeServer,
    dir: tempfile::TempDir,
    _sweep: Sweep,
}

impl Node {
    async fn start(test: &str) -> Self {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let label = format!("data-{test}-{}", std::process::id());
        let sweep = Sweep(label.clone());
        let server = NodeServer::start(ServerConfig {
            node: NodeConfig {
                state_dir: dir.path().join("state"),
                node_label: label,
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .expect("the node server starts (is Docker running? bash scripts/setup.sh)");
        server.rbac().load_str(RBAC, "test").unwrap();
        Self {
            server,
            dir,
            _sweep: sweep,
        }
    }

    fn reporter(&self, node_id: &str) -> ApiReporter {
        let sa = self.dir.path().join("sa");
        std::fs::create_dir_all(&sa).unwrap();
        std::fs::write(sa.join("token"), self.server.issue_token("default", "data", None)).unwrap();
        std::fs::write(sa.join("ca.crt"), self.server.ca_pem()).unwrap();
        std::fs::write(sa.join("namespace"), "default").unwrap();
        let config = InClusterConfig {
            server: self.server.api_url(),
            service_account_dir: sa,
        };
        let env = ExecutorEnv::parse(|k| match k {
            "ARGO_POD_NAME" => Some("wf-data".into()),
            "ARGO_NODE_ID" => Some(node_id.into()),
            "ARGO_WORKFLOW_NAME" => Some("wf".into()),
            "ARGO_NAMESPACE" => Some("default".into()),
            _ => None,
        })
        .unwrap();
        ApiReporter::connect(&config, &env).unwrap()
    }
}

fn template(prefix: &str, steps: &[&str]) -> Template {
    let steps: Vec<Value> = steps.iter().map(|e| json!({"expression": e})).collect();
    serde_json::from_value(json!({
        "name": "list-log-files",
        "archiveLocation": archive(),
        "data": {"source": {"artifactPaths": {"name": "logs", "s3": {"key": prefix}}},
                 "transformation": steps},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_a_prefix_filters_it_and_reports_the_result() {
    if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
        return;
    }
    let n = Node::start("filter").await;
    let root = tempfile::tempdir().unwrap();
    let settings = settings(root.path());
    for key in [
        "runs/wf-a/main.log",
        "runs/wf-a/init.log",
        "runs/wf-b/main.log",
        "runs/wf-b/out.tgz",
        "other/main.log",
    ] {
        put(&settings, key).await;
    }

    let t = template("runs", &["filter(data, {# endsWith \"main.log\"})"]);
    let outputs = argoexec_data::run(&n.reporter("wf-1"), &t, &settings)
        .await
        .unwrap();
    let expected = r#"["runs/wf-a/main.log","runs/wf-b/main.log"]"#;
    assert_eq!(outputs.result.as_deref(), Some(expected));
    let tr = n
        .server
        .get_task_result("default", "wf-1")
        .expect("a task result");
    assert_eq!(tr["outputs"]["result"], expected);
    assert_eq!(
        tr["metadata"]["labels"]["workflows.argoproj.io/report-outputs-completed"],
        "true"
    );

    let t = template(
        "runs",
        &["len(data)", "data > 3 ? {\"big\": true} : {\"big\": false}"],
    );
    let outputs = argoexec_data::run(&n.reporter("wf-2"), &t, &settings)
        .await
        .unwrap();
    assert_eq!(outputs.result.as_deref(), Some(r#"{"big":true}"#));

    let t = template("runs", &["len(data)", "data.nope"]);
    let err = argoexec_data::run(&n.reporter("wf-3"), &t, &settings)
        .await
        .unwrap_err();
    assert!(matches!(err, DataError::Step { index: 1, .. }), "{err:?}");
    let tr = n
        .server
        .get_task_result("default", "wf-3")
        .expect("a task result");
    let message = tr["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("unable to process data template: unable to process data transformation: error processing data step 1"),
        "{tr}"
    );
    assert!(tr["outputs"].get("result").is_none(), "{tr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_more_than_one_page_of_keys() {
    if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
        return;
    }
    use futures::StreamExt;
    let n = Node::start("pages").await;
    let root = tempfile::tempdir().unwrap();
    let settings = settings(root.path());
    // S3 answers at most 1000 keys a page: 1003 need a second page.
    let keys: Vec<String> = (0..1003).map(|i| format!("many/k{i:04}.log")).collect();
    futures::stream::iter(keys.iter().map(|k| put(&settings, k)))
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    let t = template("many", &["len(data)"]);
    let outputs = argoexec_data::run(&n.reporter("wf-many"), &t, &settings)
        .await
        .unwrap();
    assert_eq!(outputs.result.as_deref(), Some("1003"));
    let t = template("many", &["filter(data, {# endsWith \"0.log\"})", "data[-1]"]);
    let outputs = argoexec_data::run(&n.reporter("wf-last"), &t, &settings)
        .await
        .unwrap();
    assert_eq!(outputs.result.as_deref(), Some(r#""many/k1000.log""#));
}
