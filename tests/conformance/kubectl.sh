#!/usr/bin/env bash
# kubectl conformance against a running `argoexec node`.
#
#   tests/conformance/kubectl.sh KUBECTL [KUBECONFIG]
#
# KUBECTL is a kubectl binary (e.g. kubectl.1.27 from the folder of `readlink -f $(which
# kubectl)`); KUBECONFIG defaults to $ARGOEXEC_KUBECONFIG. Every step prints PASS, FAIL or
# SKIP with what it saw; the script exits 1 when any step failed.
#
# Exec transport by client version (measured against a recording server, see
# docs/conformance.md): 1.27-1.28 speak only SPDY; 1.29 SPDY unless
# KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true; 1.30+ WebSocket v5.channel.k8s.io by default
# (falling back to SPDY when the upgrade fails; =false forces SPDY). The node may speak only
# WebSocket, so for clients older than 1.30 the default exec is a separate step that SKIPs
# on a protocol error; with 1.29 the WebSocket exec is then required.
set -uo pipefail

KUBECTL=${1:?usage: kubectl.sh KUBECTL [KUBECONFIG]}
export KUBECONFIG=${2:-${ARGOEXEC_KUBECONFIG:-}}
[ -n "$KUBECONFIG" ] && [ -f "$KUBECONFIG" ] || { echo "kubectl.sh: kubeconfig '$KUBECONFIG' not found" >&2; exit 2; }
command -v "$KUBECTL" >/dev/null || { echo "kubectl.sh: $KUBECTL not found" >&2; exit 2; }
NS=${ARGOEXEC_NAMESPACE:-default}
IMAGE=${ARGOEXEC_IMAGE:-busybox:latest}
TIMEOUT=${ARGOEXEC_POD_TIMEOUT:-90}
# Unset inherited switches so each client runs with its own defaults.
unset KUBECTL_REMOTE_COMMAND_WEBSOCKETS

client_json=$("$KUBECTL" version --client -o json 2>/dev/null)
minor=$(sed -n 's/^ *"minor": *"\([0-9]*\).*/\1/p' <<<"$client_json" | head -1)
git_version=$(sed -n 's/^ *"gitVersion": *"\([^"]*\)".*/\1/p' <<<"$client_json" | head -1)
[ -n "$minor" ] || { echo "kubectl.sh: cannot read the client version of $KUBECTL" >&2; exit 2; }
tag="kubectl-1.$minor"

work=$(mktemp -d)
run_id=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')
label="conformance.argoexec.io/run=kubectl-$run_id"
pod_main="kc$minor-main-$run_id"
pod_follow="kc$minor-follow-$run_id"
pod_sleep="kc$minor-sleep-$run_id"

passed=0 failed=0 skipped=0
pass() { passed=$((passed + 1)); echo "[$tag] PASS $1"; }
fail() { failed=$((failed + 1)); echo "[$tag] FAIL $1"; shift; for l in "$@"; do [ -n "$l" ] && printf '%s\n' "$l"; done; }
skip() { skipped=$((skipped + 1)); echo "[$tag] SKIP $1: $2"; }
# kc OUT ERR ARGS...: runs kubectl with a time limit, stdout/stderr to files, returns its code.
kc() {
  local out=$1 err=$2; shift 2
  timeout "$TIMEOUT" "$KUBECTL" "$@" >"$out" 2>"$err"
}
show() { [ -s "$1" ] && head -c 2000 "$1" | sed "s/^/[$tag]      | /"; }

cleanup() {
  timeout 60 "$KUBECTL" delete pods -n "$NS" -l "$label" --wait=false --grace-period=1 >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

manifest() { # name script
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $NS
  labels:
    conformance.argoexec.io/run: kubectl-$run_id
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: Never
    command: ["sh", "-c", "$2"]
EOF
}

# watch_phase POD PHASE: `kubectl get pod POD -w` until PHASE is printed (or the time limit).
# Prints the phases seen. The watch is stopped by its pid once the phase arrives.
watch_phase() {
  local pod=$1 want=$2 line seen="" fd wpid rc=1
  exec {fd}< <(exec timeout "$TIMEOUT" "$KUBECTL" get pod "$pod" -n "$NS" -w \
    -o jsonpath='{.status.phase}{"\n"}' 2>"$work/watch-$pod.err")
  wpid=$!
  while IFS= read -r -u "$fd" line; do
    seen+="${line:-<none>} "
    if [ "$line" = "$want" ]; then rc=0; break; fi
    case "$line" in Succeeded | Failed) break ;; esac
  done
  kill "$wpid" 2>/dev/null
  exec {fd}<&-
  wait "$wpid" 2>/dev/null
  echo "$seen"
  return $rc
}

