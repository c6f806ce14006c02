#!/usr/bin/env bash
# The release image, checked as a user gets it: scripts/image.sh builds argoexec-rs:TAG and
# TAG-nonroot and their `docker save` archive; the images are removed, the archive loaded
# back, and each image must have its entrypoint, user, OCI labels and programs (the local
# tools must not be there), and only the emissary executor (init refuses the others). The
# same archive is imported into the local node's containerd, where the nonroot image runs
# hello-world. Run by scripts/test.sh after the cargo tests. ARGOEXEC_NODE_BIN names the
# argoexec (with argoexec-local beside it) that runs it; default target/debug/argoexec.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-docker}
tag=check-$$
name=argoexec-rs
fail() { echo "check-image: FAILED: $*" >&2; exit 1; }
# The tests' profile (the build scripts/images.sh already made, ARGOEXEC_IMAGE_PROFILE);
# scripts/image.sh defaults to dist.
archive=$(bash scripts/image.sh --tag "$tag" --profile "${ARGOEXEC_IMAGE_PROFILE:-quick}" | tail -1)
trap '"$DOCKER" image rm -f "$name:$tag" "$name:$tag-nonroot" >/dev/null 2>&1 || true; rm -f "$archive"' EXIT
"$DOCKER" image rm "$name:$tag" "$name:$tag-nonroot" >/dev/null
"$DOCKER" load -i "$archive" >/dev/null || fail "docker load -i $archive"
for ref in "$name:$tag" "$name:$tag-nonroot"; do
  entry=$("$DOCKER" image inspect -f '{{json .Config.Entrypoint}}' "$ref")
  [ "$entry" = '["/argoexec"]' ] || fail "$ref entrypoint $entry"
  version=$("$DOCKER" image inspect -f '{{index .Config.Labels "org.opencontainers.image.version"}}' "$ref")
  [ "$version" = "$tag" ] || fail "$ref label org.opencontainers.image.version=$version"
  "$DOCKER" image inspect -f '{{index .Config.Labels "org.opencontainers.image.revision"}}' "$ref" | grep -Eq '^[0-9a-f]{40}$|^unknown$' ||
    fail "$ref has no revision label"
  out=$("$DOCKER" run --rm --network none "$ref" version) || fail "$ref version"
  [[ "$out" == *argoexec-rs*"executors: emissary)" ]] || fail "$ref version printed: $out"
  executors=$("$DOCKER" image inspect -f '{{index .Config.Labels "io.argoexec-rs.executors"}}' "$ref")
  [ "$executors" = emissary ] || fail "$ref label io.argoexec-rs.executors=$executors"
  # Argo v3.3's other executors are left out of the default image: init refuses them at once,
  # naming the way out, before a main could run unwatched.
  if out=$("$DOCKER" run --rm --network none -e ARGO_POD_NAME=p -e ARGO_CONTAINER_RUNTIME_EXECUTOR=pns \
    -e ARGO_TEMPLATE='{"name":"t","container":{"image":"x"}}' "$ref" init 2>&1); then
    fail "$ref init ran with the pns executor"
  fi
  [[ "$out" == *"the pns executor is not built into this argoexec"*"-legacy"* ]] || fail "$ref init with pns printed: $out"
  out=$("$DOCKER" run --rm --network none --entrypoint /argoexec-emissary "$ref" version) || fail "$ref emissary version"
  [[ "$out" == argoexec-emissary* ]] || fail "$ref /argoexec-emissary version printed: $out"
  # The init-less layout's wrapper path (the image volume at /argo-bin): the same program.
  out=$("$DOCKER" run --rm --network none --entrypoint /bin/argoexec "$ref" version) || fail "$ref /bin/argoexec version"
  [[ "$out" == argoexec-emissary* ]] || fail "$ref /bin/argoexec version printed: $out"
  # The local tools are not in the image, and argoexec says so.
  if out=$("$DOCKER" run --rm --network none "$ref" run x.yaml 2>&1); then fail "$ref ran 'run'"; fi
  [[ "$out" == *argoexec-local* ]] || fail "$ref 'run' printed: $out"
done
user=$("$DOCKER" image inspect -f '{{.Config.User}}' "$name:$tag-nonroot")
[ "$user" = 8737 ] || fail "nonroot user is '$user'"
root_user=$("$DOCKER" image inspect -f '{{.Config.User}}' "$name:$tag")
[ -z "$root_user" ] || fail "root image user is '$root_user'"
# containerd takes the same archive: imported into the local node's containerd (scripts/
# containerd-up.sh), the nonroot image runs hello-world there as the executor and pause image.
sock=/run/argoexec-containerd/containerd.sock
ctr --address "$sock" version >/dev/null 2>&1 || fail "the local node's containerd does not answer (bash scripts/containerd-up.sh)"
ctr_() { ctr --address "$sock" -n argoexec "$@"; }
trap '"$DOCKER" image rm -f "$name:$tag" "$name:$tag-nonroot" >/dev/null 2>&1 || true; rm -f "$archive"
  ctr_ images rm "docker.io/library/$name:$tag" "docker.io/library/$name:$tag-nonroot" >/dev/null 2>&1 || true' EXIT
ctr_ images import "$archive" >/dev/null || fail "ctr images import"
ctr_ images ls -q | grep -q "$name:$tag-nonroot" || fail "ctr lists no $name:$tag-nonroot"
bin=${ARGOEXEC_NODE_BIN:-${CARGO_TARGET_DIR:-target}/debug/argoexec}
[ -x "$bin" ] || cargo build --locked -p argoexec -p argoexec-local
out=$("$bin" run --runtime containerd --executor-image "$name:$tag-nonroot" examples/hello-world.yaml 2>&1) ||
  fail "hello-world on containerd with $name:$tag-nonroot: $(echo "$out" | tail -3)"
[[ "$out" == *"result:     hello world"* ]] || fail "hello-world on containerd printed: $out"
echo "check-image: ctr images import, hello-world on containerd with $name:$tag-nonroot: ok"
echo "check-image: ok ($(stat -c %s "$archive") bytes archive; $name:$tag and $name:$tag-nonroot)"
