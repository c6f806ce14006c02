#!/usr/bin/env bash
# The main job: set up only what it needs (Docker Engine, the local images, one static build in
# the `quick` profile that serves both the image and this host) and run a workflow on the
# local node.
# Extra arguments go to `argoexec run`.
#   bash scripts/demo.sh [WORKFLOW.yaml] [--executor docker] [-o json] [-p name=value]
set -euo pipefail
cd "$(dirname "$0")/.."
# The `quick` profile (root Cargo.toml), without the tests' plugins (scripts/build-static.sh).
export ARGOEXEC_IMAGE_PROFILE=quick ARGOEXEC_STATIC_PROGRAMS=main
bash scripts/setup.sh --main
workflow=${1:-examples/hello-world.yaml}
shift || true
# The static build images.sh made: argoexec hands `run` to argoexec-local beside it.
dir=$(bash scripts/build-static.sh --profile quick 2>/dev/null | tail -1)
echo "demo: argoexec run $workflow $*" >&2
exec "$dir/argoexec" run "$workflow" "$@"
