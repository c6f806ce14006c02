//! Shared helpers of the benchmark programs.

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
    use super::parse_ts;

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
