//! `argoexec data '<json>' --loglevel … --log-format … --gloglevel N` as Argo's controller
//! runs it: the JSON argument is ignored (the template comes from `ARGO_TEMPLATE`), the
//! result is reported to the local node's API server as the task result's `outputs.result`;
//! a failing step exits 64 with Argo's wording in the termination log. The API-less case
//! needs nothing; the node case is skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1.

use std::path::Path;
use std::process::{Command, Output};

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use serde_json::json;

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

/// What the controller passes: a `template.data` that is NOT the one to run.
const DECOY: &str = r#"{"source":{"artifactPaths":{"name":"x","s3":{"bucket":"elsewhere"}}},"transformation":[{"expression":"len(data)"}]}"#;

fn data(root: &Path, template: &str, env: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_argoexec"));
    c.args([
        "data",
        DECOY,
        "--loglevel",
        "info",
        "--log-format",
        "text",
        "--gloglevel",
        "0",
    ])
    .env_clear()
    .env("ARGOEXEC_PATH_ROOT", root)
    .env("ARGO_POD_NAME", "wf-data")
    .env("ARGO_NODE_ID", "wf-data")
    .env("ARGO_WORKFLOW_NAME", "wf")
    .env("ARGO_TEMPLATE", template);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn template(dir: &Path, expression: &str) -> String {
    json!({"name": "list", "data": {
        "source": {"artifactPaths": {"name": "files", "local": {"path": dir}}},
        "transformation": [{"expression": expression}]}})
    .to_string()
}

#[test]
fn without_the_api_server_exits_64() {
    let root = tempfile::tempdir().unwrap();
    let out = data(root.path(), &template(root.path(), "data"), &[]);
    assert_eq!(
        out.status.code(),
        Some(64),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(root.path().join("dev/termination-log")).unwrap();
    assert!(log.contains("report through the API server"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_the_result_of_the_template_not_of_the_argument() {
    if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
        return;
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let label = format!("cli-data-{}", std::process::id());
    let _sweep = Sweep(label.clone());
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
    let sa = dir.path().join("sa");
    std::fs::create_dir_all(&sa).unwrap();
    std::fs::write(sa.join("token"), server.issue_token("default", "data", None)).unwrap();
    std::fs::write(sa.join("ca.crt"), server.ca_pem()).unwrap();
    std::fs::write(sa.join("namespace"), "default").unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    for f in ["a.csv", "b.csv", "c.txt"] {
        std::fs::write(files.join(f), "x").unwrap();
    }
    let env = [
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1".to_string()),
        ("KUBERNETES_SERVICE_PORT", server.api_port().to_string()),
        ("ARGOEXEC_SERVICEACCOUNT_DIR", sa.display().to_string()),
    ];
    let root = dir.path().join("pod");
    let program = "map(filter(data, {# endsWith \".csv\"}), {# + \" & more\"})";
    let out = data(&root, &template(&files, program), &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tr = server
        .get_task_result("default", "wf-data")
        .expect("a task result");
    let f = files.display();
    assert_eq!(
        tr["outputs"]["result"],
        format!(r#"["{f}/a.csv \u0026 more","{f}/b.csv \u0026 more"]"#),
        "Go's json.Marshal escapes &"
    );

    let out = data(&root, &template(&files, "data +"), &env);
    assert_eq!(out.status.code(), Some(64));
    let log = std::fs::read_to_string(root.join("dev/termination-log")).unwrap();
    assert!(
        log.starts_with("unable to process data template: unable to process data transformation: error processing data step 0"),
        "{log}"
    );
}
