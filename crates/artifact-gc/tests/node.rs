//! `argoexec_artifact_gc::run` against the project's local node (its API server, started
//! per test; no pods) and moto (S3 with signature checking on): a run's outputs deleted with
//! the status per artifact written on the status subresource, a missing object, a delete
//! refused by S3 (wrong credentials: 403) while the others go, a task of another GC pod left
//! alone, the least role (list + patch status) sufficient and a missing status-patch rule a
//! whole-step failure. Credentials come only from a Secret-volume-like directory
//! (`<root>/argo/secret/<name>/<key>`). Skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1 (the node
//! server needs Docker to start).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use argoexec_artifact_gc::{GcError, Options, Summary, task_resource};
use argoexec_artifacts::{AnyDriver, ArtifactDriver, Settings};
use argoexec_core::PodPaths;
use argoexec_core::template::ArtifactLocation;
use argoexec_kube::InClusterConfig;
use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::moto::Moto;
use argoexec_testkit::sweep::Sweep;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

const BUCKET: &str = "gc-bucket";

/// deploy/rbac/artifact-gc.yaml's rules, plus a role without the status patch.
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
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: list-only, namespace: default}
rules:
- {apiGroups: [argoproj.io], resources: [workflowartifactgctasks], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: list-only, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: list-only}
subjects: [{kind: ServiceAccount, name: lister, namespace: default}]
"#;

fn skip() -> bool {
    std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some()
}

fn moto() -> &'static Moto {
    static M: OnceLock<Moto> = OnceLock::new();
    M.get_or_init(|| Moto::start(&[BUCKET]))
}

struct Node {
    server: NodeServer,
    dir: tempfile::TempDir,
    _sweep: Sweep,
}

async fn node(test: &str) -> Node {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let label = format!("artifact-gc-{test}-{}", std::process::id());
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
    Node {
        server,
        dir,
        _sweep: sweep,
    }
}

impl Node {
    fn client(&self, who: &str, token: String) -> kube::Client {
        let sa = self.dir.path().join(format!("sa-{who}"));
        std::fs::create_dir_all(&sa).unwrap();
        std::fs::write(sa.join("token"), token).unwrap();
        std::fs::write(sa.join("ca.crt"), self.server.ca_pem()).unwrap();
        std::fs::write(sa.join("namespace"), "default").unwrap();
        let config = InClusterConfig {
            server: self.server.api_url(),
            service_account_dir: sa,
        };
        config.connect().unwrap().0
    }

    fn sa(&self, name: &str) -> kube::Client {
        self.client(name, self.server.issue_token("default", name, None))
    }

    fn tasks(&self) -> Api<DynamicObject> {
        let admin = self.client("admin", self.server.admin_token().to_string());
        Api::namespaced_with(admin, "default", &task_resource())
    }

    async fn create_task(&self, name: &str, label: &str, spec: Value) {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "WorkflowArtifactGCTask",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"workflows.argoproj.io/artifact-gc-pod": label}},
            "spec": spec,
        }))
        .unwrap();
        self.tasks().create(&PostParams::default(), &obj).await.unwrap();
    }

    async fn task(&self, name: &str) -> Value {
        serde_json::to_value(self.tasks().get(name).await.unwrap()).unwrap()
    }
}

/// A pod root whose secret mount holds good (`moto`) and wrong (`stale`) S3 keys.
fn pod_root(dir: &Path) -> Arc<Settings> {
    let m = moto();
    for (name, secret) in [("moto", m.secret_key()), ("stale", "not-the-secret")] {
        let s = dir.join("argo/secret").join(name);
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(s.join("accessKey"), m.access_key()).unwrap();
        std::fs::write(s.join("secretKey"), secret).unwrap();
    }
    Arc::new(Settings {
        paths: PodPaths::new(dir),
        ..Settings::default()
    })
}

fn s3(key: &str, secret: &str) -> Value {
    json!({"s3": {
        "endpoint": moto().host_port(), "insecure": true, "bucket": BUCKET, "key": key,
        "accessKeySecret": {"name": secret, "key": "accessKey"},
        "secretKeySecret": {"name": secret, "key": "secretKey"},
    }})
}

fn driver(settings: &Arc<Settings>, key: &str) -> AnyDriver {
    let loc: ArtifactLocation = serde_json::from_value(s3(key, "moto")).unwrap();
    AnyDriver::for_location(&loc, settings).unwrap()
}

async fn put(settings: &Arc<Settings>, key: &str) {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), key).unwrap();
    driver(settings, key).save(f.path()).await.unwrap();
}

async fn exists(settings: &Arc<Settings>, key: &str) -> bool {
    driver(settings, key).exists().await.unwrap()
}

