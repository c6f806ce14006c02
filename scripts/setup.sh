#!/usr/bin/env bash
# Idempotent machine setup for argoexec-rs (root on Debian). Installs what the tests and
# benchmarks need that a fresh machine lacks. Safe to run repeatedly.
set -euo pipefail

need=()
command -v tar >/dev/null || need+=(tar)
command -v gzip >/dev/null || need+=(gzip)
command -v pigz >/dev/null || need+=(pigz)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${need[*]}"
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || {
      # pigz is only a benchmark baseline; tar and gzip are required
      for p in "${need[@]}"; do [ "$p" = pigz ] || { echo "setup: cannot install $p" >&2; exit 1; }; done
    }
  else
    echo "setup: missing ${need[*]} (run as root on Debian to install)" >&2
  fi
fi
command -v cargo >/dev/null || { echo "setup: cargo is required" >&2; exit 1; }
