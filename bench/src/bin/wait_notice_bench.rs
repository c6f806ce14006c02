//! Main exit → wait notices, per backend, and the API/kubelet requests of one step.
//!
//! For each executor, runs `argoexec run --keep` N times (default 50) on a step whose main
//! sleeps 0.3 s, writes a volume output and, as its last action, a stamp file on a host
//! directory; then takes the wait container's log line "main containers terminated" (its
//! timestamp, microseconds) and prints p50/p99 of its distance from the stamp's mtime (main's
//! exit, to within the shell's exit) and from the main container's `State.FinishedAt`
//! (Docker's view, which lags the exit by the shim's reaping and event path) — all on the
//! same host clock — with the goals from issues 7 and 4 (k8sapi ≤ 20 ms,
//! kubelet ≤ 250 ms, pns ≤ 5 ms p50), the wait process's peak RSS (its "wait finished" log
//! line) and the requests per step by endpoint and verb. For pns the notice is the pidfd
//! wake-up ("main process exited (pidfd)"); the exit codes follow from the pod status. Two figures: from the
//! exit (includes the local node's own propagation, Docker event → pod status) and from the
//! status change (when `argoexec run` saw the node's API show main terminated,
//! `terminatedSeenUnixNanos`): the latter is what the backend itself adds.
//!
//! Usage: `wait_notice_bench [ARGOEXEC_BINARY] [N] [EXECUTORS…]` (default
//! `target/release/argoexec`, 50, `kubelet k8sapi pns emissary docker`).

use std::collections::BTreeMap;
use std::process::Command;

use argoexec_bench::{container_logs, docker, kept_ids, parse_ts};
use serde_json::Value;

/// The step: main sleeps, then its last action writes `/h/stamp` on a host directory, whose
/// mtime (nanoseconds, host clock) marks main's exit to within the shell's exit time.
fn step(host_dir: &std::path::Path) -> String {
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {{generateName: notice-}}
spec:
  entrypoint: main
  templates:
    - name: main
      volumes: [{{name: v, emptyDir: {{}}}}, {{name: h, hostPath: {{path: {}}}}}]
      container:
        image: busybox
        command: [sh, -c]
        args: ["sleep 0.3; echo -n x > /v/x; echo -n s > /h/stamp"]
        volumeMounts: [{{name: v, mountPath: /v}}, {{name: h, mountPath: /h}}]
      outputs:
        parameters: [{{name: x, valueFrom: {{path: /v/x}}}}]
"#,
        host_dir.display()
    )
}

struct Sample {
    from_write_ms: f64,
    notice_ms: f64,
    after_status_ms: f64,
    rss_kib: Option<u64>,
    requests: BTreeMap<String, u64>,
}

fn one(bin: &str, executor: &str, wf: &std::path::Path, stamp: &std::path::Path) -> Result<Sample, String> {
    let _ = std::fs::remove_file(stamp);
    let out = Command::new(bin)
        .args(["run", "--keep", "-o", "json", "--executor", executor])
        .arg(wf)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ids = kept_ids(&stderr)?;
    let result = (|| {
        let json: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        if json["phase"] != "Succeeded" {
            return Err(format!("step {}: {}", json["phase"], json["message"]));
        }
        let mut finished = None;
        let mut noticed = None;
        let mut rss_kib: Option<u64> = None;
        for id in &ids {
            let i = Command::new(docker())
                .args(["inspect", id])
                .output()
                .map_err(|e| e.to_string())?;
            let v: Value = serde_json::from_slice(&i.stdout).map_err(|e| e.to_string())?;
            let name = v[0]["Config"]["Labels"]["io.kubernetes.container.name"]
                .as_str()
                .unwrap_or("");
            if name == "main" {
                finished = v[0]["State"]["FinishedAt"].as_str().and_then(parse_ts);
            } else if name == "wait" {
                let text = container_logs(id)?;
                // pns logs the pidfd wake-up first, then waits for exit codes from the
                // pod status; the wake-up is when wait noticed.
                noticed = ["main process exited (pidfd)", "main containers terminated"]
                    .iter()
                    .find_map(|m| text.lines().find(|l| l.contains(m)))
                    .and_then(|l| l.split_whitespace().next())
                    .and_then(parse_ts);
                rss_kib = text
                    .lines()
                    .find_map(|l| l.split_once("peak_rss_kib=").map(|(_, r)| r.to_string()))
                    .and_then(|r| r.split_whitespace().next()?.parse().ok());
            }
        }
        let (f, n) = (
            finished.ok_or("no main exit time")?,
            noticed.ok_or("no notice line in wait's log")?,
        );
        let mut requests = BTreeMap::new();
        for r in json["requests"].as_array().into_iter().flatten() {
            let key = format!(
                "{} {}",
                r["endpoint"].as_str().unwrap_or(""),
                r["verb"].as_str().unwrap_or("")
            );
            *requests.entry(key).or_default() += r["count"].as_u64().unwrap_or(0);
        }
        let status = json["terminatedSeenUnixNanos"]["main"]
            .as_u64()
            .ok_or("no status-change time")?;
        let written = std::fs::metadata(stamp)
            .and_then(|m| m.modified())
            .map_err(|e| format!("no stamp: {e}"))?
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_nanos();
        Ok(Sample {
            from_write_ms: (n - written as i128) as f64 / 1e6,
            notice_ms: (n - f) as f64 / 1e6,
            after_status_ms: (n - i128::from(status)) as f64 / 1e6,
            rss_kib,
            requests,
        })
    })();
    let _ = Command::new(docker()).args(["rm", "-f"]).args(&ids).output();
    result
}

