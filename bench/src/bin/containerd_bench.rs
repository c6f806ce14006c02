//! The local node on containerd (issue 22): `argoexec run examples/hello-world.yaml` on
//! `--runtime containerd` against a bare `ctr run --rm` of the same image and command on the
//! same containerd (what one container costs there, with no pod, no executor and no API),
//! and against the same run on `--runtime docker`; medians of N (default 10).
//!
//! Two rounds, each alternating the two runs it compares, so both see the same machine: the
//! run on containerd with the bare `ctr run` (the goal's ratio), then the run on Docker with
//! the run on containerd (Docker's figure). Apart, because the Docker Engine goes on working
//! for a moment after a run ends (its own containerd and shims), and the run measured right
//! after it would pay for that.
//!
//! Usage: `containerd_bench [ARGOEXEC_BINARY] [N]` (default `target/release/argoexec`, 10).
//! Needs the Docker Engine, the project's containerd and the local images imported into it
//! (`bash scripts/setup.sh`). Prints `BENCH-ROW` lines (bench `containerd`); the goal is the
//! issue's: the run within 3× the bare `ctr run`.

use std::process::Command;
use std::time::Duration;

use argoexec_bench::{Row, speed_ratio};

const SOCKET: &str = "/run/argoexec-containerd/containerd.sock";

/// Time one command to its exit.
fn timed(cmd: &mut Command) -> Result<Duration, String> {
    argoexec_bench::run_timed(cmd).map(|(took, _)| took)
}

fn run(bin: &str, runtime: &str) -> Result<Duration, String> {
    timed(Command::new(bin).args([
        "run",
        "-o",
        "json",
        "--runtime",
        runtime,
        "examples/hello-world.yaml",
    ]))
}

fn bare_ctr(i: usize) -> Result<Duration, String> {
    let id = format!("bench-{}-{i}", std::process::id());
    timed(Command::new("ctr").args([
        "--address",
        SOCKET,
        "-n",
        "argoexec",
        "run",
        "--rm",
        "docker.io/library/busybox:latest",
        &id,
        "echo",
        "hello world",
    ]))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "target/release/argoexec".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10).max(1);
    let (mut on_ctrd, mut bare, mut on_docker, mut on_ctrd2) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let measured = (0..n)
        .try_for_each(|i| {
            on_ctrd.push(run(&bin, "containerd")?);
            bare.push(bare_ctr(i)?);
            Ok::<_, String>(())
        })
        .and_then(|()| {
            (0..n).try_for_each(|_| {
                on_docker.push(run(&bin, "docker")?);
                on_ctrd2.push(run(&bin, "containerd")?);
                Ok::<_, String>(())
            })
        });
    let figure = |what: &str| format!("hello-world, {what}, median of {n}");
    if let Err(e) = measured {
        eprintln!("containerd_bench: {e}");
        Row::failed("containerd", figure("argoexec run on containerd"), e).emit();
        std::process::exit(1);
    }
    let (c, b, d, c2) = (median(on_ctrd), median(bare), median(on_docker), median(on_ctrd2));
    println!(
        "round 1: argoexec run on containerd {:.0} ms, bare ctr run --rm {:.0} ms; \
         round 2: argoexec run on Docker {:.0} ms, on containerd {:.0} ms",
        ms(c),
        ms(b),
        ms(d),
        ms(c2)
    );
    let ratio = ms(c) / ms(b);
    Row::new(
        "containerd",
        figure("argoexec run --runtime containerd (a whole pod: init, wait, main, API, cleanup)"),
        format!("{:.0} ms", ms(c)),
    )
    .baseline(format!("bare `ctr run --rm` of busybox echo: {:.0} ms", ms(b)))
    .ratio(format!("{ratio:.2}x the bare container"))
    .goal("≤ 3x the bare ctr run", ratio <= 3.0)
    .emit();
    Row::new(
        "containerd",
        figure("argoexec run, containerd against Docker (round 2)"),
        format!("containerd {:.0} ms", ms(c2)),
    )
    .baseline(format!("Docker Engine {:.0} ms", ms(d)))
    .ratio(speed_ratio(ms(c2), ms(d)))
    .emit();
}