fn options(settings: Arc<Settings>, label: &str) -> Options {
    Options {
        namespace: "default".into(),
        label: label.into(),
        settings,
        parallelism: 4,
        plugin_sidecars: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_a_runs_outputs_and_writes_each_artifacts_result() {
    if skip() {
        return;
    }
    let n = node("outputs").await;
    let root = tempfile::tempdir().unwrap();
    let settings = pod_root(root.path());
    let p = "gc1";
    for key in [
        "n1/main.log",
        "n1/out.tgz",
        "n1/dir/a.txt",
        "n1/dir/b/c.txt",
        "n2/guarded.tgz",
        "other/keep.tgz",
    ] {
        put(&settings, &format!("{p}/{key}")).await;
    }
    let local = root.path().join("local-out.txt");
    std::fs::write(&local, "x").unwrap();
    let archive = s3("", "moto");
    let key_only = |k: &str| json!({"s3": {"key": format!("{p}/{k}")}});
    let mut guarded = s3(&format!("{p}/n2/guarded.tgz"), "stale");
    guarded["name"] = json!("guarded");
    let spec = json!({"artifactsByNode": {
        "wf-1": {"archiveLocation": archive, "artifacts": {
            "main-logs": {"name": "main-logs", "s3": key_only("n1/main.log")["s3"]},
            "out": {"name": "out", "s3": key_only("n1/out.tgz")["s3"]},
            "dir": {"name": "dir", "s3": key_only("n1/dir")["s3"]},
            "local": {"name": "local", "local": {"path": local}},
        }},
        "wf-2": {"archiveLocation": archive, "artifacts": {
            "gone": {"name": "gone", "s3": key_only("n2/never-written.tgz")["s3"]},
            "guarded": guarded,
        }},
    }});
    n.create_task("wf-artgc-wfcomp-1-0", "111", spec).await;
    let other = json!({"artifactsByNode": {"wf-9": {"archiveLocation": archive, "artifacts": {
        "keep": {"name": "keep", "s3": key_only("other/keep.tgz")["s3"]}}}}});
    n.create_task("wf-artgc-wfdel-2-0", "222", other).await;

    let summary = argoexec_artifact_gc::run(&n.sa("gc"), &options(settings.clone(), "111"))
        .await
        .unwrap();
    assert_eq!(
        summary,
        Summary {
            tasks: 1,
            deleted: 5,
            failed: 1
        }
    );
    for key in ["n1/main.log", "n1/out.tgz", "n1/dir/a.txt", "n1/dir/b/c.txt"] {
        assert!(!exists(&settings, &format!("{p}/{key}")).await, "{key} deleted");
    }
    assert!(!local.exists(), "the local artifact is deleted");
    assert!(
        exists(&settings, &format!("{p}/n2/guarded.tgz")).await,
        "the refused delete left the object"
    );
    assert!(
        exists(&settings, &format!("{p}/other/keep.tgz")).await,
        "another GC pod's task is not ours"
    );

    let t = n.task("wf-artgc-wfcomp-1-0").await;
    let by_node = &t["status"]["artifactResultsByNode"];
    for (node, name) in [
        ("wf-1", "main-logs"),
        ("wf-1", "out"),
        ("wf-1", "dir"),
        ("wf-1", "local"),
        ("wf-2", "gone"),
    ] {
        assert_eq!(
            by_node[node]["artifactResults"][name],
            json!({"name": name, "success": true}),
            "{node}/{name}"
        );
    }
    let refused = &by_node["wf-2"]["artifactResults"]["guarded"];
    assert_eq!(refused["name"], "guarded");
    assert!(
        refused.get("success").is_none(),
        "success omitted when false, as Argo's omitempty"
    );
    let text = refused["error"].as_str().unwrap();
    assert!(
        text.contains("access denied") && text.contains("guarded.tgz"),
        "{text}"
    );
    assert!(
        !text.contains("not-the-secret"),
        "no secret in the status: {text}"
    );
    assert!(
        n.task("wf-artgc-wfdel-2-0")
            .await
            .get("status")
            .is_none_or(|s| s.as_object().is_none_or(|m| m.is_empty()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_refusals_fail_the_whole_step() {
    if skip() {
        return;
    }
    let n = node("rbac").await;
    let root = tempfile::tempdir().unwrap();
    let settings = pod_root(root.path());
    put(&settings, "gc2/n1/out.tgz").await;
    let spec = json!({"artifactsByNode": {"wf-1": {"artifacts": {
        "out": {"name": "out", "s3": s3("gc2/n1/out.tgz", "moto")["s3"]}}}}});
    n.create_task("wf-artgc-wfcomp-3-0", "333", spec).await;

    let err = argoexec_artifact_gc::run(&n.sa("nobody"), &options(settings.clone(), "333"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GcError::List { source: kube::Error::Api(s), .. } if s.code == 403),
        "{err:?}"
    );
    assert!(
        exists(&settings, "gc2/n1/out.tgz").await,
        "nothing deleted without the list"
    );

    let err = argoexec_artifact_gc::run(&n.sa("lister"), &options(settings.clone(), "333"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GcError::Patch { source: kube::Error::Api(s), .. } if s.code == 403),
        "{err:?}"
    );
    assert!(err.to_string().contains("wf-artgc-wfcomp-3-0"), "{err}");
}
