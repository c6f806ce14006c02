#!/usr/bin/env bash
# Run every test of the workspace (the README's test command). Does its own setup.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Two test threads: the machine has 2 cores and the e2e tests spawn real processes.
cargo test --workspace --locked --no-fail-fast -- --test-threads=2
# The default image's build: argoexec without Argo v3.3's legacy executors (feature `legacy`).
cargo test --locked -p argoexec-backends -p argoexec-kube --no-default-features --lib
# The release image as a user gets it: the docker save archive loads (docker, ctr), the
# programs, users and labels are there (scripts/image.sh).
bash scripts/check-image.sh
# Conformance of the local node's API-server/kubelet endpoints with independent clients
# (Python kubernetes client, kubectl 1.27 and 1.33); after the cargo tests.
bash scripts/conformance.sh
