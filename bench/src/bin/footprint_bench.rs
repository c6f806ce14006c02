//! Footprint of the programs a cluster pulls (issue 17), printed beside a baseline build:
//! * the size of each static program (`argoexec`, `argoexec-emissary` — the per-pod copy —,
//!   `argoexec-local`) and of the image's files;
//! * the per-pod copy's RSS while its child runs (`emissary -- sh -c 'echo ready; exec sleep'`);
//! * `argoexec wait`'s RSS while it waits for main (emissary executor, report to a file).
//!
//! Usage: `footprint_bench [STATIC_DIR] [IMAGE] [BASELINE_ARGOEXEC]`. STATIC_DIR holds the
//! three programs (`scripts/build-static.sh --profile dist` prints it; default
//! `target/static/<host>/dist`); IMAGE is the image built from them (`scripts/image.sh`;
//! default `argoexec-rs:footprint`), measured with `docker image inspect` when Docker answers,
//! else by its files. BASELINE_ARGOEXEC (or `$FOOTPRINT_BASELINE`) is a one-binary build from
//! before the split (it played all three parts); without it the baseline columns say so.
//! Figures, not assertions.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use argoexec_bench::Row;

const TEMPLATE: &str = r#"{"name":"bench","container":{"image":"x"}}"#;
const MB: f64 = 1e6;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().map(PathBuf::from).unwrap_or_else(default_dir);
    let image = args.next().unwrap_or_else(|| "argoexec-rs:footprint".into());
    let baseline = args
        .next()
        .or_else(|| std::env::var("FOOTPRINT_BASELINE").ok())
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    println!(
        "programs: {}; baseline: {}",
        dir.display(),
        baseline
            .as_ref()
            .map_or("none".into(), |p| p.display().to_string())
    );
    sizes(&dir, &image, baseline.as_deref());
    let base = baseline.as_deref();
    let copy = dir.join("argoexec-emissary");
    rss_row(
        "per-pod copy RSS while the child runs",
        wrapper_once,
        &copy,
        base,
        3.0,
    );
    rss_row(
        "wait RSS while waiting",
        wait_once,
        &dir.join("argoexec"),
        base,
        8.0,
    );
}

fn default_dir() -> PathBuf {
    let host = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/static")
        .join(host)
        .join("release")
}

fn size(p: &Path) -> Option<f64> {
    std::fs::metadata(p).ok().map(|m| m.len() as f64 / MB)
}

fn mb(v: f64) -> String {
    format!("{v:.1} MB")
}

/// A row with the baseline's figure beside ours, or a note that there is none.
fn row(figure: &str, ours: String, base: Option<String>, goal: &str, met: bool) {
    let r = Row::new("footprint", figure, ours).goal(goal, met);
    match base {
        Some(b) => r.baseline(format!("one binary: {b}")),
        None => r.baseline("no baseline build given"),
    }
    .emit();
}

fn sizes(dir: &Path, image: &str, baseline: Option<&Path>) {
    let base = baseline.and_then(size);
    for (name, goal, limit) in [
        ("argoexec-emissary", "≤ 4 MB", 4.0),
        ("argoexec", "—", f64::INFINITY),
        ("argoexec-local", "—", f64::INFINITY),
    ] {
        let figure = format!("{name} static, stripped");
        match size(&dir.join(name)) {
            Some(s) => {
                println!("{name}: {}", mb(s));
                row(&figure, mb(s), base.map(mb), goal, s <= limit);
            }
            None => Row::failed(
                "footprint",
                figure,
                format!("{} missing", dir.join(name).display()),
            )
            .emit(),
        }
    }
    let ca = size(Path::new("/etc/ssl/certs/ca-certificates.crt")).unwrap_or(0.0);
    let files = ["argoexec", "argoexec-emissary"]
        .iter()
        .filter_map(|n| size(&dir.join(n)))
        .sum::<f64>()
        + ca;
    let inspected = Command::new(argoexec_bench::docker())
        .args(["image", "inspect", "-f", "{{.Size}}", image])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<f64>().ok())
        .map(|b| b / MB);
    let ours = inspected.unwrap_or(files);
    let label = match inspected {
        Some(_) => format!("{} ({image}, docker image inspect)", mb(ours)),
        None => format!("{} (its files; no image to inspect)", mb(ours)),
    };
    println!("image: {label}");
    row(
        "image, uncompressed",
        label,
        base.map(|b| mb(b + ca)),
        "≤ 15 MB",
        ours <= 15.0,
    );
}

/// VmRSS of a process, in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The wrapper's RSS once its child has printed `ready` (read from the wrapper's stdout).
fn wrapper_once(program: &Path) -> Option<f64> {
    let root = tempfile::tempdir().ok()?;
    let mut child = Command::new(program)
        .args([
            "emissary",
            "--loglevel",
            "info",
            "--log-format",
            "text",
            "--",
            "/bin/sh",
            "-c",
        ])
        .arg("echo ready; exec sleep 5")
        .env("ARGOEXEC_PATH_ROOT", root.path())
        .env("ARGO_CONTAINER_NAME", "main")
        .env("ARGO_TEMPLATE", TEMPLATE)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?).read_line(&mut line).ok()?;
    let rss = rss_mib(child.id());
    stop(child);
    rss
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// One RSS row: `measure` run on `program` and on the baseline, judged against `limit` MiB.
fn rss_row(
    figure: &str,
    measure: fn(&Path) -> Option<f64>,
    program: &Path,
    baseline: Option<&Path>,
    limit: f64,
) {
    let base = baseline.and_then(measure).map(|m| format!("{m:.1} MiB"));
    match measure(program) {
        Some(m) => {
            println!("{figure}: {m:.1} MiB (baseline {base:?})");
            row(
                figure,
                format!("{m:.1} MiB"),
                base,
                &format!("≤ {limit} MiB"),
                m <= limit,
            );
        }
        None => Row::failed("footprint", figure, format!("{} did not run", program.display())).emit(),
    }
}

/// wait's RSS after it has been waiting a second for a main that never ends (a benchmark:
/// wait prints nothing when it starts waiting, so a fixed settle time stands in).
fn wait_once(program: &Path) -> Option<f64> {
    let root = tempfile::tempdir().ok()?;
    std::fs::create_dir_all(root.path().join("var/run/argo/ctr/main")).ok()?;
    let child = Command::new(program)
        .arg("wait")
        .env("ARGOEXEC_PATH_ROOT", root.path())
        .env("ARGO_CONTAINER_NAME", "wait")
        .env("ARGO_POD_NAME", "footprint")
        .env("ARGO_CONTAINER_RUNTIME_EXECUTOR", "emissary")
        .env("ARGO_TEMPLATE", TEMPLATE)
        .env("ARGOEXEC_REPORT_FILE", root.path().join("report.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    std::thread::sleep(Duration::from_secs(1));
    let rss = rss_mib(child.id());
    stop(child);
    rss
}
