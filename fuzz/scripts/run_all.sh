#!/usr/bin/env bash
# Usage: fuzz/scripts/run_all.sh [SECONDS] [TARGET...]
#
# Runs the cargo-fuzz targets one after another (all of them by default), each for SECONDS
# (default 600), niced, with new inputs kept in fuzz/corpus/<t> and the seeds of
# fuzz/seeds/<t> read. Each run's output goes to fuzz/logs/<t>.log; one summary line per
# target (runs, exec/s, cov, ft, corpus size, crashes) is appended to fuzz/logs/summary.tsv.
# Exit status 1 when any target found a crash (saved under fuzz/artifacts/<t>/).
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
mkdir -p fuzz/logs
export TMPDIR=${TMPDIR:-/dev/shm}
status=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  before=$(ls "fuzz/artifacts/$t" | wc -l)
  echo "fuzz: $t for $secs s" >&2
  start=$(date +%s)
  nice -n 10 cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    >"fuzz/logs/$t.log" 2>&1
  rc=$?
  after=$(ls "fuzz/artifacts/$t" | wc -l)
  last=$(grep -E '^#[0-9]+' "fuzz/logs/$t.log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "fuzz/logs/$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "fuzz/logs/$t.log")
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' <<<"$last" | cut -d' ' -f2)
  printf '%s\t%s\t%s s\t%s runs\t%s exec/s\tcov %s\tft %s\tcorpus %s\tcrashes %s\texit %s\n' \
    "$(date -u +%FT%TZ)" "$t" "$(($(date +%s) - start))" "${runs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$((after - before))" "$rc" | tee -a fuzz/logs/summary.tsv
  [ "$rc" = 0 ] && [ "$after" = "$before" ] || status=1
done
exit "$status"
