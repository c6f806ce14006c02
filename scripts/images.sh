#!/usr/bin/env bash
# Build the images the local node runs, without any registry:
#   busybox:latest — a rootfs of Debian's busybox-static, `docker import`ed;
#   noshell:latest — FROM scratch + /bin/busybox alone: no sh, no kill (for kill-without-shell tests);
#   argoexec:dev and argoexec:dev-nonroot — the executor image (scripts/image.sh): the static
#                    in-pod programs (argoexec, and argoexec-emissary, the per-pod copy init
#                    installs) + the CA bundle. The local tools (argoexec-local) are built by the
#                    same run but stay out of the image;
#   argoexec-plugin-hello:dev — FROM scratch + the static argoexec-plugin-hello, the executor
#                    plugin the agent tests run as a sidecar (USER 8737, port 4355);
#   argoexec-plugin-dir:dev — FROM scratch + the static argoexec-plugin-dir, the artifact
#                    plugin (Argo v4.0+) the artifact tests run: a directory-backed store,
#                    serving on the socket path Argo appends (USER 8737).
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-docker}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$DOCKER" image inspect busybox:latest >/dev/null 2>&1; then
  root=$work/busybox
  mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/var/run"
  chmod 1777 "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
  done
  echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
  tar -C "$root" -c . | "$DOCKER" import -c 'ENV PATH=/bin' - busybox:latest >/dev/null
  echo "images: built busybox:latest"
fi

if ! "$DOCKER" image inspect noshell:latest >/dev/null 2>&1; then
  root=$work/noshell
  mkdir -p "$root/bin" "$root/tmp" "$root/etc"
  chmod 1777 "$root/tmp"
  cp "$(command -v busybox)" "$root/bin/busybox"
  echo 'root:x:0:0:root:/:/bin/busybox' > "$root/etc/passwd"
  tar -C "$root" -c . | "$DOCKER" import -c 'ENV PATH=/bin' - noshell:latest >/dev/null
  echo "images: built noshell:latest"
fi

# The executor image under the name the tests use, from the same script a release uses, in
# the cargo profile ARGOEXEC_IMAGE_PROFILE (default `quick`, the demo's: one build for the
# image and the host, which the tests use too; scripts/bench.sh sets `release`).
profile=${ARGOEXEC_IMAGE_PROFILE:-quick}
DOCKER="$DOCKER" bash scripts/image.sh --name "${ARGOEXEC_IMAGE_NAME:-argoexec}" --tag dev --no-archive --profile "$profile" --executors all

# The tests' plugins, from the same static build (already built: cargo only checks); not for
# the main job (scripts/demo.sh sets ARGOEXEC_STATIC_PROGRAMS=main: they are test-only tools).
[ "${ARGOEXEC_STATIC_PROGRAMS:-all}" = main ] && exit 0
static_dir=$(bash scripts/build-static.sh --profile "$profile" --executors all | tail -1)
root=$work/plugin
mkdir -p "$root/tmp"
chmod 1777 "$root/tmp"
cp "$static_dir/argoexec-plugin-hello" "$root/argoexec-plugin-hello"
tar -C "$root" -c . | "$DOCKER" import -c 'ENTRYPOINT ["/argoexec-plugin-hello"]' -c 'USER 8737' \
  - argoexec-plugin-hello:dev >/dev/null
echo "images: built argoexec-plugin-hello:dev"

# The tests' artifact plugin, from the same static build.
root=$work/plugin-dir
mkdir -p "$root/tmp"
chmod 1777 "$root/tmp"
cp "$static_dir/argoexec-plugin-dir" "$root/argoexec-plugin-dir"
tar -C "$root" -c . | "$DOCKER" import -c 'ENTRYPOINT ["/argoexec-plugin-dir"]' -c 'USER 8737' \
  - argoexec-plugin-dir:dev >/dev/null
echo "images: built argoexec-plugin-dir:dev"
