//! Saving a large base-layer artifact, per backend, on the same data.
//!
//! Runs `argoexec run --keep` on a step whose main writes SIZE MiB (default 1024) of
//! half-compressible data to `/tmp/big` (the base layer) and declares it as an output
//! artifact, for each executor (default `pns emissary docker`), REPEAT times (default 3).
//! Prints, per executor, the median of: the step's wall time, and the wait container's
//! save span — from its "main containers terminated" log line to "saved output artifact",
//! both on the host clock — plus the ratio of each to the emissary's. The emissary also
//! spends time inside main (the wrapper stages the file into `/var/run/argo/outputs` before
//! it reports the exit), which only the wall time shows.
//!
//! Usage: `base_layer_bench [ARGOEXEC_BINARY] [SIZE_MIB] [REPEAT] [EXECUTORS…]` (SIZE_MIB and
//! REPEAT are the size and run-count knobs). Besides the table, one `BENCH-ROW` line per
//! executor (bench `base_layer`; goal for pns: a step no slower than the emissary's).

use std::process::Command;
use std::time::Instant;

use argoexec_bench::{KeptState, Row, container_logs, docker, kept_ids, parse_ts as ts, size_label};
use serde_json::Value;

fn step(mib: u64) -> String {
    // Each 1 MiB block: 512 KiB random, 512 KiB zeros (gzip has real work and real gains).
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {{generateName: big-}}
spec:
  entrypoint: main
  templates:
    - name: main
      container:
        image: busybox
        command: [sh, -c]
        args: ["head -c 524288 /dev/urandom > /tmp/r; i=0; while [ $i -lt {mib} ]; do cat /tmp/r; head -c 524288 /dev/zero; i=$((i+1)); done > /tmp/big; rm /tmp/r"]
      outputs:
        artifacts: [{{name: big, path: /tmp/big}}]
"#
    )
}

struct Sample {
    wall_s: f64,
    save_s: f64,
}

fn one(
    bin: &str,
    ex: &str,
    wf: &std::path::Path,
    repo: &std::path::Path,
    state: &KeptState,
) -> Result<Sample, String> {
    let started = Instant::now();
    let out = Command::new(bin)
        .env(KeptState::ENV, state.path())
        .args(["run", "--keep", "-o", "json", "--executor", ex, "--artifacts"])
        .arg(repo)
        .arg(wf)
        .output()
        .map_err(|e| e.to_string())?;
    let wall_s = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ids = kept_ids(&stderr)?;
    let result = (|| {
        let json: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        if json["phase"] != "Succeeded" {
            return Err(format!("step {}: {}", json["phase"], json["message"]));
        }
        for id in &ids {
            let text = container_logs(id)?;
            let at = |needle: &str| {
                text.lines()
                    .find(|l| l.contains(needle))
                    .and_then(|l| l.split_whitespace().next())
                    .and_then(ts)
            };
            if let (Some(a), Some(b)) = (at("main containers terminated"), at("saved output artifact")) {
                return Ok(Sample {
                    wall_s,
                    save_s: (b - a) as f64 / 1e9,
                });
            }
        }
        Err("no save span in the wait container's log".into())
    })();
    let _ = Command::new(docker()).args(["rm", "-f"]).args(&ids).output();
    state.clear();
    let _ = std::fs::remove_dir_all(repo);
    result
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "target/release/argoexec".into());
    let mib: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let repeat: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3).max(1);
    let mut executors: Vec<String> = args.collect();
    if executors.is_empty() {
        executors = ["pns", "emissary", "docker"].map(String::from).to_vec();
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let wf = dir.path().join("wf.yaml");
    std::fs::write(&wf, step(mib)).expect("write workflow");
    let repo = dir.path().join("repo");
    let state = KeptState::new();
    println!("saving a {mib} MiB base-layer artifact (half random), median of {repeat} runs\n");
    println!("| executor | step wall s | wait save span s | wall vs emissary | save vs emissary |");
    println!("|---|---|---|---|---|");
    let mut rows = Vec::new();
    let mut last_error = std::collections::BTreeMap::new();
    for ex in &executors {
        let mut walls = Vec::new();
        let mut saves = Vec::new();
        for _ in 0..repeat {
            match one(&bin, ex, &wf, &repo, &state) {
                Ok(s) => {
                    walls.push(s.wall_s);
                    saves.push(s.save_s);
                }
                Err(e) => {
                    eprintln!("{ex}: {e}");
                    last_error.insert(ex.clone(), e);
                }
            }
        }
        if walls.is_empty() {
            rows.push((ex.clone(), None));
            continue;
        }
        rows.push((ex.clone(), Some((median(walls), median(saves)))));
    }
    let base = rows.iter().find(|(e, _)| e == "emissary").and_then(|(_, r)| *r);
    for (ex, r) in &rows {
        match r {
            None => println!("| {ex} | – | – | – | – |"),
            Some((w, s)) => {
                let (rw, rs) = base.map_or(("–".into(), "–".into()), |(bw, bs)| {
                    (format!("{:.2}×", w / bw), format!("{:.2}×", s / bs))
                });
                println!("| {ex} | {w:.2} | {s:.2} | {rw} | {rs} |");
            }
        }
    }
    for (ex, r) in &rows {
        let figure = format!(
            "{ex}: save a {} base-layer artifact (half random), median of {repeat}",
            size_label(mib)
        );
        let row = match r {
            None => {
                let why = last_error.get(ex).map_or("no runs", String::as_str);
                Row::failed(
                    "base_layer",
                    figure,
                    format!("all {repeat} runs failed, last: {why}"),
                )
            }
            Some((w, s)) => {
                let row = Row::new(
                    "base_layer",
                    figure,
                    format!("step {w:.2} s (wait's save {s:.2} s)"),
                );
                match base {
                    Some((bw, bs)) if ex != "emissary" => {
                        let row = row
                            .baseline(format!("emissary step {bw:.2} s (wait's save {bs:.2} s)"))
                            .ratio(format!("{:.2}x the emissary's step", w / bw));
                        if ex == "pns" {
                            row.goal("≤ emissary", *w <= bw)
                        } else {
                            row
                        }
                    }
                    None if ex == "pns" => row.goal_unjudged("≤ emissary"),
                    _ => row,
                }
            }
        };
        row.emit();
    }
}
