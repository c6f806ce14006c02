#!/usr/bin/env bash
# The local node's containerd (`argoexec run|node --runtime containerd`): a daemon of the
# project's own (socket /run/argoexec-containerd/containerd.sock, root
# /var/lib/argoexec-containerd, no CRI plugin), started when none answers, and the local
# images imported into its `argoexec` namespace from a `docker save` archive (the format
# scripts/image.sh writes), re-imported when Docker's copy changed. Idempotent.
#   bash scripts/containerd-up.sh [IMAGE…]   (default: the images of scripts/images.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-docker}
sock=/run/argoexec-containerd/containerd.sock
ns=argoexec
ctr_() { ctr --address "$sock" -n "$ns" "$@"; }
if ! ctr --address "$sock" version >/dev/null 2>&1; then
  command -v containerd >/dev/null || { echo "containerd-up: containerd is missing (apt-get install containerd)" >&2; exit 1; }
  conf=/run/argoexec-containerd/config.toml
  mkdir -p /run/argoexec-containerd
  cat >"$conf" <<TOML
version = 2
root = "/var/lib/argoexec-containerd"
state = "/run/argoexec-containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
TOML
  echo "containerd-up: starting containerd (log: /tmp/argoexec-containerd.log)"
  nohup containerd --config "$conf" >/tmp/argoexec-containerd.log 2>&1 &
  for _ in $(seq 1 100); do ctr --address "$sock" version >/dev/null 2>&1 && break; sleep 0.1; done
  ctr --address "$sock" version >/dev/null 2>&1 || { echo "containerd-up: containerd did not start; see /tmp/argoexec-containerd.log" >&2; exit 1; }
fi
images=("$@")
[ "${#images[@]}" -gt 0 ] || images=(busybox:latest noshell:latest argoexec:dev argoexec-plugin-dir:dev argoexec-plugin-hello:dev)
todo=()
for i in "${images[@]}"; do
  id=$("$DOCKER" image inspect -f '{{.Id}}' "$i" 2>/dev/null) || continue
  case "$i" in */*) full=$i ;; *) full=docker.io/library/$i ;; esac
  # containerd names the image's configuration by the same digest Docker calls its ID.
  have=$(ctr_ images ls name=="$full" 2>/dev/null | awk 'NR==2 {print $1}')
  if [ -z "$have" ] || ! ctr_ content ls 2>/dev/null | grep -q "${id#sha256:}"; then
    todo+=("$i")
  fi
done
if [ "${#todo[@]}" -gt 0 ]; then
  echo "containerd-up: importing ${todo[*]} into containerd namespace $ns"
  "$DOCKER" save "${todo[@]}" | ctr_ images import - >/dev/null
fi
