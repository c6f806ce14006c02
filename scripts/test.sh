#!/usr/bin/env bash
# Run every test of the workspace (the README's test command). Does its own setup.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Two test threads: the machine has 2 cores and the e2e tests spawn real processes.
cargo test --workspace --locked --no-fail-fast -- --test-threads=2
# The local node on containerd (docs/local-node.md): the node's own suites and the
# endpoints' (kube-rs: logs, exec over WebSocket; faults), then a representative subset of
# the end-to-end runs, every executor but docker (which needs the Docker Engine): the
# examples, the init-less layout (image volumes), the kubelet and k8sapi backends (exec
# through the endpoints), and the faults that apply (OOM, deletion, eviction, a SIGKILLed
# PID 1; the deadline is the node suite's). The full matrix stays on Docker.
ARGOEXEC_NODE_RUNTIME=containerd cargo test --locked -p argoexec-node -p argoexec-node-server -- --test-threads=2
ARGOEXEC_RUNTIME=containerd cargo test --locked -p argoexec --test run_examples --test run_initless \
  --test run_kube_backends -- --test-threads=2
ARGOEXEC_RUNTIME=containerd cargo test --locked -p argoexec --test run_faults -- --test-threads=2 \
  oom_killed pod_deleted eviction sigkilled
# The default image's build: argoexec without Argo v3.3's legacy executors (feature `legacy`).
cargo test --locked -p argoexec-backends -p argoexec-kube --no-default-features --lib
# The release image as a user gets it: the docker save archive loads (docker, ctr), the
# programs, users and labels are there (scripts/image.sh).
bash scripts/check-image.sh
# Conformance of the local node's API-server/kubelet endpoints with independent clients
# (Python kubernetes client, kubectl 1.27 and 1.33); after the cargo tests. Once on Docker,
# once more on containerd (the newest kubectl only: the endpoints are the same code).
bash scripts/conformance.sh
ARGOEXEC_RUNTIME=containerd ARGOEXEC_KUBECTL_VERSIONS=1.33 bash scripts/conformance.sh
