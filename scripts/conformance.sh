#!/usr/bin/env bash
# Conformance suite for the local node's API-server and kubelet endpoints, with clients
# written by others: the official Python `kubernetes` client (pytest, tests/conformance) and
# kubectl (oldest and newest available). Starts `argoexec node` standalone, runs both, stops
# the node with SIGTERM and requires exit code 0. Exits non-zero on any failure.
#
# Environment: ARGOEXEC_KUBECTL_VERSIONS (default "1.27 1.33"), ARGOEXEC_VENV (see
# scripts/pyenv.sh), ARGOEXEC_PYTEST_ARGS (extra pytest arguments, e.g. "-k exec"),
# ARGOEXEC_NODE_READY_TIMEOUT (seconds to wait for the ready line, default 180),
# ARGOEXEC_NODE_BIN (an argoexec binary to use instead of building target/debug/argoexec),
# ARGOEXEC_RUNTIME (the node's runtime: docker, the default, or containerd).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
venv=$(bash scripts/pyenv.sh | tail -1)
if [ -n "${ARGOEXEC_NODE_BIN:-}" ]; then
  bin=$ARGOEXEC_NODE_BIN
else
  # `argoexec node` hands over to argoexec-local beside it: build both.
  cargo build -p argoexec -p argoexec-local --locked
  bin=${CARGO_TARGET_DIR:-$PWD/target}/debug/argoexec
fi

# The node subcommand (argoexec-local's, through argoexec): a build without it is a failure,
# not a skip.
if ! "$bin" node --help >/dev/null 2>&1; then
  echo "conformance: FAIL - '$bin node' does not work: $("$bin" node --help 2>&1 | head -1)" >&2
  exit 1
fi

tmp=$(mktemp -d /tmp/argoexec-conformance.XXXXXX)
node_pid=
cleanup() {
  if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
    kill -TERM "$node_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# Start the node; its stdout goes through a FIFO so the ready line is read as it is written.
mkfifo "$tmp/node.stdout"
"$bin" node --kubeconfig-out "$tmp/kubeconfig" --rbac tests/conformance/rbac \
  >"$tmp/node.stdout" 2>"$tmp/node.log" &
node_pid=$!
exec {node_fd}<"$tmp/node.stdout"

ready=
deadline=$((SECONDS + ${ARGOEXEC_NODE_READY_TIMEOUT:-180}))
while [ "$SECONDS" -lt "$deadline" ]; do
  if ! IFS= read -r -t $((deadline - SECONDS)) -u "$node_fd" line; then break; fi
  case "$line" in
    '{'*'"kubeconfig"'*) ready=$line; break ;;
    *) echo "node stdout: $line" ;;
  esac
done
if [ -z "$ready" ]; then
  echo "conformance: FAIL - no ready line from 'argoexec node' (pid $node_pid); its log:" >&2
  tail -n 50 "$tmp/node.log" >&2 || true
  exit 1
fi
# Keep draining its stdout so the node never blocks on a full pipe.
cat <&"$node_fd" >>"$tmp/node.stdout.rest" &
exec {node_fd}<&-
echo "conformance: node ready: $ready"
# The node runs on the runtime asked for (ARGOEXEC_RUNTIME, which `argoexec node` reads).
want_runtime=${ARGOEXEC_RUNTIME:-docker}
grep -q "runtime=\"$want_runtime\"" "$tmp/node.log" ||
  { echo "conformance: FAIL - the node's log does not say runtime=\"$want_runtime\"" >&2; exit 1; }
echo "conformance: runtime $want_runtime"

read -r api kubelet kubeconfig node_name < <("$venv/bin/python" - "$ready" "$tmp/kubeconfig" <<'EOF'
import json, sys
d = json.loads(sys.argv[1])
missing = [k for k in ("api", "kubelet", "kubeconfig", "node") if not d.get(k)]
assert not missing, f"ready line lacks {missing}: {d}"
assert d["kubeconfig"] == sys.argv[2], f"kubeconfig {d['kubeconfig']} != requested {sys.argv[2]}"
assert d["api"].startswith("https://127.0.0.1:"), d["api"]
assert d["kubelet"].startswith("https://127.0.0.1:"), d["kubelet"]
print(d["api"], d["kubelet"], d["kubeconfig"], d["node"])
EOF
)
[ -s "$kubeconfig" ] || { echo "conformance: FAIL - kubeconfig $kubeconfig missing or empty" >&2; exit 1; }
export ARGOEXEC_KUBECONFIG=$kubeconfig ARGOEXEC_KUBELET_URL=$kubelet ARGOEXEC_NODE_NAME=$node_name

failures=()
# shellcheck disable=SC2086 # ARGOEXEC_PYTEST_ARGS is a list of words
"$venv/bin/python" -m pytest tests/conformance -p no:cacheprovider -rfEs ${ARGOEXEC_PYTEST_ARGS:-} ||
  failures+=("pytest (Python kubernetes client)")

# The versioned clients sit beside the kubectl on PATH (the Google Cloud CLI's folder).
kubectl_dir=
if command -v kubectl >/dev/null; then kubectl_dir=$(dirname "$(readlink -f "$(command -v kubectl)")"); fi
for v in ${ARGOEXEC_KUBECTL_VERSIONS:-1.27 1.33}; do
  kb=$kubectl_dir/kubectl.$v
  if [ ! -x "$kb" ]; then
    failures+=("kubectl $v: ${kubectl_dir:-<no kubectl on PATH>}/kubectl.$v not found")
    continue
  fi
  bash tests/conformance/kubectl.sh "$kb" "$kubeconfig" || failures+=("kubectl $v")
done

# Stop the node: SIGTERM must end it cleanly (exit 0) within a minute.
kill -TERM "$node_pid"
timeout 60 tail --pid="$node_pid" -f /dev/null || kill -KILL "$node_pid" 2>/dev/null || true
node_rc=0
wait "$node_pid" || node_rc=$?
if [ "$node_rc" != 0 ]; then
  failures+=("argoexec node exited $node_rc after SIGTERM (137 = killed after 60 s)")
  tail -n 30 "$tmp/node.log" >&2 || true
fi
# Every pod was deleted and the node has stopped: none of its containers may remain
# (label io.argoexec-rs.node=pid-<pid>, docs/local-node.md). Remove any that did.
docker_cli=/usr/bin/docker
[ -x "$docker_cli" ] || docker_cli=$(command -v docker)
left=$("$docker_cli" ps -a --filter "label=io.argoexec-rs.node=pid-$node_pid" --format '{{.Names}} ({{.Status}})')
if [ -n "$left" ]; then
  failures+=("$(wc -l <<<"$left") containers of the node outlived it")
  echo "conformance: containers left behind by argoexec node (removing them):" >&2
  sed 's/^/  /' <<<"$left" >&2
  "$docker_cli" ps -aq --filter "label=io.argoexec-rs.node=pid-$node_pid" | xargs -r "$docker_cli" rm -f >/dev/null
fi
node_pid=

if [ "${#failures[@]}" -gt 0 ]; then
  echo "conformance: FAILED: ${failures[*]} (node log: $tmp/node.log)"
  exit 1
fi
echo "conformance: all passed (node log: $tmp/node.log)"
