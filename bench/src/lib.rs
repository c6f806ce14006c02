//! Shared helpers of the benchmark programs, and the reporter they share: besides its human
//! output, every benchmark prints one machine-readable [`Row`] per figure, a line
//! `BENCH-ROW<TAB>{json}` that `scripts/bench.sh` collects into one table
//! ([`report`] renders it). [`fleet`] runs many steps at once on one local node.

pub mod fleet;
pub mod report;

/// The prefix of a machine-readable line (followed by a tab and one JSON object).
pub const ROW_PREFIX: &str = "BENCH-ROW";

/// One figure of a benchmark: our value, the baseline run beside it, their ratio, the goal
/// from the issues and whether it was met (`None` when no goal applies).
///
/// Built with [`Row::new`] and the setters, printed with [`Row::emit`]:
/// `BENCH-ROW\t{"bench":…,"figure":…,"value":…,"baseline":…,"ratio":…,"goal":…,"met":…}`.
/// Absent fields are JSON `null`. A figure that could not be measured is a
/// [`Row::failed`] row, which also carries `"error"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The benchmark's short name (`archive`, `emissary`, `s3`, …).
    pub bench: String,
    /// What is measured, with its size (e.g. "Save 1024 MiB / 10000 files as tar.gz (level 6)").
    pub figure: String,
    /// Our figure, with its unit.
    pub value: String,
    /// The baseline's figure, naming the baseline.
    pub baseline: Option<String>,
    /// Ours against the baseline ("3.13x faster", "1.22x slower", …).
    pub ratio: Option<String>,
    /// The goal from the issues ("≥ 1.8x", "≤ 64 MiB", …).
    pub goal: Option<String>,
    /// Whether the goal was met; `None` when no goal applies or nothing was measured.
    pub met: Option<bool>,
    /// Why the figure could not be measured (set by [`Row::failed`]).
    pub error: Option<String>,
}

impl Row {
    /// A figure of `bench` with our value; no baseline, ratio or goal yet.
    pub fn new(bench: &str, figure: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            bench: bench.to_string(),
            figure: figure.into(),
            value: value.into(),
            baseline: None,
            ratio: None,
            goal: None,
            met: None,
            error: None,
        }
    }

    /// A figure that could not be measured, with the reason.
    pub fn failed(bench: &str, figure: impl Into<String>, reason: impl Into<String>) -> Self {
        let mut r = Self::new(bench, figure, "failed");
        r.error = Some(reason.into());
        r
    }

    /// Sets the baseline's figure.
    #[must_use]
    pub fn baseline(mut self, baseline: impl Into<String>) -> Self {
        self.baseline = Some(baseline.into());
        self
    }

    /// Sets the ratio of ours to the baseline.
    #[must_use]
    pub fn ratio(mut self, ratio: impl Into<String>) -> Self {
        self.ratio = Some(ratio.into());
        self
    }

    /// Sets the goal and whether it was met.
    #[must_use]
    pub fn goal(mut self, goal: impl Into<String>, met: bool) -> Self {
        self.goal = Some(goal.into());
        self.met = Some(met);
        self
    }

    /// Sets a goal that this run cannot judge (`met` stays `null`).
    #[must_use]
    pub fn goal_unjudged(mut self, goal: impl Into<String>) -> Self {
        self.goal = Some(goal.into());
        self.met = None;
        self
    }

    /// The JSON object of this row.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "bench": self.bench,
            "figure": self.figure,
            "value": self.value,
            "baseline": self.baseline,
            "ratio": self.ratio,
            "goal": self.goal,
            "met": self.met,
        });
        if let Some(e) = &self.error {
            v["error"] = serde_json::Value::from(e.as_str());
        }
        v
    }

    /// Reads a row back from its JSON object (unknown fields are ignored).
    ///
    /// # Errors
    /// When `bench`, `figure` or `value` is missing or not a string.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        let need = |k: &str| {
            v[k].as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("field {k:?} missing or not a string"))
        };
        let opt = |k: &str| v[k].as_str().map(str::to_string);
        Ok(Self {
            bench: need("bench")?,
            figure: need("figure")?,
            value: need("value")?,
            baseline: opt("baseline"),
            ratio: opt("ratio"),
            goal: opt("goal"),
            met: v["met"].as_bool(),
            error: opt("error"),
        })
    }

    /// The machine-readable line: `BENCH-ROW`, a tab, the JSON object on one line.
    /// The fields keep the order above (bench, figure, value, baseline, ratio, goal, met,
    /// error) for people reading the raw lines.
    pub fn line(&self) -> String {
        let v = self.to_json();
        let fields: Vec<String> = [
            "bench", "figure", "value", "baseline", "ratio", "goal", "met", "error",
        ]
        .into_iter()
        .filter(|k| *k != "error" || self.error.is_some())
        .map(|k| format!("{}:{}", serde_json::Value::from(k), v[k]))
        .collect();
        format!("{ROW_PREFIX}\t{{{}}}", fields.join(","))
    }

    /// Parses a line printed by [`Row::line`]; `None` for any other line.
    pub fn parse_line(line: &str) -> Option<Result<Self, String>> {
        let json = line.strip_prefix(ROW_PREFIX)?.strip_prefix('\t')?;
        Some(
            serde_json::from_str::<serde_json::Value>(json)
                .map_err(|e| format!("bad JSON: {e}"))
                .and_then(|v| Self::from_json(&v)),
        )
    }

    /// Prints [`Row::line`] on stdout.
    pub fn emit(&self) {
        println!("{}", self.line());
    }
}

