#!/usr/bin/env bash
# Build the executor image a cluster pulls, without a registry or a base image:
#   NAME:TAG          — FROM scratch: /argoexec (init, wait, artifact; the entrypoint),
#                       /argoexec-emissary (the per-pod copy init installs) and its hard
#                       link /bin/argoexec (what v4.1's init-less pods run from the image
#                       volume at /argo-bin), the CA bundle, /tmp; runs as root like Argo's
#                       argoexec image;
#   NAME:TAG-nonroot  — the same files, USER 8737 (Argo's non-root UID; group 0), for Pod
#                       Security "restricted" (runAsNonRoot).
# Both carry OCI labels. Unless --no-archive, `docker save` writes both to
# target/image/NAME-TAG.tar (docker load, ctr images import and registry tools take it).
#   bash scripts/image.sh [--name argoexec-rs] [--tag <workspace version>] [--no-archive]
#                         [--profile dist|release|quick] [--executors emissary|all]
# The default profile is `dist` (fat LTO: the smallest programs); scripts/images.sh builds the
# local argoexec:dev with `quick` (the demo's and the tests'), or `release` under the
# benchmarks (both build faster). The default executors are the
# emissary only (Argo v3.4 and later); `--executors all` adds Argo v3.3's docker, kubelet,
# k8sapi and pns, for a `-legacy` tag (docs/deploy.md):
#   bash scripts/image.sh --executors all --tag 0.1.0-legacy
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-docker}
name=argoexec-rs
tag=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
archive=1
profile=dist
executors=emissary
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --no-archive) archive=0; shift ;;
    --profile) profile=$2; shift 2 ;;
    --executors) executors=$2; shift 2 ;;
    *) echo "image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

static_dir=$(bash scripts/build-static.sh --profile "$profile" --executors "$executors" | tail -1)
root=$work/root
mkdir -p "$root/etc/ssl/certs" "$root/tmp"
chmod 1777 "$root/tmp"
install -m 0555 "$static_dir/argoexec" "$static_dir/argoexec-emissary" "$root/"
# Argo v4.1's init-less layout mounts this image at /argo-bin and runs
# /argo-bin/bin/argoexec (emissary, kill) from it: the per-pod copy, as a hard link (stored
# once in the layer).
mkdir -p "$root/bin"
ln "$root/argoexec-emissary" "$root/bin/argoexec"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null ||
  : >"$root/etc/ssl/certs/ca-certificates.crt"
# No /etc/passwd or /etc/group: with one naming UID 8737, a pod that sets runAsUser without
# runAsGroup would get that entry's group in the executor's containers but group 0 in images
# without it, and a pns wait could no longer read a main of the same UID (ptrace access needs
# the same uid and gid).

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
labels=(
  -c "LABEL org.opencontainers.image.title=\"argoexec-rs\""
  -c "LABEL org.opencontainers.image.description=\"Argo Workflows pod executor (argoexec) in Rust\""
  -c "LABEL org.opencontainers.image.version=\"$tag\""
  -c "LABEL io.argoexec-rs.executors=\"$executors\""
  -c "LABEL org.opencontainers.image.revision=\"$revision\""
  -c "LABEL org.opencontainers.image.created=\"$created\""
  -c "LABEL org.opencontainers.image.licenses=\"Apache-2.0\""
  -c "LABEL org.opencontainers.image.source=\"$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -1)\""
)
common=(
  -c 'ENV PATH=/'
  -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'
  -c 'ENTRYPOINT ["/argoexec"]'
)
build() { # REF, extra change lines…
  local ref=$1; shift
  local old
  old=$("$DOCKER" image inspect -f '{{.Id}}' "$ref" 2>/dev/null || true)
  tar -C "$root" --owner=0 --group=0 --numeric-owner -c . |
    "$DOCKER" import "${labels[@]}" "${common[@]}" "$@" - "$ref" >/dev/null
  # The replaced build is dangling now; remove it unless a container still uses it.
  local new
  new=$("$DOCKER" image inspect -f '{{.Id}}' "$ref")
  if [ -n "$old" ] && [ "$old" != "$new" ]; then "$DOCKER" image rm "$old" >/dev/null 2>&1 || true; fi
  echo "image: built $ref ($("$DOCKER" image inspect -f '{{.Size}}' "$ref") bytes)" >&2
}
build "$name:$tag"
build "$name:$tag-nonroot" -c 'USER 8737'

if [ "$archive" = 1 ]; then
  mkdir -p target/image
  out=target/image/$name-$tag.tar
  "$DOCKER" save -o "$out" "$name:$tag" "$name:$tag-nonroot"
  echo "image: wrote $out ($(stat -c %s "$out") bytes): docker load -i $out | ctr images import $out" >&2
  echo "$out"
fi
