#!/usr/bin/env bash
# Usage: scripts/bench.sh [--quick] [--only NAME,...] [--out FILE] [--note TEXT]
#
# Runs every benchmark of bench/src/bin (archive, emissary, run, layout, containerd, docker_copy, wait_notice,
# base_layer, s3, taskresult, resource, footprint, gc, agent) one after another, collects the BENCH-ROW line each prints per figure,
# prints one markdown table (figure | ours | baseline | ratio | goal | met) and writes it to
# FILE (default docs/performance.md) with the date (UTC), the machine (nproc, CPU model,
# kernel), the mode and this exact command.
#   --quick   small sizes and few runs (a few minutes; figures labelled "quick"); without it,
#             the README's full sizes (1 GiB archives, 2 GiB S3 file, 50 runs per executor…)
#   --only    a comma-separated subset, e.g. --only archive,s3 (names as above, `_bench` optional)
#   --note    one more line for the report's header (e.g. "the machine was shared")
# FOOTPRINT_BASELINE=PATH gives footprint a one-binary argoexec from before the split to compare.
# Setup first: scripts/setup.sh (Docker Engine, images, static build), the awscli venv (for
# s3), the release binary and the benchmarks. A benchmark or setup step that fails does not
# stop the others: its row says "failed" with the reason, and the exit status is 1 at the end.
# Each benchmark's full output is kept in target/bench-logs/NAME.log.
set -uo pipefail
cd "$(dirname "$0")/.."
# The figures are release's: the local argoexec:dev image (scripts/images.sh) in the same
# profile as the host's programs, not the demo's `quick`.
export ARGOEXEC_IMAGE_PROFILE=${ARGOEXEC_IMAGE_PROFILE:-release}

all=(archive emissary run layout containerd docker_copy wait_notice base_layer s3 taskresult resource footprint gc agent)
command_line="bash scripts/bench.sh$(printf ' %q' "$@")"
quick=0 only="" out=docs/performance.md note=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --only) only=${2:?--only needs a list}; shift ;;
    --out) out=${2:?--out needs a file}; shift ;;
    --note) note=${2:?--note needs a text}; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
selected=()
if [ -n "$only" ]; then
  IFS=, read -ra names <<<"$only"
  for n in "${names[@]}"; do
    n=${n%_bench}; n=${n//-/_}
    [[ " ${all[*]} " == *" $n "* ]] || { echo "bench: unknown benchmark $n (${all[*]})" >&2; exit 2; }
    selected+=("$n")
  done
else
  selected=("${all[@]}")
fi
wants() { [[ " ${selected[*]} " == *" $1 "* ]]; }

# Per-benchmark arguments: quick (small) and full (the README's sizes).
args_for() {
  local rel=target/release/argoexec
  if [ "$quick" = 1 ]; then
    case "$1" in
      archive) echo "--size-mib 64 --files 1000 --runs 1" ;;
      emissary) echo "--runs 20" ;;
      run) echo "$rel 3" ;;
      layout) echo "$rel 3" ;;
      containerd) echo "$rel 3" ;;
      docker_copy) echo "--size-mib 64 --runs 1" ;;
      wait_notice) echo "$rel 5" ;;
      base_layer) echo "$rel 64 1" ;;
      s3) echo "$static_bin --size-mib 64 --files 200 --runs 1" ;;
      taskresult) echo "--steps 1,10,50 --versions 3.3,3.5,4.1" ;;
      resource) echo "$rel 10 3" ;;
      footprint) echo "$dist_dir argoexec-rs:footprint ${FOOTPRINT_BASELINE:-}" ;;
      gc) echo "--delete 2000 --list 10000" ;;
      agent) echo "--tasks 200" ;;
    esac
  else
    case "$1" in
      archive) echo "--size-mib 1024 --files 10000 --runs 1" ;;
      emissary) echo "--runs 200" ;;
      run) echo "$rel 10" ;;
      layout) echo "$rel 10" ;;
      containerd) echo "$rel 10" ;;
      docker_copy) echo "--size-mib 1024 --runs 3" ;;
      wait_notice) echo "$rel 50" ;;
      base_layer) echo "$rel 1024 3" ;;
      s3) echo "$static_bin --size-mib 2048 --files 10000 --runs 1" ;;
      taskresult) echo "--steps 1,50,200 --versions 3.3,3.5,3.7,4.0,4.1" ;;
      resource) echo "$rel 50 10" ;;
      footprint) echo "$dist_dir argoexec-rs:footprint ${FOOTPRINT_BASELINE:-}" ;;
      gc) echo "--delete 10000 --list 100000" ;;
      agent) echo "--tasks 1000" ;;
    esac
  fi
}
# A benchmark that hangs is stopped after this many seconds (BENCH_TIMEOUT overrides).
if [ "$quick" = 1 ]; then timeout_s=${BENCH_TIMEOUT:-900}; else timeout_s=${BENCH_TIMEOUT:-7200}; fi

