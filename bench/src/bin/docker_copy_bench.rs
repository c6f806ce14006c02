//! Docker backend `copy_file` figures (printed, not asserted): our streaming copy of a 1 GiB
//! base-layer file to a `.tar.gz` against the baseline Argo's docker executor used,
//! `docker cp <id>:<path> - | gzip > out`, on the same container.
//!
//! Usage: `docker_copy_bench [--size-mib N] [--runs N] [--level L]` (defaults 1024 MiB,
//! 3 runs, level 6). A busybox container (image `busybox:latest`, network `none`, labelled
//! like dockershim does) writes the file into its own filesystem — in rounds of 1/4
//! `/dev/urandom`, 1/4 zeros and 1/2 repetitive text — and exits. Both sides then run
//! alternately `--runs` times; medians are printed with the ratio. Ours runs in a child
//! process of this binary (`--child-ours POD SRC OUT LEVEL`) that prints its own copy time
//! and peak RSS (VmHWM). Every archive is listed with GNU `tar -tzf` to check it holds the
//! single entry `basename(src)`. The container is removed at the end (also on panic).
//! Besides the human output, one `BENCH-ROW` line per README figure (bench `docker_copy`):
//! the median against the baseline (goal: faster) and our peak RSS (goal ≤ 64 MiB).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use argoexec_backend_docker::identity::{LABEL_CONTAINER, LABEL_NAMESPACE, LABEL_POD};
use argoexec_backend_docker::{DockerExecutor, PodRef};
use argoexec_bench::{Row, secs as fmt_secs, size_label, speed_ratio};
use argoexec_runtime::RuntimeExecutor;
use bollard::models::{ContainerCreateBody, HostConfig};

const SOCKET: &str = "/var/run/docker.sock";
const DOCKER_CLI: &str = "/usr/bin/docker";
const NAMESPACE: &str = "argoexec-bench";
const CONTAINER: &str = "main";
const SRC: &str = "/tmp/big.bin";

fn die(msg: &str) -> ! {
    eprintln!("docker_copy_bench: {msg}");
    std::process::exit(1);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("tokio runtime: {e}")))
}

fn hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The child: copy SRC of the pod's `main` container to OUT, print seconds and peak RSS.
fn child_ours(pod: &str, src: &str, out: &str, level: &str) {
    let level: u32 = level.parse().unwrap_or(6);
    let rt = runtime();
    let secs = rt.block_on(async {
        let exec = DockerExecutor::connect(Path::new(SOCKET), PodRef::by_namespace(NAMESPACE, pod))
            .await
            .unwrap_or_else(|e| die(&format!("connect: {e}")));
        let t = Instant::now();
        exec.copy_file(CONTAINER, Path::new(src), Path::new(out), Some(level))
            .await
            .unwrap_or_else(|e| die(&format!("copy_file: {e}")));
        t.elapsed().as_secs_f64()
    });
    println!("copy_s={secs:.3} hwm_kib={}", hwm_kib());
}

/// Removes the benchmark container on drop.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new(DOCKER_CLI)
            .args(["rm", "-f", &self.0])
            .stdout(Stdio::null())
            .status();
    }
}

