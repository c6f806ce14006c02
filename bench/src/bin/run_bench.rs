//! `argoexec run examples/hello-world.yaml` wall time against a bare
//! `docker run --rm --network host busybox echo hello`, alternated, median of N (default 10).
//!
//! Usage: `run_bench [ARGOEXEC_BINARY] [N]` (default `target/release/argoexec`, 10). Needs the
//! Docker Engine and the local images (`bash scripts/setup.sh`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn time(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let st = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(st.success(), "{cmd:?} failed: {st}");
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "target/release/argoexec".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let docker = if std::path::Path::new("/usr/bin/docker").exists() {
        "/usr/bin/docker"
    } else {
        "docker"
    };
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for _ in 0..n {
        ours.push(time(Command::new(&bin).args([
            "run",
            "-o",
            "json",
            "examples/hello-world.yaml",
        ])));
        base.push(time(Command::new(docker).args([
            "run",
            "--rm",
            "--network",
            "host",
            "busybox",
            "echo",
            "hello",
        ])));
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
    println!("ratio: {:.2}x (goal <= 3x)", o.as_secs_f64() / b.as_secs_f64());
}
