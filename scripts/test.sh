#!/usr/bin/env bash
# Run every test of the workspace (the README's test command). Does its own setup.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests' images are built in the `quick` cargo profile (root Cargo.toml), as the demo's:
# faster to build than release, the same programs, and one build serves both commands.
# .ci/run sets the same before its own setup.
export ARGOEXEC_IMAGE_PROFILE=${ARGOEXEC_IMAGE_PROFILE:-quick}
# Each step's start, so a CI log shows where the minutes go.
step() { echo "== test.sh $(date -u +%H:%M:%S) $*"; }
step setup
bash scripts/setup.sh
# Two test threads: the machine has 2 cores and the e2e tests spawn real processes.
step "cargo test --workspace (Docker)"
cargo test --workspace --locked --no-fail-fast -- --test-threads=2
# Every later cargo run selects the whole workspace (`--workspace`, then test targets by
# name): cargo resolves features for the packages selected, so a `-p` run would build tokio,
# hyper, kube and the rest once more with another feature set (minutes on 2 cores).
ws() { cargo test --workspace --locked "$@"; }
# The local node on containerd (docs/local-node.md): the node's own suites and the
# endpoints' (kube-rs: logs, exec over WebSocket; faults), then a representative subset of
# the end-to-end runs, every executor but docker (which needs the Docker Engine): the
# examples, the init-less layout (image volumes), the kubelet and k8sapi backends (exec
# through the endpoints), and the faults that apply (OOM, deletion, eviction, a SIGKILLed
# PID 1; the deadline is the node suite's). The full matrix stays on Docker.
step "containerd: the node's and the endpoints' suites"
ARGOEXEC_NODE_RUNTIME=containerd ws --test pods --test sidecars --test exec --test leftovers --test kube_rs \
  --test custom_resources --test secrets --test faults -- --test-threads=2
step "containerd: end-to-end runs"
ARGOEXEC_RUNTIME=containerd ws --test run_examples --test run_initless --test run_kube_backends \
  -- --test-threads=2
ARGOEXEC_RUNTIME=containerd ws --test run_faults -- --test-threads=2 oom_killed pod_deleted eviction sigkilled
# The default image's build: argoexec without Argo v3.3's legacy executors (feature `legacy`).
# This one run builds the backends' crate without it on purpose.
step "the backends without the legacy executors"
cargo test --locked -p argoexec-backends --no-default-features --lib
# The programs the cargo tests built (target/debug: argoexec, and argoexec-local beside it)
# serve the scripts below, which would otherwise build them again with other features.
bin=${CARGO_TARGET_DIR:-$PWD/target}/debug/argoexec
# The release image as a user gets it: the docker save archive loads (docker, ctr), the
# programs, users and labels are there (scripts/image.sh).
step check-image
ARGOEXEC_NODE_BIN=$bin bash scripts/check-image.sh
# Conformance of the local node's API-server/kubelet endpoints with independent clients
# (Python kubernetes client, kubectl 1.27 and 1.33); after the cargo tests. Once on Docker,
# once more on containerd (the newest kubectl only: the endpoints are the same code).
step "conformance (Docker)"
ARGOEXEC_NODE_BIN=$bin bash scripts/conformance.sh
step "conformance (containerd)"
ARGOEXEC_NODE_BIN=$bin ARGOEXEC_RUNTIME=containerd ARGOEXEC_KUBECTL_VERSIONS=1.33 bash scripts/conformance.sh
step done
