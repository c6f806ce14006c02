//! The pod layouts side by side (issue 21): `argoexec run -o json examples/hello-world.yaml`
//! as Argo v4.1 builds the pod in the legacy layout (init + wait), in the init-less one
//! (`initlessPod.enabled`: supervisor, the executor from an image volume) and with wait as a
//! sidecar container (argoexec-rs `nativeSidecar.enabled`), alternated, median of N (default
//! 10). Three figures per layout, from the run's own clock (the third is the second minus
//! the first: what the pod costs after the user's command has ended):
//! * run start → main exited (the run's `terminatedSeenUnixNanos.main`, i.e. the node's
//!   status change, minus the moment `run` was started): how soon the user's command has run;
//! * run start → run finished (pod terminal, outputs read back, the pod removed).
//!
//! Usage: `layout_bench [ARGOEXEC_BINARY] [N]` (default `target/release/argoexec`, 10). Needs
//! the Docker Engine and the local images (`bash scripts/setup.sh`). Prints `BENCH-ROW` lines
//! (bench `layout`); no goal: Argo's reason for the init-less layout is the init container's
//! cost, and this shows what it saves here.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use argoexec_bench::Row;

/// One run's figures: (start → main exited, start → finished).
fn once(bin: &str, config: Option<&std::path::Path>) -> Result<(Duration, Duration), String> {
    let mut cmd = Command::new(bin);
    cmd.args([
        "run",
        "-o",
        "json",
        "--argo-version",
        "4.1",
        "examples/hello-world.yaml",
    ]);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    let wall_start = SystemTime::now();
    let (finished, out) = argoexec_bench::run_timed(&mut cmd)?;
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("run printed no JSON: {e}"))?;
    let main_ns = json["terminatedSeenUnixNanos"]["main"]
        .as_u64()
        .ok_or("no terminatedSeenUnixNanos.main in the run's JSON")?;
    let start_ns = wall_start
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    Ok((Duration::from_nanos(main_ns.saturating_sub(start_ns)), finished))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Write a config map with `data` (YAML lines under `data:`) into `dir`.
fn config(dir: &std::path::Path, name: &str, data: &str) -> std::path::PathBuf {
    let p = dir.join(format!("{name}.yaml"));
    let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata:\n{data}");
    std::fs::write(&p, text).expect("write the config map");
    p
}

/// The three figures of one run: start → main exited, start → finished, main exited → finished.
type Figures = (Duration, Duration, Duration);

/// Which of the [`Figures`] a row shows.
type Pick = fn(&Figures) -> Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "target/release/argoexec".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10).max(1);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let initless = config(dir.path(), "initless", "  initlessPod: |\n    enabled: true\n");
    let native = config(dir.path(), "native", "  nativeSidecar: |\n    enabled: true\n");
    let layouts: [(&str, Option<&std::path::Path>); 3] = [
        ("legacy init + wait", None),
        ("init-less (supervisor)", Some(&initless)),
        ("wait as a sidecar container", Some(&native)),
    ];
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); layouts.len()];
    let measured = (0..n).try_for_each(|_| {
        for (i, (_, cm)) in layouts.iter().enumerate() {
            let (main, done) = once(&bin, *cm)?;
            runs[i].push((main, done, done.saturating_sub(main)));
        }
        Ok::<_, String>(())
    });
    let figure = |what: &str| format!("hello-world, Argo 4.1 pod, {what}, median of {n}");
    if let Err(e) = measured {
        eprintln!("layout_bench: {e}");
        Row::failed("layout", figure("run start → main exited"), e).emit();
        std::process::exit(1);
    }
    let pick = |v: &[Figures], f: Pick| median(v.iter().map(f).collect());
    let figures: [(&str, Pick); 3] = [
        ("run start → main exited", |p| p.0),
        ("run start → run finished (pod terminal, removed)", |p| p.1),
        ("main exited → run finished", |p| p.2),
    ];
    for (what, f) in figures {
        let legacy = pick(&runs[0], f);
        let line: Vec<String> = layouts
            .iter()
            .zip(&runs)
            .map(|((name, _), r)| format!("{name} {:.0} ms", ms(pick(r, f))))
            .collect();
        println!("{what}: {}", line.join(", "));
        for ((name, _), r) in layouts.iter().zip(&runs).skip(1) {
            let ours = pick(r, f);
            Row::new("layout", figure(what), format!("{name} {:.0} ms", ms(ours)))
                .baseline(format!("legacy init + wait {:.0} ms", ms(legacy)))
                .ratio(format!("{:.2}x the legacy layout's time", ms(ours) / ms(legacy)))
                .emit();
        }
    }
}