/// Create the container that writes `size_mib` MiB to SRC, run it to completion.
fn prepare(pod: &str, size_mib: u64) -> String {
    let round = (size_mib / 4).max(4);
    let (rand, zero, text) = (round / 4, round / 4, round - 2 * (round / 4));
    let rounds = size_mib.div_ceil(round);
    let script = format!(
        "set -e; for i in $(seq 1 {rounds}); do \
           dd if=/dev/urandom bs=1048576 count={rand} 2>/dev/null; \
           dd if=/dev/zero bs=1048576 count={zero} 2>/dev/null; \
           yes 'argoexec docker copy benchmark: a line of fairly compressible text 0123456789' \
             | head -c {} ; \
         done > {SRC}; ls -l {SRC}",
        text * 1_048_576
    );
    let rt = runtime();
    rt.block_on(async {
        let exec = DockerExecutor::connect(Path::new(SOCKET), PodRef::by_namespace(NAMESPACE, pod))
            .await
            .unwrap_or_else(|e| die(&format!("connect: {e} (is Docker running?)")));
        println!("docker API version {}", exec.api_version());
        let labels = [
            (LABEL_NAMESPACE, NAMESPACE.to_string()),
            (LABEL_POD, pod.to_string()),
            (LABEL_CONTAINER, CONTAINER.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let body = ContainerCreateBody {
            image: Some("busybox:latest".into()),
            cmd: Some(vec!["sh".into(), "-c".into(), script]),
            labels: Some(labels),
            host_config: Some(HostConfig {
                network_mode: Some("none".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = exec
            .client()
            .create_container(None, body)
            .await
            .unwrap_or_else(|e| die(&format!("create container: {e}")))
            .id;
        exec.client()
            .start_container(&id, None)
            .await
            .unwrap_or_else(|e| die(&format!("start container: {e}")));
        let exits = exec
            .wait(&[CONTAINER.to_string()], Default::default())
            .await
            .unwrap_or_else(|e| die(&format!("wait: {e}")));
        if exits.first().and_then(|e| e.exit_code) != Some(0) {
            die(&format!("data container failed: {exits:?}"));
        }
        id
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn check_single_entry(archive: &Path) {
    let out = Command::new("tar")
        .arg("-tzf")
        .arg(archive)
        .output()
        .unwrap_or_else(|e| die(&format!("tar -tzf: {e}")));
    let list = String::from_utf8_lossy(&out.stdout);
    let want = Path::new(SRC).file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !out.status.success() || list.trim() != want {
        die(&format!("{} lists {list:?}, want {want:?}", archive.display()));
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--child-ours") && argv.len() == 6 {
        child_ours(&argv[2], &argv[3], &argv[4], &argv[5]);
        return;
    }
    let (mut size_mib, mut runs, mut level) = (1024u64, 3usize, 6u32);
    let mut it = argv.iter().skip(1);
    while let Some(flag) = it.next() {
        let val = it.next().unwrap_or_else(|| die(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--size-mib" => size_mib = val.parse().unwrap_or_else(|_| die("bad --size-mib")),
            "--runs" => runs = val.parse().unwrap_or_else(|_| die("bad --runs")),
            "--level" => level = val.parse().unwrap_or_else(|_| die("bad --level")),
            _ => die(&format!("unknown flag {flag}")),
        }
    }
    let runs = runs.max(1);
    let pod = format!("bench-{}", std::process::id());
    let t = Instant::now();
    let id = prepare(&pod, size_mib);
    let _cleanup = Cleanup(id.clone());
    println!(
        "prepared {size_mib} MiB in container {} in {:.1}s",
        &id[..12],
        t.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir().unwrap_or_else(|e| die(&format!("tempdir: {e}")));
    let me = std::env::current_exe().unwrap_or_else(|e| die(&format!("current_exe: {e}")));
    let (mut ours, mut ours_copy, mut base, mut hwm) = (Vec::new(), Vec::new(), Vec::new(), 0u64);
    let (mut ours_size, mut base_size) = (0u64, 0u64);
    for run in 1..=runs {
        let out = dir.path().join("ours.tar.gz");
        let t = Instant::now();
        let o = Command::new(&me)
            .args(["--child-ours", &pod, SRC])
            .arg(&out)
            .arg(level.to_string())
            .output()
            .unwrap_or_else(|e| die(&format!("run child: {e}")));
        let wall = t.elapsed().as_secs_f64();
        if !o.status.success() {
            die(&format!("child failed: {}", String::from_utf8_lossy(&o.stderr)));
        }
        let line = String::from_utf8_lossy(&o.stdout).into_owned();
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(k))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        ours.push(wall);
        ours_copy.push(field("copy_s="));
        hwm = hwm.max(field("hwm_kib=") as u64);
        check_single_entry(&out);
        ours_size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        let _ = std::fs::remove_file(&out);

        let out = dir.path().join("base.tar.gz");
        let script = format!("{DOCKER_CLI} cp {id}:{SRC} - | gzip -{level} > {}", out.display());
        let t = Instant::now();
        let st = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .status()
            .unwrap_or_else(|e| die(&format!("baseline: {e}")));
        let secs = t.elapsed().as_secs_f64();
        if !st.success() {
            die("baseline pipeline failed");
        }
        base.push(secs);
        check_single_entry(&out);
        base_size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        let _ = std::fs::remove_file(&out);
        println!(
            "run {run}: ours {wall:.2}s (copy {:.2}s), docker cp | gzip {secs:.2}s",
            ours_copy[run - 1]
        );
    }
    let (o, oc, b) = (median(ours), median(ours_copy), median(base));
    let mib = |n: u64| n as f64 / 1_048_576.0;
    println!("--- {size_mib} MiB file, gzip level {level}, median of {runs} ---");
    println!("ours (copy_file, child process wall): {o:.2}s  (copy_file alone {oc:.2}s)");
    println!("docker cp | gzip -{level}:              {b:.2}s");
    println!("ratio baseline/ours:                  {:.2}x", b / o);
    println!(
        "our peak RSS (VmHWM):                 {:.1} MiB",
        hwm as f64 / 1024.0
    );
    println!(
        "archive sizes: ours {:.1} MiB, baseline {:.1} MiB",
        mib(ours_size),
        mib(base_size)
    );
    let figure = format!(
        "Docker backend: save a {} base-layer file as tar.gz (level {level}), median of {runs}",
        size_label(size_mib)
    );
    Row::new("docker_copy", figure.clone(), fmt_secs(o))
        .baseline(format!("docker cp … - | gzip -{level} {}", fmt_secs(b)))
        .ratio(speed_ratio(o, b))
        .goal("faster", o < b)
        .emit();
    let rss = hwm as f64 / 1024.0;
    Row::new(
        "docker_copy",
        format!("{figure}, our peak RSS"),
        format!("{rss:.1} MiB"),
    )
    .goal("≤ 64 MiB", rss <= 64.0)
    .emit();
}
