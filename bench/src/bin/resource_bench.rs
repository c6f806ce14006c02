//! Resource templates: condition met → step done (issue 18's benchmark).
//!
//! One local node ([`argoexec_node_server::NodeServer`], in this process). Each sample runs
//! `argoexec resource create` as a host process with the pod's in-cluster environment (a
//! projected token and the node's CA in a service-account directory, the template in
//! `ARGO_TEMPLATE`, every pod path under a fresh `ARGOEXEC_PATH_ROOT`): it creates a
//! ConfigMap with `data.ready: "no"` and waits for `successCondition: data.ready == yes`.
//! As soon as the node's store shows the ConfigMap, this program patches `ready` to `yes`
//! (t0: just before the patch is sent) and takes t1 when the process exits (outputs
//! reported, task result finalised). Printed: p50/p99 of t1 − t0.
//!
//! Two modes side by side: `watch` (the service account may watch ConfigMaps: the step
//! waits on a watch) and `poll` (no `watch` verb: the step falls back to a GET every
//! `RESOURCE_STATE_CHECK_INTERVAL`, 5 s by default, which is what Argo's executor always
//! does). Goal: watch p50 ≤ 100 ms.
//!
//! Usage: `resource_bench [ARGOEXEC_BINARY] [N_WATCH] [N_POLL]` (default
//! `target/release/argoexec`, 50, 10).

use std::path::Path;
use std::time::{Duration, Instant};

use argoexec_bench::Row;
use argoexec_node_server::{NodeServer, ServerConfig};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const NS: &str = "bench";

fn policy(sa: &str, watch: bool) -> String {
    let verbs = if watch {
        json!(["get", "list", "watch", "create"])
    } else {
        json!(["get", "list", "create"])
    };
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": sa, "namespace": NS},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs},
                  {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": sa, "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": NS}]});
    format!("{role}\n---\n{binding}")
}

fn template(name: &str) -> String {
    json!({"name": "main", "resource": {"action": "create", "successCondition": "data.ready == yes",
        "manifest": format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  ready: \"no\"\n")},
        "outputs": {"parameters": [{"name": "ready", "valueFrom": {"jsonPath": "{.data.ready}"}}]}})
    .to_string()
}

