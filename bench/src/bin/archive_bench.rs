//! tar.gz writer figures (printed, not asserted): `argoexec_archive::write_tar_gz` against
//! GNU `tar -czf` and `tar -cf - | pigz -p 2` on the same generated data set.
//!
//! Usage: `archive_bench [--size-mib N] [--files N] [--dir PATH] [--runs N] [--level L]`
//! (defaults: 1024 MiB in 10000 files, a temp dir under /tmp, 1 run, level 6). The data set
//! is generated once per `--dir` (reused when its marker matches) and mixes pseudo-random
//! bytes with repetitive text so gzip's ratio is a realistic 2–3×. Ours runs in a child
//! process of this binary (`--child-ours SRC OUT LEVEL`) that reports its own peak RSS
//! (VmHWM). Every archive is listed with GNU `tar -tzf` to check the entry counts agree.
//! Besides the table, one `BENCH-ROW` line per README figure (bench `archive`): ours vs GNU
//! tar (goal ≥ 1.8x), vs pigz (goal ≥ 0.9x) and our peak RSS (goal ≤ 64 MiB).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use argoexec_bench::{Row as Figure, secs as fmt_secs, size_label, speed_ratio};

struct Args {
    size_mib: u64,
    files: u64,
    dir: Option<PathBuf>,
    runs: usize,
    level: u32,
}

fn parse_args() -> Args {
    let mut a = Args {
        size_mib: 1024,
        files: 10_000,
        dir: None,
        runs: 1,
        level: 6,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| die(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--size-mib" => a.size_mib = val().parse().unwrap_or_else(|_| die("bad --size-mib")),
            "--files" => a.files = val().parse().unwrap_or_else(|_| die("bad --files")),
            "--dir" => a.dir = Some(PathBuf::from(val())),
            "--runs" => a.runs = val().parse().unwrap_or_else(|_| die("bad --runs")),
            "--level" => a.level = val().parse().unwrap_or_else(|_| die("bad --level")),
            _ => die(&format!("unknown argument {flag}")),
        }
    }
    a.files = a.files.max(1);
    a.runs = a.runs.max(1);
    a
}

fn die(msg: &str) -> ! {
    eprintln!("archive_bench: {msg}");
    std::process::exit(2)
}

/// The child: archive SRC to OUT with our writer, print bytes and peak RSS.
fn child_ours(src: &str, out: &str, level: &str) {
    let level: u32 = level.parse().unwrap_or(6);
    let f = fs::File::create(out).unwrap_or_else(|e| die(&format!("create {out}: {e}")));
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let n = argoexec_archive::write_tar_gz(Path::new(src), &mut w, Some(level))
        .unwrap_or_else(|e| die(&format!("write_tar_gz: {e}")));
    w.flush().unwrap_or_else(|e| die(&format!("flush: {e}")));
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    println!("tar_bytes={n} hwm_kib={hwm_kib}");
}

/// xorshift64 pseudo-random bytes.
struct Rng(u64);

impl Rng {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            chunk.copy_from_slice(&self.0.to_le_bytes()[..chunk.len()]);
        }
    }
}

