#!/usr/bin/env bash
# Supply-chain policy check (deny.toml): licenses, banned crates, sources — offline.
# Installs cargo-deny (pinned) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo deny --version >/dev/null 2>&1; then
  echo "deny: installing cargo-deny 0.20 (crates.io)"
  cargo install cargo-deny --locked --version "^0.20" >/dev/null
fi
# cargo-deny reads the metadata of every platform's crates: fetch them first (the one online
# step), then check with the network off.
cargo fetch --locked >/dev/null
cargo deny --offline check licenses bans sources
