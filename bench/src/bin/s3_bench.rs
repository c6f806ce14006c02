//! S3 transfer figures (printed, not asserted): `argoexec artifact put/get` against the AWS
//! CLI (`aws s3 cp` / `aws s3 sync`, from the pinned `.venv-awscli`) on the same data, the
//! same moto server (signature checking on) and the same run, side by side.
//!
//! Usage: `s3_bench [ARGOEXEC_BINARY] [--size-mib N] [--files N] [--runs N] [--only upload]`
//! (`--only upload`: the single-file upload case alone; defaults:
//! `target/static/x86_64-unknown-linux-gnu/release/argoexec.stripped`, 2048 MiB, 10 000
//! files of 4 KiB, 1 run; the median is printed). Wall time and peak RSS of each command
//! come from GNU `time -f "%e %M"`. Every download is compared byte for byte (`cmp -s`,
//! `diff -r`) with the source. Needs `bash scripts/pyenv.sh moto` and `… awscli`.
//! `--size-mib`, `--files` and `--runs` are the size and run-count knobs. Every command
//! starts after a `sync`; the single-file upload alternates which tool goes first. Besides the table,
//! one `BENCH-ROW` line per case as soon as it is measured (bench `s3`; goals: faster than
//! the AWS CLI, and for the single file a peak RSS ≤ 128 MiB).

use std::path::{Path, PathBuf};
use std::process::Command;

use argoexec_bench::{Row, secs as fmt_secs, size_label, speed_ratio};
use argoexec_testkit::moto::Moto;

const BUCKET: &str = "bench";

struct Args {
    bin: String,
    size_mib: u64,
    files: usize,
    runs: usize,
    upload_only: bool,
}

fn die(m: &str) -> ! {
    eprintln!("s3_bench: {m}");
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        bin: "target/static/x86_64-unknown-linux-gnu/release/argoexec.stripped".into(),
        size_mib: 2048,
        files: 10_000,
        runs: 1,
        upload_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| die(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--size-mib" => a.size_mib = val().parse().unwrap_or_else(|_| die("bad --size-mib")),
            "--files" => a.files = val().parse().unwrap_or_else(|_| die("bad --files")),
            "--runs" => a.runs = val().parse().unwrap_or_else(|_| die("bad --runs")),
            "--only" => match val().as_str() {
                "upload" => a.upload_only = true,
                other => die(&format!("--only {other}: only `upload` is known")),
            },
            other if !other.starts_with('-') => a.bin = other.into(),
            other => die(&format!("unknown flag {other}")),
        }
    }
    a.runs = a.runs.max(1);
    a
}

/// Pseudo-random bytes (xorshift), fast to make and incompressible.
fn fill(path: &Path, bytes: u64, seed: u64) {
    use std::io::Write;
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut x = seed | 1;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for c in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n]).unwrap();
        left -= n as u64;
    }
    f.flush().unwrap();
}