/// Ours against a baseline where lower is better (times): "3.13x faster" when ours is
/// lower, "1.22x slower" when it is higher.
pub fn speed_ratio(ours: f64, baseline: f64) -> String {
    if ours <= baseline {
        format!("{:.2}x faster", baseline / ours)
    } else {
        format!("{:.2}x slower", ours / baseline)
    }
}

/// Seconds with two decimals: "5.88 s".
pub fn secs(s: f64) -> String {
    format!("{s:.2} s")
}

/// Milliseconds with the given decimals: "1.05 ms".
pub fn millis(ms: f64, decimals: usize) -> String {
    format!("{ms:.decimals$} ms")
}

/// A data size for figure names: "1 GiB", "2 GiB", "64 MiB".
pub fn size_label(mib: u64) -> String {
    if mib >= 1024 && mib.is_multiple_of(1024) {
        format!("{} GiB", mib / 1024)
    } else {
        format!("{mib} MiB")
    }
}

/// Run `cmd` to its exit with its output captured; returns how long it took and the output.
///
/// # Errors
/// The command cannot start or exits non-zero: the error names it with its last line of
/// stderr.
pub fn run_timed(
    cmd: &mut std::process::Command,
) -> Result<(std::time::Duration, std::process::Output), String> {
    let t = std::time::Instant::now();
    let out = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    let took = t.elapsed();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!("{cmd:?} failed ({}): {last}", out.status));
    }
    Ok((took, out))
}

/// The Docker CLI (`/usr/bin/docker` when present).
pub fn docker() -> &'static str {
    if std::path::Path::new("/usr/bin/docker").exists() {
        "/usr/bin/docker"
    } else {
        "docker"
    }
}

/// Nanoseconds since the epoch of an RFC 3339 UTC timestamp (`…T…[.frac]Z`).
pub fn parse_ts(s: &str) -> Option<i128> {
    let s = s.trim().trim_end_matches('Z');
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, m, dd) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|x| x.parse::<i64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next()??);
    // Days from civil (H. Hinnant).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + dd - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    let digits: String = frac.chars().take_while(char::is_ascii_digit).take(9).collect();
    let nanos = format!("{digits:0<9}").parse::<i64>().ok()?;
    Some(i128::from(secs) * 1_000_000_000 + i128::from(nanos))
}

