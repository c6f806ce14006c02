#!/usr/bin/env bash
# Install (Debian, root) and start a local Docker Engine for the pods-on-Docker tests, then
# build the local images. Idempotent: does nothing that is already done.
# Not yet called by .ci/run: no test uses Docker until the local node lands (issue 3).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v dockerd >/dev/null || ! command -v busybox >/dev/null; then
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io busybox-static >/dev/null
fi
docker_cli=/usr/bin/docker
[ -x "$docker_cli" ] || docker_cli=$(command -v docker)
if ! "$docker_cli" info >/dev/null 2>&1; then
  nohup dockerd --iptables=false --bridge=none >/tmp/argoexec-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do "$docker_cli" info >/dev/null 2>&1 && break; sleep 0.5; done
  "$docker_cli" info >/dev/null 2>&1 || { echo "docker-up: dockerd did not start; see /tmp/argoexec-dockerd.log" >&2; exit 1; }
fi
DOCKER="$docker_cli" bash scripts/images.sh
