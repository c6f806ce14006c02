//! `argoexec run examples/hello-world.yaml` wall time against a bare
//! `docker run --rm --network host busybox echo hello`, alternated, median of N (default 10).
//!
//! Usage: `run_bench [ARGOEXEC_BINARY] [N]` (default `target/release/argoexec`, 10; N is the
//! run-count knob). Needs the Docker Engine and the local images (`bash scripts/setup.sh`).
//! Besides the human output, one `BENCH-ROW` line (bench `run`, goal ≤ 3x the bare run).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use argoexec_bench::{Row, docker};

const FIGURE: &str =
    "argoexec run examples/hello-world.yaml (pause + init + wait + main on Docker, cleanup included)";

fn time(cmd: &mut Command) -> Result<Duration, String> {
    let t = Instant::now();
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!("{cmd:?} failed ({}): {last}", out.status));
    }
    Ok(t.elapsed())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "target/release/argoexec".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10).max(1);
    let figure = format!("{FIGURE}, median of {n}");
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    let measured = (0..n).try_for_each(|_| {
        ours.push(time(Command::new(&bin).args([
            "run",
            "-o",
            "json",
            "examples/hello-world.yaml",
        ]))?);
        base.push(time(Command::new(docker()).args([
            "run",
            "--rm",
            "--network",
            "host",
            "busybox",
            "echo",
            "hello",
        ]))?);
        Ok::<_, String>(())
    });
    if let Err(e) = measured {
        eprintln!("run_bench: {e}");
        Row::failed("run", figure, e).emit();
        std::process::exit(1);
    }
    let (o, b) = (median(ours), median(base));
    println!(
        "argoexec run hello-world: median {:.0} ms over {n}",
        o.as_secs_f64() * 1e3
    );
    println!(
        "docker run --rm busybox:  median {:.0} ms over {n}",
        b.as_secs_f64() * 1e3
    );
    let ratio = o.as_secs_f64() / b.as_secs_f64();
    println!("ratio: {ratio:.2}x (goal <= 3x)");
    Row::new("run", figure, format!("{:.0} ms", o.as_secs_f64() * 1e3))
        .baseline(format!(
            "docker run --rm busybox echo hello {:.0} ms",
            b.as_secs_f64() * 1e3
        ))
        .ratio(format!("{ratio:.2}x the bare run"))
        .goal("≤ 3x", ratio <= 3.0)
        .emit();
}