/// A private node state directory for `argoexec run --keep` runs (pass [`KeptState::ENV`]
/// = [`KeptState::path`]): `--keep` leaves the pod's volumes there as well as its
/// containers, and [`KeptState::clear`] removes them after each run, so a bench of
/// hundreds of runs leaves nothing behind.
pub struct KeptState(tempfile::TempDir);

impl KeptState {
    /// The variable that points `argoexec run` at a state directory.
    pub const ENV: &'static str = "ARGOEXEC_NODE_STATE_DIR";

    /// A fresh directory under the system's temporary directory.
    ///
    /// # Panics
    /// When it cannot be created.
    pub fn new() -> Self {
        Self(tempfile::tempdir().expect("a node state directory"))
    }

    /// The directory.
    pub fn path(&self) -> &std::path::Path {
        self.0.path()
    }

    /// Remove everything the runs left in it.
    pub fn clear(&self) {
        if let Ok(entries) = std::fs::read_dir(self.path()) {
            for e in entries.flatten() {
                let _ = std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path()));
            }
        }
    }
}

impl Default for KeptState {
    fn default() -> Self {
        Self::new()
    }
}

/// The container ids `argoexec run --keep` printed on stderr ("containers kept: …").
///
/// # Errors
/// When the line is missing.
pub fn kept_ids(stderr: &str) -> Result<Vec<String>, String> {
    Ok(stderr
        .lines()
        .find_map(|l| l.split_once("containers kept: ").map(|(_, r)| r.to_string()))
        .ok_or("no kept containers")?
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// Stdout and stderr of `docker logs <id>`, concatenated.
///
/// # Errors
/// When the Docker CLI cannot run.
pub fn container_logs(id: &str) -> Result<String, String> {
    let logs = std::process::Command::new(docker())
        .args(["logs", id])
        .output()
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&logs.stdout).to_string() + &String::from_utf8_lossy(&logs.stderr))
}

#[cfg(test)]
mod tests {
    use super::{Row, parse_ts, speed_ratio};

    #[test]
    fn rows_round_trip_through_their_line() {
        let r = Row::new("archive", "Save 1 GiB as tar.gz", "5.88 s")
            .baseline("GNU tar -czf 18.41 s")
            .ratio("3.13x faster")
            .goal("≥ 1.8x", true);
        let line = r.line();
        assert!(line.starts_with("BENCH-ROW\t{\"bench\":\"archive\",\"figure\":"));
        assert!(line.ends_with(",\"goal\":\"≥ 1.8x\",\"met\":true}"));
        assert!(!line.trim_end().contains('\n'));
        assert_eq!(Row::parse_line(&line), Some(Ok(r)));
        let f = Row::failed("s3", "upload", "moto did not start\nsecond line");
        let back = Row::parse_line(&f.line()).unwrap().unwrap();
        assert_eq!(back.value, "failed");
        assert_eq!(back.met, None);
        assert_eq!(back.error.as_deref(), Some("moto did not start\nsecond line"));
        assert_eq!(Row::parse_line("run 1: ours 2.0s"), None);
        assert!(matches!(
            Row::parse_line("BENCH-ROW\t{\"bench\":1}"),
            Some(Err(_))
        ));
    }

    #[test]
    fn speed_ratios() {
        assert_eq!(speed_ratio(5.88, 18.41), "3.13x faster");
        assert_eq!(speed_ratio(21.29, 17.42), "1.22x slower");
        assert_eq!(speed_ratio(2.0, 2.0), "1.00x faster");
        assert_eq!(super::size_label(1024), "1 GiB");
        assert_eq!(super::size_label(64), "64 MiB");
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_ts("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        let a = parse_ts("2026-12-02T21:10:00.123456789Z").unwrap();
        let b = parse_ts("2026-12-02T21:10:00.123457Z").unwrap();
        assert_eq!(b - a, 211);
        assert_eq!(
            parse_ts("2000-03-01T00:00:00Z"),
            Some(951_868_800 * 1_000_000_000)
        );
    }
}
