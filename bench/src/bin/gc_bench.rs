//! Artifact GC and data-template listing figures (printed, not asserted), on moto with
//! signature checking on:
//!
//! - delete a directory artifact of `--delete N` objects (default 10 000) under one prefix
//!   with the S3 driver (`ArtifactDriver::delete`: listing streamed into `DeleteObjects`
//!   batches) against `aws s3 rm --recursive` (the pinned `.venv-awscli`) on the same
//!   number of objects in the same moto; seconds of each, the ratio, our peak RSS (goals:
//!   faster, ≤ 64 MiB);
//! - list `--list N` keys (default 100 000) with `ArtifactDriver::list_objects` (Argo's
//!   `ListObjects`, full keys, 1000 a page): seconds and peak RSS (goal ≤ 64 MiB).
//!
//! Usage: `gc_bench [--delete N] [--list N] [--parallel N]`. Ours runs in a child process,
//! this same program as `gc_bench --child rm|ls LOCATION` (the library, as `argoexec`
//! links it, and nothing else), so its peak RSS is its own: wall time and peak RSS of each
//! command come from GNU `time -f "%e %M"`. The objects are put by this program
//! (`--parallel` uploads at once, default 32; not timed); after each delete the prefix is
//! listed to check that nothing is left. One `BENCH-ROW` per figure (bench `gc`). Needs
//! `bash scripts/pyenv.sh moto` and `… awscli`.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use argoexec_artifacts::{AnyDriver, ArtifactDriver, Settings};
use argoexec_bench::{Row, secs, speed_ratio};
use argoexec_testkit::moto::Moto;

const BUCKET: &str = "gcbench";
const RSS_GOAL_MIB: f64 = 64.0;

struct Args {
    delete: usize,
    list: usize,
    parallel: usize,
}

fn die(m: &str) -> ! {
    eprintln!("gc_bench: {m}");
    std::process::exit(2)
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Args {
    let mut a = Args {
        delete: 10_000,
        list: 100_000,
        parallel: 32,
    };
    while let Some(flag) = it.next() {
        let mut num = || {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| die(&format!("{flag} needs a number")))
        };
        match flag.as_str() {
            "--delete" => a.delete = num(),
            "--list" => a.list = num(),
            "--parallel" => a.parallel = num(),
            other => die(&format!("unknown argument {other}")),
        }
    }
    a
}

/// S3 location JSON for `key` in the bench bucket; the credentials are the mounted secret
/// `moto` under the pod root ([`secrets`]).
fn location(m: &Moto, key: &str) -> String {
    serde_json::json!({"s3": {"endpoint": m.host_port(), "insecure": true, "bucket": BUCKET, "key": key,
        "accessKeySecret": {"name": "moto", "key": "accessKey"},
        "secretKeySecret": {"name": "moto", "key": "secretKey"}}})
    .to_string()
}

/// A pod root whose `/argo/secret/moto` holds moto's key (for this process and, through
/// `ARGOEXEC_PATH_ROOT`, the children).
fn secrets(m: &Moto) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("argo/secret/moto");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("accessKey"), m.access_key()).unwrap();
    std::fs::write(dir.join("secretKey"), m.secret_key()).unwrap();
    root
}

fn driver(loc: &str, root: Option<&Path>, parallelism: usize) -> AnyDriver {
    let loc = serde_json::from_str(loc).unwrap_or_else(|e| die(&format!("bad location: {e}")));
    let mut settings = Settings {
        parallelism,
        ..Settings::from_env().unwrap_or_else(|e| die(&format!("settings: {e}")))
    };
    if let Some(root) = root {
        settings.paths = argoexec_core::PodPaths::new(root);
    }
    AnyDriver::for_location(&loc, &Arc::new(settings)).unwrap_or_else(|e| die(&format!("driver: {e}")))
}

/// The child: `rm` or `ls` one location with the library; prints the count and seconds.
fn child(action: &str, loc: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = driver(loc, None, 8);
    let t = Instant::now();
    let n = rt.block_on(async {
        match action {
            "rm" => d.delete().await.map(|()| 0),
            "ls" => d.list_objects().await.map(|k| k.len()),
            other => die(&format!("--child {other}: rm or ls")),
        }
    });
    match n {
        Ok(n) => println!("{n} {}", t.elapsed().as_secs_f64()),
        Err(e) => die(&format!("{action}: {e}")),
    }
}