/// One sample: the step's process from its ConfigMap patched to its exit.
async fn one(
    server: &NodeServer,
    admin: &Api<ConfigMap>,
    bin: &str,
    sa_dir: &Path,
    i: usize,
    tag: &str,
) -> Result<Duration, String> {
    let name = format!("{tag}-{i}");
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut events = server.subscribe();
    let mut child = tokio::process::Command::new(bin)
        .args(["resource", "create", "--loglevel", "warn"])
        .env("ARGOEXEC_PATH_ROOT", root.path())
        .env("ARGOEXEC_SERVICEACCOUNT_DIR", sa_dir)
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", server.api_port().to_string())
        .env("ARGO_POD_NAME", &name)
        .env("ARGO_POD_UID", format!("uid-{name}"))
        .env("ARGO_NODE_ID", &name)
        .env("ARGO_WORKFLOW_NAME", "bench")
        .env("ARGO_TEMPLATE", template(&name))
        .env("ARGO_INCLUDE_SCRIPT_OUTPUT", "false")
        .env("ARGO_DEADLINE", "0001-01-01T00:00:00Z")
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("start {bin}: {e}"))?;
    // The ConfigMap's creation, from the node's own change feed.
    let created = async {
        loop {
            match events.recv().await {
                Ok(ev)
                    if ev.object["kind"] == "ConfigMap" && ev.object["metadata"]["name"] == name.as_str() =>
                {
                    return Ok(());
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    };
    tokio::select! {
        r = created => r?,
        s = child.wait() => return Err(format!("the step exited before creating its ConfigMap: {s:?}")),
    }
    let t0 = Instant::now();
    admin
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ready": "yes"}})),
        )
        .await
        .map_err(|e| format!("patch: {e}"))?;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .map_err(|_| "the step did not end within 30 s of its condition".to_string())?
        .map_err(|e| e.to_string())?;
    let took = t0.elapsed();
    if !status.success() {
        return Err(format!("the step failed: {status}"));
    }
    Ok(took)
}

/// ConfigMaps of the bench namespace, as the node's admin.
async fn admin_api(server: &NodeServer) -> Result<Api<ConfigMap>, String> {
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).map_err(|e| e.to_string())?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    let client = kube::Client::try_from(cfg).map_err(|e| e.to_string())?;
    Ok(Api::namespaced(client, NS))
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One mode on its own service account (`watcher` may watch, `poller` may not).
async fn mode(
    server: &NodeServer,
    admin: &Api<ConfigMap>,
    bin: &str,
    watch: bool,
    n: usize,
) -> Result<Vec<Duration>, String> {
    let (sa, tag) = if watch {
        ("watcher", "watch")
    } else {
        ("poller", "poll")
    };
    server
        .rbac()
        .load_str(&policy(sa, watch), "resource_bench")
        .map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let write = |f: &str, text: String| std::fs::write(dir.path().join(f), text).map_err(|e| e.to_string());
    write("token", server.issue_token(NS, sa, None))?;
    write("ca.crt", server.ca_pem())?;
    write("namespace", NS.to_string())?;
    let mut v = Vec::new();
    for i in 0..n {
        v.push(one(server, admin, bin, dir.path(), i, tag).await?);
    }
    v.sort();
    Ok(v)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "target/release/argoexec".into());
    let n_watch: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(50);
    let n_poll: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let figure = "Resource template: condition met → step done";
    let result: Result<(Vec<Duration>, Vec<Duration>), String> = rt.block_on(async {
        let state = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut cfg = ServerConfig::default();
        cfg.node.state_dir = state.path().to_path_buf();
        cfg.node.node_label = format!("resource-bench-{}", std::process::id());
        let server = NodeServer::start(cfg).await.map_err(|e| e.to_string())?;
        let admin = admin_api(&server).await?;
        let watch = mode(&server, &admin, &bin, true, n_watch).await;
        // The poll mode: the same rules without `watch`, on another service account.
        let poll = match &watch {
            Ok(_) => mode(&server, &admin, &bin, false, n_poll).await,
            Err(e) => Err(e.clone()),
        };
        server.shutdown().await;
        Ok((watch?, poll?))
    });
    match result {
        Ok((watch, poll)) => {
            let (w50, w99, p50, p99) = (
                quantile(&watch, 0.5),
                quantile(&watch, 0.99),
                quantile(&poll, 0.5),
                quantile(&poll, 0.99),
            );
            println!("| mode | runs | p50 | p99 |\n|---|---|---|---|");
            println!(
                "| watch | {} | {:.1} ms | {:.1} ms |",
                watch.len(),
                ms(w50),
                ms(w99)
            );
            println!(
                "| poll (Argo's 5 s) | {} | {:.1} ms | {:.1} ms |",
                poll.len(),
                ms(p50),
                ms(p99)
            );
            Row::new(
                "resource",
                figure,
                format!(
                    "p50 {:.1} ms, p99 {:.1} ms ({} runs, watch)",
                    ms(w50),
                    ms(w99),
                    watch.len()
                ),
            )
            .baseline(format!(
                "p50 {:.0} ms, p99 {:.0} ms ({} runs, the 5 s poll)",
                ms(p50),
                ms(p99),
                poll.len()
            ))
            .ratio(argoexec_bench::speed_ratio(ms(w50), ms(p50)))
            .goal("p50 ≤ 100 ms", ms(w50) <= 100.0)
            .emit();
        }
        Err(e) => {
            eprintln!("resource_bench: {e}");
            Row::failed("resource", figure, e).emit();
            std::process::exit(1);
        }
    }
}
