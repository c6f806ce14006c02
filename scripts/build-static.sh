#!/usr/bin/env bash
# Build the statically linked release binary (glibc static-pie) used for FROM-scratch images
# and for copying into /var/run/argo by `argoexec init`. Prints its path and size.
# An explicit --target is needed so that proc-macro crates are still built dynamically.
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(rustc -vV | sed -n 's/^host: //p')
# Under CARGO_TARGET_DIR when set (CI keeps its build cache outside the clone).
dir="${STATIC_TARGET_DIR:-${CARGO_TARGET_DIR:-target}/static}"
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked --target "$target" -p argoexec \
  --target-dir "$dir"
bin="$dir/$target/release/argoexec"
strip -o "$bin.stripped" "$bin"
ls -l "$bin" "$bin.stripped"
echo "$bin.stripped"
