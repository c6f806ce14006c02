//! Emissary wrapper figures (printed, not asserted), of the per-pod copy (`argoexec-emissary`):
//! * latency, over N runs (`--runs N`, default 200) of `argoexec-emissary emissary -- /bin/sh -c ': > t'`, from the wrapper's
//!   start and from the child's last action (closing `t`, seen by inotify) to the `exitcode`
//!   file appearing (seen by the same inotify instance in this process); the same child run
//!   without the wrapper as a baseline;
//! * the wrapper's VmRSS / VmHWM while its child sleeps;
//! * the size of `target/release/argoexec` and of the stripped static binary
//!   (`$ARGOEXEC_STATIC_BIN`, else `target/static/<arch>-unknown-linux-gnu/release/argoexec`).
//!
//! Usage: `emissary_bench [--runs N]`. The wrapper is `argoexec-emissary` beside
//! `$ARGOEXEC_BIN`, else in `target/release`, else in `target/debug`. Besides the human output, one
//! `BENCH-ROW` line per README figure (bench `emissary`).
//! inotify is used through libc (the bench crate has no nix/inotify dependency).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use argoexec_bench::{Row, millis};

const DEFAULT_RUNS: usize = 200;
const TEMPLATE: &str = r#"{"name":"bench","container":{"image":"x"}}"#;

/// A minimal inotify reader over libc.
mod ino {
    use std::ffi::CString;
    use std::fs::File;
    use std::io::{self, Read};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// One event: watch descriptor, mask, name, and when this process read it.
    pub struct Event {
        pub wd: i32,
        pub name: String,
        pub at: Instant,
    }

    pub struct Inotify {
        file: File,
        buf: Vec<u8>,
    }

    impl Inotify {
        #[allow(unsafe_code)]
        pub fn new() -> io::Result<Self> {
            // SAFETY: inotify_init1 takes flags only and returns a new descriptor or -1.
            let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
            let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
            Ok(Self {
                file,
                buf: vec![0; 4096],
            })
        }

        #[allow(unsafe_code)]
        pub fn watch(&self, dir: &Path, mask: u32) -> io::Result<i32> {
            let c = CString::new(dir.as_os_str().as_bytes()).map_err(io::Error::other)?;
            // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
            let wd = unsafe { libc::inotify_add_watch(self.file.as_raw_fd(), c.as_ptr(), mask) };
            if wd < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(wd)
            }
        }

        /// Wait up to `timeout` for the next batch of events.
        #[allow(unsafe_code)]
        pub fn next(&mut self, timeout: Duration) -> io::Result<Vec<Event>> {
            let mut p = libc::pollfd {
                fd: self.file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `p` is one valid pollfd living on the stack for the duration of the call.
            let n = unsafe { libc::poll(&mut p, 1, timeout.as_millis() as i32) };
            if n <= 0 {
                return Ok(Vec::new());
            }
            let len = self.file.read(&mut self.buf)?;
            let at = Instant::now();
            let mut out = Vec::new();
            let mut i = 0;
            while i + 16 <= len {
                let word = |o: usize| u32::from_ne_bytes(self.buf[i + o..i + o + 4].try_into().unwrap());
                let (wd, name_len) = (word(0) as i32, word(12) as usize);
                let raw = &self.buf[i + 16..i + 16 + name_len];
                let name = String::from_utf8_lossy(raw.split(|b| *b == 0).next().unwrap_or(&[])).into_owned();
                out.push(Event { wd, name, at });
                i += 16 + name_len;
            }
            Ok(out)
        }
    }
}

/// The wrapper under test: the per-pod copy, `argoexec-emissary`, beside `$ARGOEXEC_BIN` or in
/// `target/release` (else `target/debug`).
fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("ARGOEXEC_BIN") {
        return PathBuf::from(p).with_file_name("argoexec-emissary");
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    for profile in ["release", "debug"] {
        let p = target.join(profile).join("argoexec-emissary");
        if p.exists() {
            return p;
        }
    }
    panic!("no argoexec-emissary: build it (cargo build --release -p argoexec-emissary) or set ARGOEXEC_BIN");
}