/// Put `n` one-byte objects under `prefix/` (`d<i%100>/f<i>`), `parallel` at once.
fn populate(m: &Moto, root: &Path, prefix: &str, n: usize, parallel: usize) {
    let t = Instant::now();
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    for i in 0..n {
        let dir = tmp.path().join(format!("d{:02}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(dir.join(format!("f{i:06}")), b"x").unwrap();
    }
    let d = driver(&location(m, prefix), Some(root), parallel);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(d.save(tmp.path()))
        .unwrap_or_else(|e| die(&format!("populate {prefix}: {e}")));
    eprintln!(
        "gc_bench: put {n} objects under {prefix}/ in {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// How many objects are left under `prefix/` (our listing; NotFound is none).
fn left(m: &Moto, root: &Path, prefix: &str) -> usize {
    let d = driver(&location(m, prefix), Some(root), 8);
    let rt = tokio::runtime::Runtime::new().unwrap();
    match rt.block_on(d.list_objects()) {
        Ok(k) => k.len(),
        Err(e) if e.is_not_found() => 0,
        Err(e) => die(&format!("list {prefix}: {e}")),
    }
}

/// Wall seconds and peak RSS (MiB) of `cmd` under GNU time, and its stdout.
fn timed(cmd: Command, what: &str) -> (f64, f64, String) {
    let out_file = tempfile::NamedTempFile::new().unwrap();
    let mut t = Command::new("/usr/bin/time");
    t.args(["-f", "%e %M", "-o"])
        .arg(out_file.path())
        .arg(cmd.get_program());
    t.args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            t.env(k, v);
        }
    }
    let out = t.output().unwrap_or_else(|e| die(&format!("{what}: {e}")));
    if !out.status.success() {
        die(&format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = std::fs::read_to_string(out_file.path()).unwrap();
    let mut p = text.split_whitespace();
    let s: f64 = p.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
    let kib: f64 = p.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
    (s, kib / 1024.0, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ours(m: &Moto, root: &Path, action: &str, prefix: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--child", action, &location(m, prefix)])
        .env(argoexec_core::paths::ROOT_ENV, root);
    c
}

fn bench_delete(m: &Moto, root: &Path, aws: &Path, a: &Args) {
    let n = a.delete;
    populate(m, root, "ours", n, a.parallel);
    populate(m, root, "aws", n, a.parallel);
    let (o_s, o_rss, _) = timed(ours(m, root, "rm", "ours"), "our delete");
    assert_eq!(left(m, root, "ours"), 0, "our delete left objects");
    let mut c = Command::new(aws);
    c.args([
        "--endpoint-url",
        &m.endpoint(),
        "s3",
        "rm",
        "--recursive",
        "--quiet",
    ])
    .arg(format!("s3://{BUCKET}/aws/"))
    .env("AWS_ACCESS_KEY_ID", m.access_key())
    .env("AWS_SECRET_ACCESS_KEY", m.secret_key())
    .env("AWS_DEFAULT_REGION", "us-east-1");
    let (w_s, w_rss, _) = timed(c, "aws s3 rm");
    assert_eq!(left(m, root, "aws"), 0, "aws s3 rm left objects");
    println!(
        "delete {n} objects: ours {o_s:.2} s ({o_rss:.1} MiB), aws s3 rm --recursive {w_s:.2} s ({w_rss:.1} MiB), {}",
        speed_ratio(o_s, w_s)
    );
    Row::new(
        "gc",
        format!("S3 (moto, auth on): delete a directory artifact of {n} objects (artifact GC)"),
        format!("{}, peak RSS {o_rss:.1} MiB", secs(o_s)),
    )
    .baseline(format!("aws s3 rm --recursive {}, {w_rss:.0} MiB", secs(w_s)))
    .ratio(speed_ratio(o_s, w_s))
    .goal(
        format!("faster, ≤ {RSS_GOAL_MIB:.0} MiB"),
        o_s < w_s && o_rss <= RSS_GOAL_MIB,
    )
    .emit();
}

fn bench_list(m: &Moto, root: &Path, a: &Args) {
    let n = a.list;
    populate(m, root, "many", n, a.parallel);
    let (s, rss, out) = timed(ours(m, root, "ls", "many"), "our listing");
    let listed: usize = out
        .split_whitespace()
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if listed != n {
        die(&format!("listed {listed} keys, put {n}"));
    }
    println!("list {n} keys (list_objects): {s:.2} s, peak RSS {rss:.1} MiB");
    Row::new(
        "gc",
        format!("S3 (moto, auth on): list_objects of {n} keys (data template artifactPaths), full keys"),
        format!("{}, peak RSS {rss:.1} MiB", secs(s)),
    )
    .goal(format!("≤ {RSS_GOAL_MIB:.0} MiB"), rss <= RSS_GOAL_MIB)
    .emit();
}

fn main() {
    let mut argv = std::env::args().skip(1).peekable();
    if argv.peek().map(String::as_str) == Some("--child") {
        let rest: Vec<String> = argv.skip(1).collect();
        let [action, loc] = rest.as_slice() else {
            die("--child rm|ls LOCATION")
        };
        return child(action, loc);
    }
    let a = parse_args(argv);
    let aws = argoexec_testkit::workspace_root().join(".venv-awscli/bin/aws");
    if !aws.exists() {
        die("run `bash scripts/pyenv.sh awscli` first");
    }
    let m = Moto::start(&[BUCKET]);
    let root = secrets(&m);
    if a.delete > 0 {
        bench_delete(&m, root.path(), &aws, &a);
    }
    if a.list > 0 {
        bench_list(&m, root.path(), &a);
    }
}
