//! The report side of `scripts/bench.sh` (not a benchmark):
//!
//! * `bench_report fail BENCH REASON [FIGURE]` prints a failed `BENCH-ROW` line for a
//!   benchmark that did not finish (figure "benchmark run" by default; the JSON escaping is
//!   done here, not in the shell);
//! * `bench_report table [--quick] FILE` prints the markdown table of the `BENCH-ROW` lines of
//!   FILE (other lines are skipped) and a tally on stderr; exits 1 when a row failed or a
//!   row line is malformed, 2 on bad usage.

use argoexec_bench::Row;
use argoexec_bench::report::{markdown_table, read_rows, tally};

fn usage() -> ! {
    eprintln!("usage: bench_report fail BENCH REASON [FIGURE] | bench_report table [--quick] FILE");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["fail", bench, reason] => Row::failed(bench, "benchmark run", *reason).emit(),
        ["fail", bench, reason, figure] => Row::failed(bench, *figure, *reason).emit(),
        ["table", rest @ ..] => {
            let (quick, file) = match rest {
                ["--quick", f] => (true, f),
                [f] => (false, f),
                _ => usage(),
            };
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| {
                eprintln!("bench_report: read {file}: {e}");
                std::process::exit(2)
            });
            let (rows, bad) = read_rows(&text);
            print!("{}", markdown_table(&rows, quick));
            for b in &bad {
                eprintln!("bench_report: malformed row, {b}");
            }
            let (failed, met, missed) = tally(&rows);
            eprintln!(
                "bench_report: {} figures, {failed} failed, {met} goals met, {missed} missed",
                rows.len()
            );
            if failed > 0 || !bad.is_empty() {
                std::process::exit(1);
            }
        }
        _ => usage(),
    }
}