fn pct(v: &[f64], p: f64) -> f64 {
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "target/release/argoexec".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(50);
    let mut executors: Vec<String> = args.collect();
    if executors.is_empty() {
        executors = ["kubelet", "k8sapi", "pns", "emissary", "docker"]
            .map(String::from)
            .to_vec();
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let wf = dir.path().join("wf.yaml");
    let host_dir = dir.path().join("h");
    std::fs::create_dir_all(&host_dir).expect("host dir");
    std::fs::write(&wf, step(&host_dir)).expect("write workflow");
    println!("main exit → wait notices, {n} runs per executor (main sleeps 0.3 s)\n");
    println!(
        "| executor | from main's last write p50 / p99 ms | from Docker's FinishedAt p50 / p99 ms | from status change p50 / p99 ms | goal | wait peak RSS p50 / max MiB | requests per step (mean) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for ex in &executors {
        let mut lat = Vec::new();
        let mut from_write = Vec::new();
        let mut after = Vec::new();
        let mut rss: Vec<u64> = Vec::new();
        let mut totals: BTreeMap<String, u64> = BTreeMap::new();
        let mut errors = 0;
        for _ in 0..n {
            match one(&bin, ex, &wf, &host_dir.join("stamp")) {
                Ok(s) => {
                    lat.push(s.notice_ms);
                    from_write.push(s.from_write_ms);
                    after.push(s.after_status_ms);
                    rss.extend(s.rss_kib);
                    for (k, c) in s.requests {
                        *totals.entry(k).or_default() += c;
                    }
                }
                Err(e) => {
                    errors += 1;
                    eprintln!("{ex}: {e}");
                }
            }
        }
        if lat.is_empty() {
            println!("| {ex} | – | – | – | – | – | – | all {errors} runs failed |");
            continue;
        }
        lat.sort_by(f64::total_cmp);
        from_write.sort_by(f64::total_cmp);
        after.sort_by(f64::total_cmp);
        let goal = match ex.as_str() {
            "k8sapi" => "≤ 20 ms",
            "pns" => "≤ 5 ms p50",
            "kubelet" => "≤ 250 ms",
            _ => "(baseline)",
        };
        let reqs = totals
            .iter()
            .map(|(k, c)| format!("{k}: {:.1}", *c as f64 / lat.len() as f64))
            .collect::<Vec<_>>()
            .join(", ");
        rss.sort_unstable();
        let rss = match (rss.get(rss.len() / 2), rss.last()) {
            (Some(m), Some(x)) => format!("{:.1} / {:.1}", *m as f64 / 1024.0, *x as f64 / 1024.0),
            _ => "–".into(),
        };
        println!(
            "| {ex} | {:.1} / {:.1} | {:.1} / {:.1} | {:.1} / {:.1} | {goal} | {rss} | {} |{}",
            pct(&from_write, 0.5),
            pct(&from_write, 0.99),
            pct(&lat, 0.5),
            pct(&lat, 0.99),
            pct(&after, 0.5),
            pct(&after, 0.99),
            if reqs.is_empty() { "none" } else { &reqs },
            if errors > 0 {
                format!(" ({errors} failed runs)")
            } else {
                String::new()
            }
        );
    }
}
