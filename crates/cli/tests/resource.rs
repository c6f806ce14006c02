//! `argoexec resource ACTION` as Argo's controller runs it (`--loglevel … --log-format …
//! --gloglevel …`), against the local node's API server: the template from `ARGO_TEMPLATE`,
//! the API server from `KUBERNETES_SERVICE_HOST/PORT` and a service-account directory, the
//! manifest staged at `ARGOEXEC_RESOURCE_MANIFEST`; exit 0 and the task result's outputs on
//! success, exit 64 and the termination log on failure. Skipped with
//! ARGOEXEC_SKIP_DOCKER_TESTS=1 (the node server needs Docker to start).

use std::process::Command;

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use serde_json::json;

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: step, namespace: default}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "watch", "create"]}
- {apiGroups: ["argoproj.io"], resources: ["workflowtaskresults"], verbs: ["create", "patch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: step, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: step}
subjects: [{kind: ServiceAccount, name: step, namespace: default}]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_create_reports_outputs_and_failures_exit_64() {
    if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
        return;
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let label = format!("cli-resource-{}", std::process::id());
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
    std::fs::write(sa.join("token"), server.issue_token("default", "step", None)).unwrap();
    std::fs::write(sa.join("ca.crt"), server.ca_pem()).unwrap();
    std::fs::write(sa.join("namespace"), "default").unwrap();
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-cli}\ndata: {k: v}\n";
    let template = |condition: &str| {
        json!({"name": "r", "resource": {"action": "create", "manifest": manifest, "failureCondition": condition},
               "outputs": {"parameters": [{"name": "k", "valueFrom": {"jsonPath": "{.data.k}"}}]}})
        .to_string()
    };
    let run = |node: &str, template: String| {
        Command::new(env!("CARGO_BIN_EXE_argoexec"))
            .args([
                "resource",
                "create",
                "--loglevel",
                "info",
                "--log-format",
                "text",
                "--gloglevel",
                "0",
            ])
            .env_clear()
            .env("ARGOEXEC_PATH_ROOT", dir.path().join(node))
            .env("ARGO_POD_NAME", "wf-pod")
            .env("ARGO_NODE_ID", node)
            .env("ARGO_WORKFLOW_NAME", "wf")
            .env("ARGO_TEMPLATE", template)
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", server.api_port().to_string())
            .env("ARGOEXEC_SERVICEACCOUNT_DIR", &sa)
            .env(
                "ARGOEXEC_RESOURCE_MANIFEST",
                dir.path().join(format!("{node}.yaml")),
            )
            .output()
            .unwrap()
    };
    let out = run("n1", template(""));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("n1.yaml")).unwrap(),
        manifest,
        "staged"
    );
    let tr = server.get_task_result("default", "n1").expect("a task result");
    assert_eq!(tr["outputs"]["parameters"][0]["value"], "v");
    assert_eq!(
        tr["metadata"]["labels"]["workflows.argoproj.io/report-outputs-completed"],
        "true"
    );

    // A failure condition that matches at once: exit 64, the message in the termination log.
    let out = run("n2", template("data.k == v").replace("from-cli", "second"));
    assert_eq!(
        out.status.code(),
        Some(64),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(dir.path().join("n2/dev/termination-log")).unwrap();
    assert_eq!(log, "failure condition 'data.k==v' evaluated true");
}
