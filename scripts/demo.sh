#!/usr/bin/env bash
# The main job: set up the machine (Docker Engine, local images), build argoexec and run a
# workflow on the local node. Extra arguments go to `argoexec run`.
#   bash scripts/demo.sh [WORKFLOW.yaml] [--executor docker] [-o json] [-p name=value]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
workflow=${1:-examples/hello-world.yaml}
shift || true
cargo build --release --locked -q -p argoexec
exec ./target/release/argoexec run "$workflow" "$@"