/// Run under GNU time; returns (seconds, peak RSS MiB).
/// Wall time (s) and peak RSS (MiB) of `cmd`. Dirty pages are flushed first (`sync`, not
/// timed), so neither tool pays for the writeback of the fixtures or of the other's run.
fn timed(cmd: Command, what: &str) -> (f64, f64) {
    let _ = Command::new("sync").status();
    let out_file = tempfile::NamedTempFile::new().unwrap();
    let prog = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
    let envs: Vec<_> = cmd
        .get_envs()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned())))
        .collect();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%e %M", "-o"])
        .arg(out_file.path())
        .arg(prog)
        .args(args)
        .envs(envs)
        .output()
        .unwrap();
    if !out.status.success() {
        die(&format!(
            "{what} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let t = std::fs::read_to_string(out_file.path()).unwrap();
    let mut p = t.split_whitespace();
    let secs: f64 = p.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
    let kib: f64 = p.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
    (secs, kib / 1024.0)
}

fn median(mut v: Vec<(f64, f64)>) -> (f64, f64) {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v[v.len() / 2]
}

struct Case {
    name: String,
    ours: (f64, f64),
    aws: (f64, f64),
}

fn same(a: &Path, b: &Path) {
    let ok = Command::new("diff")
        .arg("-rq")
        .arg(a)
        .arg(b)
        .status()
        .unwrap()
        .success();
    if !ok {
        die(&format!("{} and {} differ", a.display(), b.display()));
    }
}

fn main() {
    let a = parse_args();
    let root = argoexec_testkit::workspace_root();
    let aws_bin = root.join(".venv-awscli/bin/aws");
    if !aws_bin.exists() {
        die("run `bash scripts/pyenv.sh awscli` first");
    }
    let m = Moto::start(&[BUCKET]);
    let work = tempfile::tempdir_in("/tmp").unwrap();
    let big = work.path().join("big.bin");
    fill(&big, a.size_mib << 20, 7);
    let tree = work.path().join("tree");
    for i in 0..a.files {
        let d = tree.join(format!("d{:02}", i % 100));
        std::fs::create_dir_all(&d).unwrap();
        fill(&d.join(format!("f{i:05}")), 4096, i as u64 + 1);
    }
    let loc = |key: &str| {
        format!(
            r#"{{"s3": {{"endpoint": "{}", "insecure": true, "bucket": "{BUCKET}", "key": "{key}"}}}}"#,
            m.host_port()
        )
    };
    let env = [
        ("AWS_ACCESS_KEY_ID", m.access_key().to_string()),
        ("AWS_SECRET_ACCESS_KEY", m.secret_key().to_string()),
        ("AWS_DEFAULT_REGION", "us-east-1".to_string()),
    ];
    let ours = |args: &[&str], p: &Path| {
        let mut c = Command::new(&a.bin);
        c.arg("artifact")
            .args(args)
            .arg(p)
            .envs(env.iter().map(|(k, v)| (*k, v)));
        c
    };
    let aws = |args: &[&str]| {
        let mut c = Command::new(&aws_bin);
        c.args(["--endpoint-url", &m.endpoint(), "s3"]).args(args);
        c.envs(env.iter().map(|(k, v)| (*k, v)));
        c
    };
    let rm = |key: &str| {
        let _ = Command::new(&a.bin)
            .args(["artifact", "rm", &loc(key)])
            .envs(env.iter().map(|(k, v)| (*k, v)))
            .output();
    };
    let mut cases: Vec<Case> = Vec::new();
    let mut run_case =
        |name: String, rss_cap: Option<f64>, f: &mut dyn FnMut(usize) -> ((f64, f64), (f64, f64))| {
            let (mut o, mut w) = (Vec::new(), Vec::new());
            for i in 0..a.runs {
                let (x, y) = f(i);
                o.push(x);
                w.push(y);
            }
            let c = Case {
                name,
                ours: median(o),
                aws: median(w),
            };
            emit_row(&c, a.runs, rss_cap);
            cases.push(c);
        };
    let s3url = |k: &str| format!("s3://{BUCKET}/{k}");
    let out: PathBuf = work.path().join("out");
    run_case(
        format!("upload a {} file", size_label(a.size_mib)),
        Some(128.0),
        &mut |i| {
            rm("ours/big");
            rm("aws/big");
            let o = || timed(ours(&["put", &loc("ours/big")], &big), "ours put");
            let w = || {
                timed(
                    aws(&["cp", "--quiet", big.to_str().unwrap(), &s3url("aws/big")]),
                    "aws cp up",
                )
            };
            // Odd runs go AWS CLI first, so the order (moto's growing store) evens out.
            if i % 2 == 0 {
                (o(), w())
            } else {
                let w = w();
                (o(), w)
            }
        },
    );
    if a.upload_only {
        print_table(&cases, a.runs);
        return;
    }
    run_case(
        format!("download the {} file", size_label(a.size_mib)),
        Some(128.0),
        &mut |_| {
            let _ = std::fs::remove_file(&out);
            let o = timed(ours(&["get", &loc("ours/big")], &out), "ours get");
            same(&big, &out);
            std::fs::remove_file(&out).unwrap();
            let w = timed(
                aws(&["cp", "--quiet", &s3url("aws/big"), out.to_str().unwrap()]),
                "aws cp down",
            );
            same(&big, &out);
            std::fs::remove_file(&out).unwrap();
            (o, w)
        },
    );
    rm("ours/big");
    rm("aws/big");
    run_case(format!("upload a {}-file directory", a.files), None, &mut |_| {
        rm("ours/tree");
        rm("aws/tree");
        let o = timed(
            ours(&["put", &loc("ours/tree"), "--archive", "none"], &tree),
            "ours put dir",
        );
        let w = timed(
            aws(&["sync", "--quiet", tree.to_str().unwrap(), &s3url("aws/tree")]),
            "aws sync up",
        );
        (o, w)
    });
    run_case(
        format!("download the {}-file directory", a.files),
        None,
        &mut |_| {
            let _ = std::fs::remove_dir_all(&out);
            let o = timed(ours(&["get", &loc("ours/tree")], &out), "ours get dir");
            same(&tree, &out);
            std::fs::remove_dir_all(&out).unwrap();
            let w = timed(
                aws(&["sync", "--quiet", &s3url("aws/tree"), out.to_str().unwrap()]),
                "aws sync down",
            );
            same(&tree, &out);
            std::fs::remove_dir_all(&out).unwrap();
            (o, w)
        },
    );
    print_table(&cases, a.runs);
}

/// The `BENCH-ROW` line of one case: faster than the AWS CLI (and, with `rss_cap`, a peak
/// RSS at most that many MiB).
fn emit_row(c: &Case, runs: usize, rss_cap: Option<f64>) {
    let (goal, met) = match rss_cap {
        Some(cap) => (
            format!("faster, ≤ {cap:.0} MiB"),
            c.ours.0 < c.aws.0 && c.ours.1 <= cap,
        ),
        None => ("faster".to_string(), c.ours.0 < c.aws.0),
    };
    let aws = if c.name.contains("directory") {
        "aws s3 sync"
    } else {
        "aws s3 cp"
    };
    Row::new(
        "s3",
        format!("S3 (moto, auth on): {}, median of {runs}", c.name),
        format!("{}, peak RSS {:.0} MiB", fmt_secs(c.ours.0), c.ours.1),
    )
    .baseline(format!("{aws} {}, {:.0} MiB", fmt_secs(c.aws.0), c.aws.1))
    .ratio(speed_ratio(c.ours.0, c.aws.0))
    .goal(goal, met)
    .emit();
}

fn print_table(cases: &[Case], runs: usize) {
    println!(
        "S3 transfers to moto on 127.0.0.1 ({} cores), median of {} run(s)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        runs
    );
    println!("| case | argoexec | peak RSS | aws cli | peak RSS | time ratio (ours/aws) |");
    println!("|---|---|---|---|---|---|");
    for c in cases {
        println!(
            "| {} | {:.2} s | {:.0} MiB | {:.2} s | {:.0} MiB | {:.2}× |",
            c.name,
            c.ours.0,
            c.ours.1,
            c.aws.0,
            c.aws.1,
            c.ours.0 / c.aws.0
        );
    }
}
