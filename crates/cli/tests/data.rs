//! `argoexec data '<json>' --loglevel … --log-format … --gloglevel N` as Argo's controller
//! runs it: the JSON argument is ignored (the template comes from `ARGO_TEMPLATE`), the
//! result is reported to the local node's API server as the task result's `outputs.result`;
//! a failing step exits 64 with Argo's wording in the termination log. The API-less case
//! needs nothing; the node case is skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1, as is the
//! image's panic (the image's build aborts on panic: its hook reports it).

use std::path::Path;
use std::process::{Command, Output};

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use serde_json::json;

mod run_support;

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

/// The image's `argoexec` (built with `panic = "abort"`: the `quick` and `dist` profiles)
/// meets expr-lang 2.1.0's known panic: the hook writes the panic and the expression to the
/// termination log, and the step exits 64, as Argo's executor does with a panic.
#[test]
fn the_images_executor_reports_a_panic_and_exits_64() {
    if !run_support::docker_available() || run_support::on_containerd() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(dir.path().join("files/a.csv"), "x").unwrap();
    // A service account for an API server that is never reached: the panic comes first.
    std::fs::create_dir_all(dir.path().join("sa")).unwrap();
    std::fs::write(dir.path().join("sa/token"), "unused").unwrap();
    std::fs::write(dir.path().join("sa/namespace"), "default").unwrap();
    let pki =
        argoexec_node_server::pki::Pki::generate("unused", argoexec_node_server::KubeletCert::default())
            .unwrap();
    std::fs::write(dir.path().join("sa/ca.crt"), pki.ca_pem()).unwrap();
    let program = r#"{"n": len(data)}"#;
    let tmpl = json!({"name": "list", "data": {
        "source": {"artifactPaths": {"name": "files", "local": {"path": "/files"}}},
        "transformation": [{"expression": program}]}});
    let mount = |host: &str, at: &str| format!("{}:{at}", dir.path().join(host).display());
    let out = Command::new(run_support::docker())
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            &mount("files", "/files"),
            "-v",
        ])
        .arg(mount("pod", "/pod"))
        .args(["-v", &mount("sa", "/sa"), "-e", "ARGOEXEC_SERVICEACCOUNT_DIR=/sa"])
        .args([
            "-e",
            "KUBERNETES_SERVICE_HOST=127.0.0.1",
            "-e",
            "KUBERNETES_SERVICE_PORT=1",
        ])
        .args(["-e", "ARGOEXEC_PATH_ROOT=/pod", "-e", "ARGO_POD_NAME=wf-data"])
        .args(["-e", "ARGO_NODE_ID=wf-data", "-e", "ARGO_WORKFLOW_NAME=wf", "-e"])
        .arg(format!("ARGO_TEMPLATE={tmpl}"))
        .args(["argoexec:dev", "data", DECOY, "--loglevel", "info"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    let log = std::fs::read_to_string(dir.path().join("pod/dev/termination-log")).unwrap_or_default();
    assert!(log.starts_with("executor panic: "), "{log}\n{stderr}");
    assert!(
        log.contains(r#" while evaluating the expression "{\"n\": len(data)}""#),
        "{log}"
    );
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
