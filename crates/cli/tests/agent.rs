//! `argoexec agent init|main` as Argo's agent pod runs them (`agent init|main --loglevel …
//! --log-format … --gloglevel N`, the controller's environment): tokens written per plugin
//! container, `null` plugins, a missing variable an exit 64 with the termination message,
//! and `agent main` against the local node's API server under the deploy kit's agent role,
//! ending 0 when the task set is labelled completed. The node test is skipped with
//! ARGOEXEC_SKIP_DOCKER_TESTS=1.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use argoexec_testkit::web::WebServer;
use futures::TryStreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

const FLAGS: [&str; 6] = ["--loglevel", "info", "--log-format", "text", "--gloglevel", "0"];

fn command(root: &Path, action: &str, env: &[(&str, String)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_argoexec"));
    c.args([&["agent", action][..], &FLAGS].concat())
        .env_clear()
        .env("ARGOEXEC_PATH_ROOT", root);
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn run(root: &Path, action: &str, env: &[(&str, String)]) -> Output {
    command(root, action, env).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn init_writes_a_token_per_plugin_container() {
    let root = tempfile::tempdir().unwrap();
    let names = r#"["hello-executor-plugin","other-executor-plugin"]"#;
    let out = run(root.path(), "init", &[("ARGO_PLUGIN_NAMES", names.into())]);
    assert!(out.status.success(), "{}", stderr(&out));
    for n in ["hello-executor-plugin", "other-executor-plugin"] {
        let t = std::fs::read_to_string(root.path().join("var/run/argo").join(n).join("token")).unwrap();
        assert_eq!(t.len(), 32, "{t}");
    }
    let out = run(root.path(), "init", &[("ARGO_PLUGIN_NAMES", "null".into())]);
    assert!(out.status.success(), "no plugins: {}", stderr(&out));
}

#[test]
fn missing_variables_exit_64_with_a_termination_message() {
    let root = tempfile::tempdir().unwrap();
    let out = run(root.path(), "init", &[]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    let log = std::fs::read_to_string(root.path().join("dev/termination-log")).unwrap();
    assert!(log.contains("ARGO_PLUGIN_NAMES is not set"), "{log}");
    let out = run(root.path(), "main", &[]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the agent needs the API server"),
        "{}",
        stderr(&out)
    );
}

fn sa_dir(dir: &Path, name: &str, token: &str, ca: &str) -> std::path::PathBuf {
    let sa = dir.join(name);
    std::fs::create_dir_all(&sa).unwrap();
    std::fs::write(sa.join("token"), token).unwrap();
    std::fs::write(sa.join("ca.crt"), ca).unwrap();
    std::fs::write(sa.join("namespace"), "default").unwrap();
    sa
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_runs_the_task_set_and_ends_0_when_it_completes() {
    if std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some() {
        return;
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let label = format!("cli-agent-{}", std::process::id());
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
    let kit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/rbac/agent.yaml"
    ))
    .unwrap();
    let kit = kit
        .replace(
            "  name: argoexec-agent\n",
            "  name: argoexec-agent\n  namespace: default\n",
        )
        .replace(
            "{kind: ServiceAccount, name: default}",
            "{kind: ServiceAccount, name: default, namespace: default}",
        );
    server.rbac().load_str(&kit, "deploy/rbac/agent.yaml").unwrap();
    let admin_sa = sa_dir(dir.path(), "admin", server.admin_token(), &server.ca_pem());
    let agent_sa = sa_dir(
        dir.path(),
        "agent",
        &server.issue_token("default", "default", None),
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
        kind: "WorkflowTaskSet".into(),
        plural: "workflowtasksets".into(),
    };
    let sets: Api<DynamicObject> = Api::namespaced_with(admin, "default", &ar);
    let web = WebServer::http();
    let set: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskSet",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {"tasks": {"hello-1": {"name": "call", "http": {"url": format!("{}/status/201", web.url())}}}},
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let env = [
        ("ARGO_WORKFLOW_NAME", "hello".to_string()),
        ("ARGO_WORKFLOW_UID", "uid-1".into()),
        ("ARGO_PLUGIN_NAMES", "null".into()),
        ("ARGO_PLUGIN_ADDRESSES", "null".into()),
        ("ARGO_AGENT_PATCH_RATE", "100ms".into()),
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1".into()),
        ("KUBERNETES_SERVICE_PORT", server.api_port().to_string()),
        ("ARGOEXEC_SERVICEACCOUNT_DIR", agent_sa.display().to_string()),
    ];
    let root = dir.path().join("pod");
    // Killed when the test ends however it ends, so a regression leaves no agent behind.
    let child = tokio::process::Command::from(command(&root, "main", &env))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let wp = WatchParams::default().fields("metadata.name=hello");
    let done = async {
        let mut stream = Box::pin(sets.watch(&wp, "0").await.unwrap());
        while let Some(ev) = stream.try_next().await.unwrap() {
            if let WatchEvent::Added(o) | WatchEvent::Modified(o) = ev {
                let v = serde_json::to_value(&o).unwrap();
                if v.pointer("/status/nodes/hello-1").is_some() {
                    return v;
                }
            }
        }
        panic!("the watch ended");
    };
    let v: Value = tokio::time::timeout(Duration::from_secs(60), done)
        .await
        .expect("a result within 60 s");
    let node = &v["status"]["nodes"]["hello-1"];
    assert_eq!(node["phase"], "Succeeded", "{node}");
    assert_eq!(node["outputs"]["result"], "status 201");
    let label = Patch::Merge(json!({"metadata": {"labels": {"workflows.argoproj.io/completed": "true"}}}));
    sets.patch("hello", &PatchParams::default(), &label)
        .await
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the agent ends within 30 s of the completed label")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