echo "[$tag] $KUBECTL ($git_version) against $(sed -n 's/^ *server: *//p' "$KUBECONFIG" | head -1)"

# version: the server part comes from /version
if kc "$work/v.out" "$work/v.err" version -o json && grep -q '"serverVersion"' "$work/v.out" &&
  grep -q '"gitVersion": *"v[0-9]' <(sed -n '/"serverVersion"/,$p' "$work/v.out"); then
  pass "version ($(sed -n '/"serverVersion"/,$ s/^ *"gitVersion": *"\([^"]*\)".*/\1/p' "$work/v.out" | head -1))"
else
  fail "version: no serverVersion" "$(show "$work/v.out")" "$(show "$work/v.err")"
fi

# get pods (table) and -o json
if kc "$work/g.out" "$work/g.err" get pods -n "$NS"; then pass "get pods"; else
  fail "get pods" "$(show "$work/g.err")"; fi

# apply -f. Client-side apply validates by default (--validate=strict), which needs the
# server's OpenAPI: kubectl 1.29+ reads /openapi/v3 (JSON; a PATCH operation for the kind
# listing the fieldValidation query parameter means "validate on the server"), 1.27-1.28 read
# /openapi/v2 as protobuf only. When that default step fails, the pods are applied with
# --validate=false (a separate step) so that the later steps still run.
manifest "$pod_main" "echo out; echo err >&2; sleep 1; echo done" >"$work/main.yaml"
manifest "$pod_follow" "echo start; sleep 3; echo end" >"$work/follow.yaml"
manifest "$pod_sleep" "trap 'exit 0' TERM; sleep 3600 & wait" >"$work/sleep.yaml"
apply_args=()
if kc "$work/a.out" "$work/a.err" apply -f "$work/main.yaml" &&
  grep -qx "pod/$pod_main created" "$work/a.out"; then pass "apply -f (pod/$pod_main created)"; else
  fail "apply -f (default validation; OpenAPI $([ "$minor" -ge 29 ] && echo "v3 JSON" || echo "v2 protobuf"))" "$(show "$work/a.out")" "$(show "$work/a.err")"
  apply_args=(--validate=false)
  if kc "$work/a.out" "$work/a.err" apply --validate=false -f "$work/main.yaml" &&
    grep -qx "pod/$pod_main created" "$work/a.out"; then pass "apply --validate=false -f (pod/$pod_main created)"; else
    fail "apply --validate=false -f" "$(show "$work/a.out")" "$(show "$work/a.err")"; fi
fi
kc "$work/a2.out" "$work/a2.err" apply "${apply_args[@]}" -f "$work/follow.yaml" -f "$work/sleep.yaml" ||
  fail "apply -f (two more pods)" "$(show "$work/a2.err")"

# get pod -w until Succeeded
if seen=$(watch_phase "$pod_main" Succeeded); then pass "get pod -w until Succeeded (saw: $seen)"; else
  fail "get pod -w until Succeeded within ${TIMEOUT}s" "saw: $seen" "$(show "$work/watch-$pod_main.err")"; fi

# get pods -o json: a List holding the pod
if kc "$work/j.out" "$work/j.err" get pods -n "$NS" -l "$label" -o json &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kind"]=="List", d["kind"]; names=[i["metadata"]["name"] for i in d["items"]]; assert sys.argv[2] in names, names; assert all(i["kind"]=="Pod" for i in d["items"])' "$work/j.out" "$pod_main" 2>"$work/j.py"; then
  pass "get pods -o json"
else
  fail "get pods -o json" "$(show "$work/j.py")" "$(show "$work/j.err")"
fi
if kc "$work/jp.out" "$work/jp.err" get pod "$pod_main" -n "$NS" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}' &&
  [ "$(cat "$work/jp.out")" = 0 ]; then pass "get pod -o jsonpath (exitCode 0)"; else
  fail "get pod -o jsonpath exitCode" "$(show "$work/jp.out")" "$(show "$work/jp.err")"; fi

# logs: out/err in either order (two pipes), done last
check_out_err_done() { [ "$(head -2 "$1" | sort | tr '\n' ' ')" = "err out " ] && [ "$(sed -n 3,\$p "$1")" = done ]; }
if kc "$work/l.out" "$work/l.err" logs "$pod_main" -n "$NS" && check_out_err_done "$work/l.out"; then
  pass "logs"; else fail "logs" "$(show "$work/l.out")" "$(show "$work/l.err")"; fi
if kc "$work/lt.out" "$work/lt.err" logs "$pod_main" -n "$NS" --tail=1 && [ "$(cat "$work/lt.out")" = done ]; then
  pass "logs --tail=1"; else fail "logs --tail=1" "$(show "$work/lt.out")" "$(show "$work/lt.err")"; fi

# logs -f on a pod that is still running: kubectl waits for it to start, then streams
# until the container exits (the stream must end on its own).
start=$(date +%s)
if kc "$work/f.out" "$work/f.err" logs -f "$pod_follow" -n "$NS" &&
  [ "$(tr '\n' ' ' <"$work/f.out")" = "start end " ]; then
  pass "logs -f (ended with the container after $(($(date +%s) - start))s)"
else
  fail "logs -f" "$(show "$work/f.out")" "$(show "$work/f.err")"
fi

# exec: stdout and exit code
exec_check() { # NAME ENV...: runs the exec with env assignments, sets exec_rc
  env "${@:2}" timeout "$TIMEOUT" "$KUBECTL" exec "$pod_sleep" -n "$NS" -- sh -c 'echo hi; exit 3' \
    >"$work/e.out" 2>"$work/e.err"
  exec_rc=$?
  [ "$exec_rc" = 3 ] && [ "$(cat "$work/e.out")" = hi ]
}
if seen=$(watch_phase "$pod_sleep" Running); then
  if [ "$minor" -ge 30 ]; then
    if exec_check default; then pass "exec (WebSocket): stdout hi, exit code 3"; else
      fail "exec (WebSocket): expected stdout hi and exit code 3, got exit code $exec_rc" "$(show "$work/e.out")" "$(show "$work/e.err")"; fi
    if printf 'hello\n' | timeout "$TIMEOUT" "$KUBECTL" exec -i "$pod_sleep" -n "$NS" -- cat >"$work/i.out" 2>"$work/i.err" &&
      [ "$(cat "$work/i.out")" = hello ]; then pass "exec -i (stdin EOF reaches the command)"; else
      fail "exec -i: expected hello" "$(show "$work/i.out")" "$(show "$work/i.err")"; fi
  else
    # Older clients default to SPDY: a separately reported step.
    if exec_check default; then pass "exec (SPDY, client 1.$minor): stdout hi, exit code 3"
    elif grep -qiE 'upgrad|spdy|protocol|stream|handshake|bad request' "$work/e.err"; then
      skip "exec (SPDY, client 1.$minor)" "kubectl 1.$minor execs over SPDY; the node refused it: $(head -c 300 "$work/e.err" | tr '\n' ' ')"
    else
      fail "exec (SPDY, client 1.$minor): exit code $exec_rc" "$(show "$work/e.out")" "$(show "$work/e.err")"
    fi
    if [ "$minor" = 29 ]; then
      if exec_check websocket KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true; then
        pass "exec (WebSocket via KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true): stdout hi, exit code 3"; else
        fail "exec (WebSocket via KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true): exit code $exec_rc" "$(show "$work/e.out")" "$(show "$work/e.err")"; fi
    fi
  fi
else
  fail "exec: pod $pod_sleep did not reach Running" "saw: $seen" "$(show "$work/watch-$pod_sleep.err")"
fi

# create token, then use it: the limited service account may get pods but not delete them
if kc "$work/t.out" "$work/t.err" create token limited -n "$NS" && grep -qE '^[^.]+\.[^.]+\.[^.]+$' "$work/t.out"; then
  pass "create token"
  tok=$(cat "$work/t.out")
  if kc "$work/tg.out" "$work/tg.err" --token "$tok" get pod "$pod_main" -n "$NS" -o name &&
    [ "$(cat "$work/tg.out")" = "pod/$pod_main" ]; then pass "get pod with the minted token"; else
    fail "get pod with the minted token" "$(show "$work/tg.out")" "$(show "$work/tg.err")"; fi
  want="Error from server (Forbidden): pods \"$pod_main\" is forbidden: User \"system:serviceaccount:$NS:limited\" cannot delete resource \"pods\" in API group \"\" in the namespace \"$NS\""
  if ! kc "$work/td.out" "$work/td.err" --token "$tok" delete pod "$pod_main" -n "$NS" --wait=false &&
    grep -qxF "$want" "$work/td.err"; then pass "delete pod with the minted token is Forbidden"; else
    fail "delete pod with the minted token: expected: $want" "$(show "$work/td.out")" "$(show "$work/td.err")"; fi
else
  fail "create token" "$(show "$work/t.out")" "$(show "$work/t.err")"
fi
if ! kc "$work/tb.out" "$work/tb.err" --token not-a-token get pods -n "$NS" &&
  grep -q 'Unauthorized' "$work/tb.err"; then pass "bad token is Unauthorized"; else
  fail "bad token: expected Unauthorized" "$(show "$work/tb.out")" "$(show "$work/tb.err")"; fi

# secrets: create generic from literals (kubectl 1.32+ sends it as protobuf), get -o yaml
# (data base64, type Opaque, no stringData), the NAME TYPE DATA AGE table, delete
secret="kc$minor-secret-$run_id"
if kc "$work/sc.out" "$work/sc.err" create secret generic "$secret" -n "$NS" --from-literal=a=b --from-literal=pw=s3cr3t &&
  grep -qx "secret/$secret created" "$work/sc.out"; then pass "create secret generic --from-literal"; else
  fail "create secret generic --from-literal" "$(show "$work/sc.out")" "$(show "$work/sc.err")"; fi
if kc "$work/sy.out" "$work/sy.err" get secret "$secret" -n "$NS" -o yaml &&
  grep -qx '  a: Yg==' "$work/sy.out" && grep -qx '  pw: czNjcjN0' "$work/sy.out" &&
  grep -qx 'type: Opaque' "$work/sy.out" && ! grep -q stringData "$work/sy.out"; then
  pass "get secret -o yaml (data base64, type Opaque)"
else
  fail "get secret -o yaml" "$(show "$work/sy.out")" "$(show "$work/sy.err")"
fi
if kc "$work/st.out" "$work/st.err" get secrets -n "$NS" &&
  head -1 "$work/st.out" | grep -qE '^NAME +TYPE +DATA +AGE$' &&
  grep -qE "^$secret +Opaque +2 +" "$work/st.out"; then pass "get secrets (NAME TYPE DATA AGE)"; else
  fail "get secrets" "$(show "$work/st.out")" "$(show "$work/st.err")"; fi
if kc "$work/sd.out" "$work/sd.err" delete secret "$secret" -n "$NS" &&
  grep -q "^secret \"$secret\" deleted" "$work/sd.out"; then pass "delete secret"; else
  fail "delete secret" "$(show "$work/sd.out")" "$(show "$work/sd.err")"; fi

# delete pod, then it is gone
if kc "$work/d.out" "$work/d.err" delete pod "$pod_main" -n "$NS" &&
  grep -q "^pod \"$pod_main\" deleted" "$work/d.out"; then pass "delete pod"; else
  fail "delete pod" "$(show "$work/d.out")" "$(show "$work/d.err")"; fi
if ! kc "$work/n.out" "$work/n.err" get pod "$pod_main" -n "$NS" &&
  grep -qxF "Error from server (NotFound): pods \"$pod_main\" not found" "$work/n.err"; then
  pass "get deleted pod is NotFound"; else
  fail "get deleted pod: expected NotFound" "$(show "$work/n.out")" "$(show "$work/n.err")"; fi

# ConfigMaps, Services, Deployments, Jobs, CRDs and custom resources: apply and patch.
# shellcheck source=tests/conformance/kubectl-objects.sh
. "$(dirname "${BASH_SOURCE[0]}")/kubectl-objects.sh"

echo "[$tag] $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
