//! `argoexec artifact delete` as Argo's GC pod runs it (`artifact delete --loglevel …
//! --log-format … --gloglevel N`, `ARGO_ARTIFACT_POD_NAME`, `ARGO_TEMPLATE={}`): argument
//! handling without an API server, and one run against the local node's API server with the
//! local driver (a deleted file, a plugin artifact that fails alone, exit 0 because the
//! outcome is in the task's status). The manual `artifact put|get|ls|rm LOCATION` forms keep
//! their arguments. The node test is skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1.

use std::path::Path;
use std::process::{Command, Output};

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::json;

const FLAGS: [&str; 6] = ["--loglevel", "info", "--log-format", "text", "--gloglevel", "0"];

fn argoexec(root: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_argoexec"));
    c.args(args)
        .env_clear()
        .env("ARGOEXEC_PATH_ROOT", root)
        .env("ARGO_POD_NAME", "wf-artgc-wfcomp-1")
        .env("ARGO_TEMPLATE", "{}");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn delete_without_the_api_server_exits_64_with_a_termination_message() {
    let root = tempfile::tempdir().unwrap();
    let args = [&["artifact", "delete"][..], &FLAGS].concat();
    let out = argoexec(root.path(), &args, &[("ARGO_ARTIFACT_POD_NAME", "123".into())]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    let log = std::fs::read_to_string(root.path().join("dev/termination-log")).unwrap();
    assert!(log.contains("artifact delete needs the API server"), "{log}");
}

#[test]
fn delete_takes_no_location_and_the_manual_forms_still_need_one() {
    let root = tempfile::tempdir().unwrap();
    let out = argoexec(root.path(), &["artifact", "delete", "{local: {path: /x}}"], &[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(stderr(&out).contains("takes no LOCATION"), "{}", stderr(&out));

    let out = argoexec(root.path(), &["artifact", "rm"], &[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(stderr(&out).contains("LOCATION is required"), "{}", stderr(&out));

    let repo = root.path().join("repo");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join("sub/f.txt"), "x").unwrap();
    let loc = format!("{{local: {{path: {}}}}}", repo.display());
    let out = argoexec(root.path(), &["artifact", "ls", &loc], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sub/f.txt\n");
}

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gc, namespace: default}
rules:
- {apiGroups: [argoproj.io], resources: [workflowartifactgctasks], verbs: [list, watch]}
- {apiGroups: [argoproj.io], resources: [workflowartifactgctasks/status], verbs: [patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: gc, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gc}
subjects: [{kind: ServiceAccount, name: gc, namespace: default}]
"#;

fn sa_dir(dir: &Path, name: &str, token: &str, ca: &str) -> std::path::PathBuf {
    let sa = dir.join(name);
    std::fs::create_dir_all(&sa).unwrap();
    std::fs::write(sa.join("token"), token).unwrap();
    std::fs::write(sa.join("ca.crt"), ca).unwrap();
    std::fs::write(sa.join("namespace"), "default").unwrap();
    sa
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_against_the_node_writes_the_status_and_exits_0_with_a_failed_artifact() {
    if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
        return;
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let label = format!("cli-artifact-gc-{}", std::process::id());
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
    let admin_sa = sa_dir(dir.path(), "admin", server.admin_token(), &server.ca_pem());
    let gc_sa = sa_dir(
        dir.path(),
        "gc",
        &server.issue_token("default", "gc", None),
        &server.ca_pem(),
    );
    let admin = argoexec_report::InClusterConfig {
        server: server.api_url(),
        service_account_dir: admin_sa,
    }
    .connect()
    .unwrap()
    .0;
    let ar = ApiResource {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        api_version: "argoproj.io/v1alpha1".into(),
        kind: "WorkflowArtifactGCTask".into(),
        plural: "workflowartifactgctasks".into(),
    };
    let tasks: Api<DynamicObject> = Api::namespaced_with(admin, "default", &ar);
    let file = dir.path().join("out.txt");
    std::fs::write(&file, "x").unwrap();
    let task: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowArtifactGCTask",
        "metadata": {"name": "wf-artgc-wfcomp-1-0", "namespace": "default",
                     "labels": {"workflows.argoproj.io/artifact-gc-pod": "4242"}},
        "spec": {"artifactsByNode": {"wf-1": {"artifacts": {
            "out": {"name": "out", "local": {"path": file}},
            "p": {"name": "p", "plugin": {"name": "my-plugin", "configuration": "{}", "key": "k"}},
        }}}},
    }))
    .unwrap();
    tasks.create(&PostParams::default(), &task).await.unwrap();

    let args = [&["artifact", "delete"][..], &FLAGS].concat();
    let env = [
        ("ARGO_ARTIFACT_POD_NAME", "4242".to_string()),
        // As every v4 GC pod: the plugin sidecars (none here).
        ("ARGO_ARTIFACT_PLUGIN_NAMES", String::new()),
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1".into()),
        ("KUBERNETES_SERVICE_PORT", server.api_port().to_string()),
        ("ARGOEXEC_SERVICEACCOUNT_DIR", gc_sa.display().to_string()),
    ];
    let root = dir.path().join("pod");
    let out = argoexec(&root, &args, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!file.exists(), "the local artifact is deleted");
    let got = serde_json::to_value(tasks.get("wf-artgc-wfcomp-1-0").await.unwrap()).unwrap();
    let results = &got["status"]["artifactResultsByNode"]["wf-1"]["artifactResults"];
    assert_eq!(results["out"], json!({"name": "out", "success": true}));
    let err = results["p"]["error"].as_str().unwrap();
    assert!(err.contains("my-plugin") && err.contains("no sidecar"), "{err}");
    assert!(
        !root.join("dev/termination-log").exists(),
        "no termination message on success"
    );
}
