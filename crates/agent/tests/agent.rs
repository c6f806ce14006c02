//! `argoexec_agent::run` against the project's local node (its API server; no pods) and a
//! local HTTP server with executor-plugin routes, under exactly the deploy kit's agent role
//! (`deploy/rbac/agent.yaml`): every task of a task set run once and its result patched on
//! the status subresource (HTTP success with a header from a Secret, failure by status,
//! plugins offered in order with a decline passed over, a task of no known kind), a task
//! added later picked up from the watch (a plugin's 404 remembered), the completed label ending the
//! agent; deletion ending it; nodes with a final result not run again; a missing rule an
//! error naming the call. Skipped with ARGOEXEC_SKIP_DOCKER_TESTS=1 (the node server needs
//! Docker to start).

use std::sync::Arc;
use std::time::Duration;

use argoexec_agent::config::{AgentConfig, PluginEndpoint};
use argoexec_agent::patch::Stats;
use argoexec_agent::{AgentError, Stop, agent::task_set_resource};
use argoexec_kube::InClusterConfig;
use argoexec_node::NodeConfig;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::sweep::Sweep;
use argoexec_testkit::web::WebServer;
use futures::TryStreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

fn skip() -> bool {
    std::env::var_os("ARGOEXEC_SKIP_DOCKER_TESTS").is_some()
}

struct Node {
    server: NodeServer,
    dir: tempfile::TempDir,
    _sweep: Sweep,
}

async fn node(test: &str) -> Node {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let label = format!("agent-{test}-{}", std::process::id());
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

    fn admin(&self) -> kube::Client {
        self.client("admin", self.server.admin_token().to_string())
    }

    /// The agent's client: service account `default`, bound to the kit's role.
    fn agent(&self, sa: &str) -> kube::Client {
        self.client(sa, self.server.issue_token("default", sa, None))
    }

    fn sets(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.admin(), "default", &task_set_resource())
    }

    async fn create_set(&self, name: &str, tasks: Value) {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"tasks": tasks},
        }))
        .unwrap();
        self.sets().create(&PostParams::default(), &obj).await.unwrap();
    }

    /// The set once `done` holds for it, from a watch (its first event is the current state).
    async fn wait_for(&self, name: &str, done: impl Fn(&Value) -> bool) -> Value {
        let api = self.sets();
        let wp = WatchParams::default().fields(&format!("metadata.name={name}"));
        let watch = async {
            let mut stream = Box::pin(api.watch(&wp, "0").await.unwrap());
            while let Some(ev) = stream.try_next().await.unwrap() {
                if let WatchEvent::Added(o) | WatchEvent::Modified(o) = ev {
                    let v = serde_json::to_value(&o).unwrap();
                    if done(&v) {
                        return v;
                    }
                }
            }
            panic!("the watch of {name} ended");
        };
        tokio::time::timeout(Duration::from_secs(60), watch)
            .await
            .unwrap_or_else(|_| panic!("{name}: not done within 60 s"))
    }
}

fn config(wf: &str, plugins: Vec<PluginEndpoint>) -> AgentConfig {
    AgentConfig {
        workflow_name: wf.into(),
        workflow_uid: "uid-1".into(),
        namespace: "default".into(),
        workers: 4,
        patch_rate: Duration::from_millis(100),
        plugins,
        max_body: 1 << 20,
        ca_dir: "/nonexistent".into(),
    }
}

fn plugin(web: &WebServer, behaviour: &str) -> PluginEndpoint {
    PluginEndpoint {
        name: format!("{behaviour}-executor-plugin"),
        address: format!("{}/plugin/{behaviour}", web.url()),
        token: format!("t-{behaviour}"),
    }
}

