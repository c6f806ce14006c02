#!/usr/bin/env bash
# The main job, for now: build argoexec and run one Argo step the way a pod would, with
# init, the emissary-wrapped main container and wait as three real processes sharing a
# re-rooted /var/run/argo (ARGOEXEC_PATH_ROOT). Prints the outputs wait reported.
#   bash scripts/demo.sh [examples/script-outputs.json]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
template_file=${1:-examples/script-outputs.json}
cargo build --release --locked -q -p argoexec
bin=$PWD/target/release/argoexec
root=$(mktemp -d /tmp/argoexec-demo.XXXXXX)
mkdir -p "$root/work"
template=$(sed "s#{{work}}#$root/work#g; s#{{repo}}#$root/repo#g" "$template_file")
export ARGOEXEC_PATH_ROOT=$root ARGO_POD_NAME=demo-pod ARGO_TEMPLATE=$template \
  ARGO_INCLUDE_SCRIPT_OUTPUT=true ARGOEXEC_REPORT_FILE=$root/report.json
echo "== init"; "$bin" init
echo "== wait (background)"; "$bin" wait & wait_pid=$!
echo "== main"
script=$(python3 -c 'import json,sys; t=json.loads(sys.argv[1]); print(t["script"]["source"])' "$template")
cmd=$(python3 -c 'import json,sys; t=json.loads(sys.argv[1]); print(" ".join(t["script"]["command"]))' "$template")
ARGO_CONTAINER_NAME=main "$bin" emissary -- $cmd "$root/argo/staging/script" || echo "main exited $?"
wait "$wait_pid"; echo "wait exited $?"
echo "== reported outputs ($root/report.json)"
cat "$root/report.json"; echo
echo "== artifact repository: $root/repo"
find "$root/repo" -type f | sort