fn pct(v: &mut [Duration], p: usize) -> f64 {
    v.sort();
    let i = (v.len() * p / 100).min(v.len() - 1);
    v[i].as_secs_f64() * 1e3
}

fn wrapper(bin: &Path, root: &Path, work: &Path, script: &str) -> Command {
    let mut c = Command::new(bin);
    c.args(["emissary", "--", "/bin/sh", "-c", script])
        .current_dir(work)
        .env("ARGOEXEC_PATH_ROOT", root)
        .env("ARGO_CONTAINER_NAME", "main")
        .env("ARGO_TEMPLATE", TEMPLATE)
        .env_remove("ARGO_INCLUDE_SCRIPT_OUTPUT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn status_field(pid: u32, field: &str) -> String {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .map(|l| l[field.len()..].trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// `--runs N` (default 200), at least 1.
fn runs() -> usize {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => DEFAULT_RUNS,
        ["--runs", n] => n.parse::<usize>().map_or_else(
            |_| {
                eprintln!("emissary_bench: bad --runs {n}");
                std::process::exit(2)
            },
            |n| n.max(1),
        ),
        _ => {
            eprintln!("usage: emissary_bench [--runs N]");
            std::process::exit(2)
        }
    }
}

/// A `/proc/<pid>/status` size field ("4812 kB") in MiB.
fn kb_to_mib(field: &str) -> Option<f64> {
    field
        .trim_end_matches("kB")
        .trim()
        .parse::<f64>()
        .ok()
        .map(|k| k / 1024.0)
}

fn main() {
    let runs = runs();
    let bin = binary();
    println!("binary: {}", bin.display());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let work = root.join("work");
    fs::create_dir_all(&work).unwrap();
    let paths = argoexec_core::PodPaths::new(root);
    let ctr = paths.ctr_dir("main");
    fs::create_dir_all(&ctr).unwrap();
    let mut ino = ino::Inotify::new().expect("inotify");
    let mask = libc::IN_CLOSE_WRITE | libc::IN_MOVED_TO;
    let ctr_wd = ino.watch(&ctr, mask).unwrap();
    let work_wd = ino.watch(&work, mask).unwrap();

    let (mut start_to_exitcode, mut child_to_exitcode, mut start_to_exit, mut baseline) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let _ = fs::remove_file(paths.exitcode_file("main"));
        let _ = fs::remove_file(work.join("t"));
        let t0 = Instant::now();
        let mut child = wrapper(&bin, root, &work, ": > t").spawn().unwrap();
        let (mut t_evt, mut ec_evt) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(10);
        while ec_evt.is_none() && Instant::now() < deadline {
            for e in ino.next(Duration::from_secs(1)).unwrap() {
                if e.wd == work_wd && e.name == "t" {
                    t_evt.get_or_insert(e.at);
                } else if e.wd == ctr_wd && e.name == "exitcode" {
                    ec_evt.get_or_insert(e.at);
                }
            }
        }
        child.wait().unwrap();
        start_to_exit.push(t0.elapsed());
        let ec = ec_evt.expect("exitcode file never appeared");
        start_to_exitcode.push(ec - t0);
        if let Some(t) = t_evt {
            child_to_exitcode.push(ec.saturating_duration_since(t));
        }
        // Drain stray events of this run (temporary files, late closes).
        while !ino.next(Duration::ZERO).unwrap().is_empty() {}
    }
    for _ in 0..runs {
        let t0 = Instant::now();
        Command::new("/bin/sh")
            .args(["-c", ": > t"])
            .current_dir(&work)
            .status()
            .unwrap();
        baseline.push(t0.elapsed());
        while !ino.next(Duration::ZERO).unwrap().is_empty() {}
    }
    println!("runs: {runs}");
    let (start50, start99) = (pct(&mut start_to_exitcode, 50), pct(&mut start_to_exitcode, 99));
    println!("wrapper start -> exitcode visible:  p50 {start50:.2} ms  p99 {start99:.2} ms");
    let child_lat = if child_to_exitcode.is_empty() {
        None
    } else {
        Some((pct(&mut child_to_exitcode, 50), pct(&mut child_to_exitcode, 99)))
    };
    if let Some((c50, c99)) = child_lat {
        println!(
            "child last write -> exitcode visible: p50 {c50:.2} ms  p99 {c99:.2} ms  ({} samples)",
            child_to_exitcode.len()
        );
    }
    println!(
        "wrapper start -> wrapper exit:        p50 {:.2} ms  p99 {:.2} ms",
        pct(&mut start_to_exit, 50),
        pct(&mut start_to_exit, 99)
    );
    let base50 = pct(&mut baseline, 50);
    println!(
        "baseline sh -c ': > t' (no wrapper):  p50 {base50:.2} ms  p99 {:.2} ms",
        pct(&mut baseline, 99)
    );
    let pair = |a: f64, b: f64| format!("p50 {}, p99 {}", millis(a, 2), millis(b, 2));
    let figure = format!("child's last write → exitcode seen by an inotify watcher, {runs} runs");
    match child_lat {
        Some((c50, c99)) => Row::new("emissary", figure, pair(c50, c99))
            .baseline("Argo v3.3: 1 s poll")
            .goal("≤ 5 ms p50", c50 <= 5.0),
        None => Row::failed("emissary", figure, "inotify never saw the child's write"),
    }
    .emit();
    Row::new(
        "emissary",
        format!("wrapper start → exitcode visible (sh -c ': > t'), {runs} runs"),
        pair(start50, start99),
    )
    .baseline(format!("bare sh p50 {}", millis(base50, 2)))
    .emit();

    // Memory while the child sleeps.
    let _ = fs::remove_file(work.join("ready"));
    let mut child = wrapper(&bin, root, &work, ": > ready; exec sleep 1")
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    'ready: while Instant::now() < deadline {
        for e in ino.next(Duration::from_secs(1)).unwrap() {
            if e.wd == work_wd && e.name == "ready" {
                break 'ready;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    let (rss, hwm, anon) = (
        status_field(child.id(), "VmRSS:"),
        status_field(child.id(), "VmHWM:"),
        status_field(child.id(), "RssAnon:"),
    );
    println!("wrapper memory while the child sleeps: VmRSS {rss}  VmHWM {hwm}  RssAnon {anon}");
    child.wait().unwrap();
    let figure = "wrapper RSS while the child runs";
    match (kb_to_mib(&rss), kb_to_mib(&anon)) {
        (Some(r), a) => Row::new(
            "emissary",
            figure,
            format!(
                "{r:.1} MiB ({} anonymous)",
                a.map_or("?".into(), |a| format!("{a:.1} MiB"))
            ),
        )
        .goal("≤ 3 MiB", r <= 3.0),
        (None, _) => Row::failed("emissary", figure, format!("no VmRSS read ({rss})")),
    }
    .emit();

    let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/argoexec");
    let figure = "release binary size (dynamically linked)";
    match fs::metadata(&release) {
        Ok(m) => {
            let mib = m.len() as f64 / 1048576.0;
            println!("release binary size: {mib:.2} MiB ({} bytes)", m.len());
            Row::new("emissary", figure, format!("{mib:.2} MiB")).emit();
        }
        Err(_) => {
            println!("release binary size: n/a (no target/release/argoexec)");
            Row::failed("emissary", figure, "no target/release/argoexec").emit();
        }
    }
    let static_bin = std::env::var_os("ARGOEXEC_STATIC_BIN").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
                "../target/static/{}-unknown-linux-gnu/release/argoexec",
                std::env::consts::ARCH
            ))
        },
        PathBuf::from,
    );
    let figure = "static release binary, stripped (scripts/build-static.sh)";
    match fs::metadata(&static_bin) {
        Ok(m) => {
            let mb = m.len() as f64 / 1e6;
            println!("static stripped binary size: {mb:.1} MB ({} bytes)", m.len());
            Row::new("emissary", figure, format!("{mb:.1} MB"))
                .goal("≤ 15 MB", mb <= 15.0)
                .emit();
        }
        Err(e) => {
            println!("static stripped binary size: n/a ({}: {e})", static_bin.display());
            Row::failed("emissary", figure, format!("{}: {e}", static_bin.display())).emit();
        }
    }
}
