//! The agent's throughput (printed, not asserted): one `WorkflowTaskSet` of `--tasks N`
//! HTTP tasks (default 1000) against a local HTTP server, run by `argoexec_agent::run` (the
//! library `argoexec agent main` runs) against the local node's API server, under Argo's
//! defaults (16 workers, a status patch every 10 s) and under faster settings (64 workers,
//! every 250 ms). For each: the time until every call was answered (the server's count),
//! until every result was in the task set's status (a watch), tasks per second and status
//! patches per second. Argo's own agent cannot run here; the default settings are the
//! baseline of the faster ones. One `BENCH-ROW` per figure (bench `agent`).
//!
//! Usage: `agent_bench [--tasks N]`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use argoexec_agent::agent::task_set_resource;
use argoexec_agent::config::AgentConfig;
use argoexec_agent::patch::Stats;
use argoexec_bench::Row;
use argoexec_node_server::{NodeServer, ServerConfig};
use argoexec_testkit::web::WebServer;
use futures::TryStreamExt as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Map, Value, json};

const NS: &str = "default";

struct Measured {
    called: Duration,
    in_status: Duration,
    patches: usize,
}

fn config(name: &str, workers: usize, patch_rate: Duration) -> AgentConfig {
    AgentConfig {
        workflow_name: name.into(),
        workflow_uid: "bench".into(),
        namespace: NS.into(),
        workers,
        patch_rate,
        plugins: Vec::new(),
        max_body: 1 << 20,
        ca_dir: "/nonexistent".into(),
    }
}

async fn admin(server: &NodeServer) -> Result<kube::Client, String> {
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).map_err(|e| e.to_string())?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    kube::Client::try_from(cfg).map_err(|e| e.to_string())
}

/// Run `n` tasks with `workers` and `rate`; how long they took.
async fn measure(
    client: &kube::Client,
    web: &WebServer,
    name: &str,
    n: usize,
    workers: usize,
    rate: Duration,
) -> Result<Measured, String> {
    let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &task_set_resource());
    let url = format!("{}/status/200", web.url());
    let tasks: Map<String, Value> = (0..n)
        .map(|i| (format!("{name}-{i}"), json!({"name": "t", "http": {"url": url}})))
        .collect();
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTaskSet",
        "metadata": {"name": name, "namespace": NS}, "spec": {"tasks": tasks}}))
    .map_err(|e| e.to_string())?;
    sets.create(&PostParams::default(), &obj)
        .await
        .map_err(|e| e.to_string())?;
    let before = web.requests();
    let stats = Arc::new(Stats::default());
    let cfg = config(name, workers, rate);
    let t0 = Instant::now();
    let agent = tokio::spawn({
        let (client, stats) = (client.clone(), stats.clone());
        async move { argoexec_agent::run(client, &cfg, stats, std::future::pending()).await }
    });
    // The server's counter has no event to wait on: sampled every 2 ms (bench only).
    let called = async {
        while web.requests() - before < n {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        t0.elapsed()
    };
    let wp = WatchParams::default().fields(&format!("metadata.name={name}"));
    let in_status = async {
        let mut stream = Box::pin(sets.watch(&wp, "0").await.map_err(|e| e.to_string())?);
        while let Some(ev) = stream.try_next().await.map_err(|e| e.to_string())? {
            if let WatchEvent::Added(o) | WatchEvent::Modified(o) = ev {
                let v = serde_json::to_value(&o).map_err(|e| e.to_string())?;
                if v.pointer("/status/nodes")
                    .and_then(Value::as_object)
                    .map_or(0, Map::len)
                    == n
                {
                    return Ok(t0.elapsed());
                }
            }
        }
        Err("the watch ended".to_string())
    };
    let (called, in_status) = tokio::time::timeout(Duration::from_secs(600), async {
        tokio::join!(called, in_status)
    })
    .await
    .map_err(|_| "not done within 600 s".to_string())?;
    let in_status = in_status?;
    let label = Patch::Merge(json!({"metadata": {"labels": {"workflows.argoproj.io/completed": "true"}}}));
    sets.patch(name, &PatchParams::default(), &label)
        .await
        .map_err(|e| e.to_string())?;
    let _ = agent.await;
    Ok(Measured {
        called,
        in_status,
        patches: stats.get().0,
    })
}

fn rows(label: &str, n: usize, m: &Measured, baseline: Option<&Measured>) {
    let per_s = |d: Duration| n as f64 / d.as_secs_f64();
    let mut r = Row::new(
        "agent",
        format!("{n} HTTP tasks, {label}: tasks/s (all results in the status)"),
        format!("{:.0}", per_s(m.in_status)),
    );
    if let Some(b) = baseline {
        r = r.baseline(format!("{:.0}", per_s(b.in_status))).ratio(format!(
            "{:.1}×",
            b.in_status.as_secs_f64() / m.in_status.as_secs_f64()
        ));
    }
    println!("{}", r.line());
    let r = Row::new(
        "agent",
        format!("{n} HTTP tasks, {label}: calls answered / results in the status"),
        format!(
            "{:.2} s / {:.2} s",
            m.called.as_secs_f64(),
            m.in_status.as_secs_f64()
        ),
    );
    println!("{}", r.line());
    let r = Row::new(
        "agent",
        format!("{n} HTTP tasks, {label}: status patches (per second)"),
        format!(
            "{} ({:.2}/s)",
            m.patches,
            m.patches as f64 / m.in_status.as_secs_f64()
        ),
    );
    println!("{}", r.line());
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut n = 1000;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tasks" => n = args.next().and_then(|v| v.parse().ok()).unwrap_or(n),
            other => {
                eprintln!("agent_bench: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let web = WebServer::http();
    let result = rt.block_on(async {
        let state = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut cfg = ServerConfig::default();
        cfg.node.state_dir = state.path().to_path_buf();
        cfg.node.node_label = format!("agent-bench-{}", std::process::id());
        let server = NodeServer::start(cfg).await.map_err(|e| e.to_string())?;
        let client = admin(&server).await?;
        let default = measure(&client, &web, "defaults", n, 16, Duration::from_secs(10)).await?;
        let fast = measure(&client, &web, "fast", n, 64, Duration::from_millis(250)).await?;
        server.shutdown().await;
        Ok::<_, String>((default, fast))
    });
    match result {
        Ok((default, fast)) => {
            rows("16 workers, 10 s patch rate (Argo's defaults)", n, &default, None);
            rows("64 workers, 250 ms patch rate", n, &fast, Some(&default));
        }
        Err(e) => {
            println!("{}", Row::failed("agent", format!("{n} HTTP tasks"), e).line());
            std::process::exit(1);
        }
    }
}
