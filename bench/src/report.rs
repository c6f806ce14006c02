//! The one table of `scripts/bench.sh`: reads the `BENCH-ROW` lines every benchmark printed
//! and renders them as a markdown table (figure | ours | baseline | ratio | goal | met).

use crate::Row;

/// Cell text: no line breaks, pipes escaped, `—` when empty.
fn cell(s: Option<&str>) -> String {
    match s.map(str::trim) {
        None | Some("") => "—".to_string(),
        Some(s) => s
            .split(['\n', '\r'])
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" / ")
            .replace('|', "\\|"),
    }
}

/// At most `max` characters, with `…` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max).collect::<String>() + "…"
    }
}

/// The rows of `text` (other lines are skipped), and one message per malformed row line.
pub fn read_rows(text: &str) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match Row::parse_line(line) {
            Some(Ok(r)) => rows.push(r),
            Some(Err(e)) => bad.push(format!("line {}: {e}", i + 1)),
            None => {}
        }
    }
    (rows, bad)
}

/// The markdown table of `rows`, in their order. With `quick`, every figure is labelled
/// "(quick)". A failed row shows "failed: REASON" as its value.
pub fn markdown_table(rows: &[Row], quick: bool) -> String {
    let mut out = String::from("| figure | ours | baseline | ratio | goal | met |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for r in rows {
        let figure = format!(
            "`{}` {}{}",
            r.bench,
            cell(Some(&r.figure)),
            if quick { " (quick)" } else { "" }
        );
        let (value, met) = match &r.error {
            Some(e) => (format!("**failed**: {}", cell(Some(&shorten(e, 300)))), "failed"),
            None => (
                cell(Some(&r.value)),
                match r.met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "—",
                },
            ),
        };
        out.push_str(&format!(
            "| {figure} | {value} | {} | {} | {} | {met} |\n",
            cell(r.baseline.as_deref()),
            cell(r.ratio.as_deref()),
            cell(r.goal.as_deref()),
        ));
    }
    out
}

/// How many rows failed, how many goals were met and how many missed.
pub fn tally(rows: &[Row]) -> (usize, usize, usize) {
    let failed = rows.iter().filter(|r| r.error.is_some()).count();
    let met = rows
        .iter()
        .filter(|r| r.error.is_none() && r.met == Some(true))
        .count();
    let missed = rows
        .iter()
        .filter(|r| r.error.is_none() && r.met == Some(false))
        .count();
    (failed, met, missed)
}

#[cfg(test)]
mod tests {
    use super::{markdown_table, read_rows, tally};
    use crate::Row;

    #[test]
    fn table_of_rows_and_failures() {
        let text = [
            "human output",
            &Row::new("archive", "Save | pipe", "5.88 s")
                .baseline("GNU tar 18.41 s")
                .ratio("3.13x faster")
                .goal("≥ 1.8x", true)
                .line(),
            &Row::new("emissary", "RSS", "4.7 MiB")
                .goal("≤ 3 MiB", false)
                .line(),
            &Row::new("emissary", "binary size", "5.7 MiB").line(),
            &Row::failed("s3", "all figures", "exit 2: run `aws`\nfirst").line(),
            "BENCH-ROW\t{not json",
        ]
        .join("\n");
        let (rows, bad) = read_rows(&text);
        assert_eq!(rows.len(), 4);
        assert_eq!(bad.len(), 1);
        assert_eq!(tally(&rows), (1, 1, 1));
        let t = markdown_table(&rows, true);
        let lines: Vec<_> = t.lines().collect();
        assert_eq!(lines.len(), 6);
        assert_eq!(
            lines[2],
            "| `archive` Save \\| pipe (quick) | 5.88 s | GNU tar 18.41 s | 3.13x faster | ≥ 1.8x | yes |"
        );
        assert!(lines[3].ends_with("| ≤ 3 MiB | **no** |"));
        assert!(lines[4].ends_with("| — | — | — | — |"));
        assert_eq!(
            lines[5],
            "| `s3` all figures (quick) | **failed**: exit 2: run `aws` / first | — | — | — | failed |"
        );
    }
}