/// Generate `files` files totalling `size_mib` under `dir/data` (100 per subdirectory).
fn generate(data: &Path, size_mib: u64, files: u64) -> std::io::Result<()> {
    let marker = data.join(".bench-marker");
    let want = format!("{size_mib} {files} v1");
    if fs::read_to_string(&marker).is_ok_and(|m| m == want) {
        println!("reusing data set in {}", data.display());
        return Ok(());
    }
    if data.exists() {
        fs::remove_dir_all(data)?;
    }
    let t = Instant::now();
    let total = size_mib << 20;
    let per_file = total / files;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut random = vec![0u8; 16 * 1024];
    for i in 0..files {
        let sub = data.join(format!("d{:04}", i / 100));
        if i % 100 == 0 {
            fs::create_dir_all(&sub)?;
        }
        let size = if i == files - 1 {
            total - per_file * (files - 1)
        } else {
            per_file
        };
        let mut w = BufWriter::with_capacity(256 * 1024, fs::File::create(sub.join(format!("f{i:06}.dat")))?);
        let mut written = 0u64;
        let mut line = 0u64;
        while written < size {
            // ~40% incompressible, ~60% log-like text
            let mut block = Vec::with_capacity(40 * 1024);
            rng.fill(&mut random);
            block.extend_from_slice(&random);
            while block.len() < 40 * 1024 {
                line += 1;
                let _ = writeln!(
                    block,
                    "{line:08} INFO step=main file={i} msg=\"processing item {}\"",
                    line % 97
                );
            }
            let n = block
                .len()
                .min(usize::try_from(size - written).unwrap_or(usize::MAX));
            w.write_all(&block[..n])?;
            written += n as u64;
        }
        w.flush()?;
    }
    fs::write(&marker, want)?;
    println!(
        "generated {size_mib} MiB in {files} files in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Entry count of a .tgz as GNU tar lists it.
fn gnu_list_count(tgz: &Path) -> Option<usize> {
    let out = Command::new("tar")
        .arg("-tzf")
        .arg(tgz)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| {
        out.stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    })
}

struct Row {
    tool: &'static str,
    secs: f64,
    out_bytes: u64,
    rss_mib: Option<f64>,
}

fn best_of(runs: usize, mut f: impl FnMut() -> Option<f64>) -> Option<f64> {
    (0..runs).filter_map(|_| f()).min_by(f64::total_cmp)
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--child-ours") && argv.len() == 5 {
        child_ours(&argv[2], &argv[3], &argv[4]);
        return;
    }
    let args = parse_args();
    let _tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            _tmp = tempfile::Builder::new()
                .prefix("archive-bench")
                .tempdir_in("/tmp")
                .unwrap_or_else(|e| die(&e.to_string()));
            _tmp.path().to_path_buf()
        }
    };
    let data = dir.join("data");
    generate(&data, args.size_mib, args.files).unwrap_or_else(|e| die(&format!("generate: {e}")));
    let src_bytes = (args.size_mib << 20) as f64;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "data set: {} MiB in {} files, {cpus} CPUs, gzip level {}, best of {} run(s)",
        args.size_mib, args.files, args.level, args.runs
    );

    let me = std::env::current_exe().unwrap_or_else(|e| die(&e.to_string()));
    let ours_out = dir.join("ours.tgz");
    let gnu_out = dir.join("gnu.tgz");
    let pigz_out = dir.join("pigz.tgz");
    let mut rows = Vec::new();

    let mut rss = None;
    let ours = best_of(args.runs, || {
        let t = Instant::now();
        let out = Command::new(&me)
            .arg("--child-ours")
            .arg(&data)
            .arg(&ours_out)
            .arg(args.level.to_string())
            .output()
            .ok()?;
        let secs = t.elapsed().as_secs_f64();
        if !out.status.success() {
            eprintln!("ours failed: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let hwm = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("hwm_kib="))
            .and_then(|v| v.parse::<f64>().ok());
        rss = hwm.map(|k| k / 1024.0);
        Some(secs)
    });
    if let Some(secs) = ours {
        rows.push(Row {
            tool: "argoexec write_tar_gz",
            secs,
            out_bytes: size(&ours_out),
            rss_mib: rss,
        });
    }

    let parent = data.parent().unwrap_or(Path::new("/"));
    let gnu = best_of(args.runs, || {
        let t = Instant::now();
        let mut cmd = Command::new("tar");
        if args.level == 6 {
            cmd.arg("-z"); // gzip's default level
        } else {
            cmd.arg("-I").arg(format!("gzip -{}", args.level));
        }
        let st = cmd
            .arg("-cf")
            .arg(&gnu_out)
            .arg("-C")
            .arg(parent)
            .arg("data")
            .status()
            .ok()?;
        st.success().then(|| t.elapsed().as_secs_f64())
    });
    match gnu {
        Some(secs) => rows.push(Row {
            tool: "GNU tar -czf",
            secs,
            out_bytes: size(&gnu_out),
            rss_mib: None,
        }),
        None => println!("GNU tar failed or is not installed"),
    }

    let have_pigz = Command::new("pigz")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    let pigz = if have_pigz {
        best_of(args.runs, || {
            let t = Instant::now();
            let script = format!(
                "tar -cf - -C '{}' data | pigz -{} -p 2 > '{}'",
                parent.display(),
                args.level,
                pigz_out.display()
            );
            let st = Command::new("sh").arg("-c").arg(script).status().ok()?;
            st.success().then(|| t.elapsed().as_secs_f64())
        })
    } else {
        println!("pigz not installed");
        None
    };
    if let Some(secs) = pigz {
        rows.push(Row {
            tool: "tar -cf - | pigz -p 2",
            secs,
            out_bytes: size(&pigz_out),
            rss_mib: None,
        });
    }

    println!();
    println!(
        "{:<24} {:>8} {:>9} {:>12} {:>7} {:>11} {:>11} {:>9}",
        "tool", "seconds", "MiB/s", "output MiB", "ratio", "vs GNU tar", "vs pigz", "peak RSS"
    );
    for r in &rows {
        let vs = |base: Option<f64>| base.map_or("-".to_string(), |b| format!("{:.2}x", b / r.secs));
        println!(
            "{:<24} {:>8.2} {:>9.1} {:>12.1} {:>7.2} {:>11} {:>11} {:>9}",
            r.tool,
            r.secs,
            src_bytes / (1 << 20) as f64 / r.secs,
            r.out_bytes as f64 / (1 << 20) as f64,
            src_bytes / r.out_bytes.max(1) as f64,
            vs(gnu),
            vs(pigz),
            r.rss_mib.map_or("-".to_string(), |m| format!("{m:.1} MiB")),
        );
    }
    println!(
        "(\"vs X\" = X's seconds / this row's seconds: above 1 is faster than X; ratio = input / output size)"
    );

    if ours.is_some() {
        match (
            gnu_list_count(&ours_out),
            gnu.and_then(|_| gnu_list_count(&gnu_out)),
        ) {
            (Some(a), Some(b)) => println!(
                "GNU tar -tzf entries: ours {a}, GNU tar's {b} -> {}",
                if a == b { "match" } else { "MISMATCH" }
            ),
            (a, b) => println!("GNU tar -tzf entries: ours {a:?}, GNU tar's {b:?}"),
        }
    }
    for p in [&ours_out, &gnu_out, &pigz_out] {
        let _ = fs::remove_file(p);
    }
    emit_rows(&args, ours, gnu, pigz, rss);
}

/// The `BENCH-ROW` lines of the README's figures.
fn emit_rows(args: &Args, ours: Option<f64>, gnu: Option<f64>, pigz: Option<f64>, rss: Option<f64>) {
    let figure = format!(
        "Save {} / {} files as tar.gz (level {})",
        size_label(args.size_mib),
        args.files,
        args.level
    );
    let Some(o) = ours else {
        Figure::failed("archive", figure, "our writer failed (see its output)").emit();
        return;
    };
    let mib_s = args.size_mib as f64 / o;
    let value = format!("{} ({mib_s:.0} MiB/s)", fmt_secs(o));
    for (base, name, goal, min) in [
        (gnu, "GNU tar -czf", "≥ 1.8x", 1.8),
        (pigz, "tar -cf - | pigz -p 2", "≥ 0.9x", 0.9),
    ] {
        let row = Figure::new("archive", format!("{figure} vs {name}"), value.clone());
        match base {
            Some(b) => row
                .baseline(format!("{name} {}", fmt_secs(b)))
                .ratio(speed_ratio(o, b))
                .goal(goal, b / o >= min),
            None => row
                .baseline(format!("{name}: failed or not installed"))
                .goal_unjudged(goal),
        }
        .emit();
    }
    let figure = format!("{figure}, our peak RSS");
    match rss {
        Some(m) => Figure::new("archive", figure, format!("{m:.1} MiB")).goal("≤ 64 MiB", m <= 64.0),
        None => Figure::failed("archive", figure, "the child printed no VmHWM"),
    }
    .emit();
}

fn size(p: &Path) -> u64 {
    fs::metadata(p).map_or(0, |m| m.len())
}