fn nodes(v: &Value) -> usize {
    v.pointer("/status/nodes")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

fn node_of<'a>(v: &'a Value, id: &str) -> &'a Value {
    &v["status"]["nodes"][id]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_runs_once_and_the_completed_label_ends_the_agent() {
    if skip() {
        return;
    }
    let n = node("once").await;
    let web = WebServer::http();
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "hdr"},
        "stringData": {"token": "Bearer s3cret"}}))
    .unwrap();
    Api::<Secret>::namespaced(n.admin(), "default")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let echo = format!("{}/echo", web.url());
    n.create_set(
        "wf1",
        json!({
            "wf1-1": {"name": "call", "http": {"url": echo, "headers": [
                {"name": "Authorization", "valueFrom": {"secretKeyRef": {"name": "hdr", "key": "token"}}},
                {"name": "X-A", "value": "1"}]}},
            "wf1-2": {"name": "missing", "http": {"url": format!("{}/status/404", web.url())}},
            "wf1-3": {"name": "p1", "plugin": {"hello": {}}},
            "wf1-4": {"name": "p2", "plugin": {"hello": {}}},
            "wf1-5": {"name": "odd"},
        }),
    )
    .await;
    let plugins = vec![
        plugin(&web, "gone"),
        plugin(&web, "decline"),
        plugin(&web, "mine"),
    ];
    let stats = Arc::new(Stats::default());
    let cfg = config("wf1", plugins);
    let agent = tokio::spawn({
        let (client, stats) = (n.agent("default"), stats.clone());
        async move { argoexec_agent::run(client, &cfg, stats, std::future::pending()).await }
    });
    let v = n.wait_for("wf1", |v| nodes(v) == 5).await;
    let call = node_of(&v, "wf1-1");
    assert_eq!(call["phase"], "Succeeded", "{call}");
    let echoed: Value = serde_json::from_str(call["outputs"]["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        echoed["headers"]["authorization"], "Bearer s3cret",
        "the Secret's value"
    );
    assert_eq!(echoed["headers"]["x-a"], "1");
    let missing = node_of(&v, "wf1-2");
    assert_eq!(missing["phase"], "Failed");
    assert_eq!(missing["message"], "received non-2xx response code: 404");
    for (id, tmpl) in [("wf1-3", "p1"), ("wf1-4", "p2")] {
        assert_eq!(node_of(&v, id)["phase"], "Succeeded", "{v}");
        assert_eq!(node_of(&v, id)["outputs"]["result"], format!("t-mine|wf1|{tmpl}"));
    }
    assert_eq!(node_of(&v, "wf1-5")["phase"], "Error");
    // The two plugin tasks ran at once, so both may have met the 404.
    let gone = web.plugin_calls("gone");
    assert!((1..=2).contains(&gone), "{gone}");
    assert_eq!(web.plugin_calls("decline"), 2);
    // A task added later comes in on the watch; the 404 is remembered.
    let patch = Patch::Merge(json!({"spec": {"tasks": {"wf1-6": {"name": "p3", "plugin": {"hello": {}}}}}}));
    n.sets()
        .patch("wf1", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let v = n.wait_for("wf1", |v| nodes(v) == 6).await;
    assert_eq!(node_of(&v, "wf1-6")["outputs"]["result"], "t-mine|wf1|p3");
    assert_eq!(web.plugin_calls("gone"), gone, "not asked again after its 404");
    let label = Patch::Merge(json!({"metadata": {"labels": {"workflows.argoproj.io/completed": "true"}}}));
    n.sets()
        .patch("wf1", &PatchParams::default(), &label)
        .await
        .unwrap();
    let stop = tokio::time::timeout(Duration::from_secs(30), agent)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(stop, Stop::Completed);
    assert_eq!(
        web.plugin_calls("mine"),
        3,
        "each plugin task ran once, whatever the events"
    );
    let (patches, results) = stats.get();
    assert!(
        patches >= 2 && results == 6,
        "{patches} patches, {results} results"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_nodes_are_not_rerun_and_deletion_ends_the_agent() {
    if skip() {
        return;
    }
    let n = node("deleted").await;
    let web = WebServer::http();
    let echo = format!("{}/echo", web.url());
    n.create_set(
        "wf2",
        json!({"wf2-1": {"name": "a", "http": {"url": echo}}, "wf2-2": {"name": "b", "http": {"url": echo}}}),
    )
    .await;
    // What an agent container that ran before a restart had patched.
    let done = Patch::Merge(
        json!({"status": {"nodes": {"wf2-1": {"phase": "Succeeded", "outputs": {"result": "earlier"}}}}}),
    );
    n.sets()
        .patch_status("wf2", &PatchParams::default(), &done)
        .await
        .unwrap();
    let cfg = config("wf2", Vec::new());
    let agent = tokio::spawn({
        let client = n.agent("default");
        async move { argoexec_agent::run(client, &cfg, Arc::default(), std::future::pending()).await }
    });
    let v = n.wait_for("wf2", |v| nodes(v) == 2).await;
    assert_eq!(node_of(&v, "wf2-1")["outputs"]["result"], "earlier");
    assert_eq!(node_of(&v, "wf2-2")["phase"], "Succeeded");
    assert_eq!(web.requests(), 1, "only the unfinished task called the server");
    n.sets().delete("wf2", &DeleteParams::default()).await.unwrap();
    let stop = tokio::time::timeout(Duration::from_secs(30), agent)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(stop, Stop::Deleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_role_the_agent_fails_naming_the_call() {
    if skip() {
        return;
    }
    let n = node("norole").await;
    let cfg = config("wf3", Vec::new());
    let e = argoexec_agent::run(n.agent("nobody"), &cfg, Arc::default(), std::future::pending())
        .await
        .unwrap_err();
    assert!(matches!(e, AgentError::Api { verb: "list", .. }), "{e}");
    let text = argoexec_kube::chain(&e);
    assert!(
        text.contains("cannot list workflowtasksets in namespace default") && text.contains("forbidden"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_patches_the_pending_results_before_the_agent_ends() {
    if skip() {
        return;
    }
    let n = node("signal").await;
    let web = WebServer::http();
    n.create_set(
        "wf4",
        json!({"wf4-1": {"name": "a", "http": {"url": format!("{}/status/200", web.url())}}}),
    )
    .await;
    let mut cfg = config("wf4", Vec::new());
    // No periodic patch would come before the signal.
    cfg.patch_rate = Duration::from_secs(3600);
    let stats = Arc::new(Stats::default());
    let signal = {
        let stats = stats.clone();
        async move { stats.received_at_least(1).await }
    };
    let stop = argoexec_agent::run(n.agent("default"), &cfg, stats.clone(), signal)
        .await
        .unwrap();
    assert_eq!(stop, Stop::Signal);
    let v = serde_json::to_value(n.sets().get("wf4").await.unwrap()).unwrap();
    assert_eq!(
        node_of(&v, "wf4-1")["phase"],
        "Succeeded",
        "patched on the way out: {v}"
    );
    assert_eq!(stats.get(), (1, 1));
}