logs=target/bench-logs
mkdir -p "$logs"
rows=$logs/rows.txt
: >"$rows"
status=0
started=$(date -u +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# Setup failures, by the benchmarks they stop: NAME<TAB>reason.
setup_failures=()
: >"$logs/setup.log"

# Runs a setup step with its output in $logs/setup.log. On failure: status 1, and with
# BENCHES (space-separated) those benchmarks are skipped with the reason; without, the step
# gets a failed row of its own and the benchmarks still run (they fail by themselves if
# they needed it).
step() {
  local what=$1 benches=$2
  shift 2
  echo "bench: setup: $what" >&2
  echo "== $what" >>"$logs/setup.log"
  if ! "$@" >>"$logs/setup.log" 2>&1; then
    local why
    why="setup step '$what' failed: $(grep -v '^\s*$' "$logs/setup.log" | tail -1)"
    echo "bench: $why (log: $logs/setup.log)" >&2
    status=1
    if [ -n "$benches" ]; then
      for b in $benches; do setup_failures+=("$b	$why"); done
    else
      early_failures+=("$why")
    fi
    return 1
  fi
}
early_failures=()
step "scripts/setup.sh (Docker Engine, images, moto venv)" "" bash scripts/setup.sh
# build-static.sh prints the programs' directory last.
static_dir=target/static/$(rustc -vV | sed -n 's/^host: //p')/release
step "static build (scripts/build-static.sh)" "s3" bash scripts/build-static.sh &&
  static_dir=$(tail -1 "$logs/setup.log")
static_bin=$static_dir/argoexec
# The image a cluster pulls is the dist profile (fat LTO): footprint measures that build.
dist_dir=${static_dir%/*}/dist
if wants footprint; then
  step "static dist build (scripts/build-static.sh --profile dist)" "footprint" \
    bash scripts/build-static.sh --profile dist && dist_dir=$(tail -1 "$logs/setup.log")
  step "the dist image (scripts/image.sh --tag footprint)" "footprint" \
    bash scripts/image.sh --tag footprint --no-archive
fi
if wants s3 || wants gc; then step "awscli venv (scripts/pyenv.sh awscli)" "s3 gc" bash scripts/pyenv.sh awscli; fi
step "release build of argoexec" "emissary run layout containerd wait_notice base_layer resource" \
  cargo build --release --locked -p argoexec -p argoexec-emissary -p argoexec-local
step "release build of the benchmarks" "${all[*]}" \
  cargo build --release --locked -p argoexec-bench --bins
reporter=target/release/bench_report

# A failed row for NAME with REASON [and FIGURE] (JSON written by bench_report; by hand if
# it is missing).
fail_row() {
  if [ -x "$reporter" ] && "$reporter" fail "$@" >>"$rows"; then
    return
  fi
  local why=${2//$'\t'/ }
  printf 'BENCH-FAIL\t%s\t%s\n' "$1" "${why//$'\n'/ }" >>"$rows"
}
for why in "${early_failures[@]}"; do fail_row setup "$why" "machine setup"; done

for name in "${selected[@]}"; do
  reason=""
  for f in "${setup_failures[@]}"; do
    [ "${f%%	*}" = "$name" ] && { reason=${f#*	}; break; }
  done
  if [ -n "$reason" ]; then
    echo "bench: $name skipped: $reason" >&2
    fail_row "$name" "$reason"
    status=1
    continue
  fi
  # shellcheck disable=SC2046 # the arguments are words without spaces
  set -- $(args_for "$name")
  log=$logs/$name.log
  echo "== $name: ${name}_bench $*" >&2
  t0=$(date +%s)
  # stdout to $log and (without the BENCH-ROW lines) the terminal, stderr to $log.err and the
  # terminal; with pipefail the group's status is the benchmark's.
  {
    ARGOEXEC_BIN=$PWD/target/release/argoexec ARGOEXEC_STATIC_BIN=$static_bin \
      timeout --kill-after=30 "$timeout_s" "target/release/${name}_bench" "$@" 2>&1 1>&3 3>&- |
      tee "$log.err" >&2 3>&-
  } 3>&1 | tee "$log" | grep --line-buffered -v '^BENCH-ROW'
  rc=${PIPESTATUS[0]}
  n=$(grep -c '^BENCH-ROW' "$log")
  grep '^BENCH-ROW' "$log" >>"$rows"
  echo "== $name: exit $rc, $n figures, $(($(date +%s) - t0)) s (stderr: $log.err)" >&2
  if [ "$rc" != 0 ] || [ "$n" = 0 ]; then
    why=$(grep -v -e '^\s*$' -e 'RUST_BACKTRACE' "$log.err" | tail -1)
    [ "$rc" = 124 ] && why="timed out after ${timeout_s} s; $why"
    fail_row "$name" "exit status $rc, $n figures; ${why:-no message}"
    status=1
  fi
done
elapsed=$(($(date -u +%s) - started))

# The table (bench_report exits 1 when a row failed).
if [ -x "$reporter" ]; then
  table=$("$reporter" table $([ "$quick" = 1 ] && echo --quick) "$rows") || status=1
else
  table="| figure | ours | baseline | ratio | goal | met |
|---|---|---|---|---|---|"
  while IFS=$'\t' read -r _ b why; do
    table+=$'\n'"| \`$b\` | **failed**: ${why//|/\\|} | — | — | — | failed |"
  done < <(grep '^BENCH-FAIL' "$rows")
  status=1
fi

mode=full
[ "$quick" = 1 ] && mode="quick (small sizes, few runs: not the README's figures)"
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && rev="$rev + uncommitted changes in the working tree"
mkdir -p "$(dirname "$out")"
{
  echo "# Performance report"
  echo
  echo "Written by \`scripts/bench.sh\` from the \`BENCH-ROW\` lines of the benchmarks in"
  echo "\`bench/src/bin\`; nothing here is asserted. The README's Performance table holds the"
  echo "figures measured by hand, with their history."
  echo
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- Machine: $(nproc) cores (nproc), ${cpu:-unknown CPU}, kernel $(uname -r)"
  echo "- Load average (1/5/15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "- Mode: **$mode**"
  echo "- Command: \`$command_line\` ($((elapsed / 60)) min $((elapsed % 60)) s, setup included)"
  echo "- Source: $rev"
  [ -n "$note" ] && echo "- Note: $note"
  if [ "$quick" = 1 ]; then
    echo
    echo "**Quick mode**: every figure below was measured on small data and few runs, so it"
    echo "is noisy and not comparable with the goals, which were set for the full sizes; \"met\""
    echo "only says how this run compared. Run the full mode on a quiet machine for real figures."
  fi
  echo
  echo "## Figures"
  echo
  echo "$table"
  echo
  echo "\"met\": whether the goal (from the issues) was reached in this run; — when no goal"
  echo "applies. Ratios of times: \"faster\"/\"slower\" is the baseline's time over ours (or the"
  echo "reverse); a \"failed\" row names the benchmark's error."
  echo
  echo "## How to reproduce"
  echo
  echo '```sh'
  echo "bash scripts/bench.sh            # full sizes (the README's); tens of minutes"
  echo "bash scripts/bench.sh --quick    # small sizes, a few minutes"
  echo "bash scripts/bench.sh --only archive,s3"
  echo '```'
  echo
  echo "Root on Debian with the Docker Engine (scripts/setup.sh installs and starts what is"
  echo "missing). Each benchmark can also be run alone, e.g."
  echo "\`cargo run --release -p argoexec-bench --bin archive_bench -- --size-mib 1024 --files 10000\`;"
  echo "the arguments per mode are in \`args_for\` in scripts/bench.sh, and each program's"
  echo "\`//!\` header documents its knobs. Full outputs of the last run: \`target/bench-logs/\`."
} >"$out"

echo
echo "$table"
echo
echo "bench: wrote $out (mode $mode, $elapsed s)" >&2
[ "$status" = 0 ] || echo "bench: some benchmarks or setup steps failed (see the table and $logs/)" >&2
exit "$status"
