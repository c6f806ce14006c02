#!/usr/bin/env bash
# Build the statically linked release programs (glibc static-pie) in one cargo run:
#   argoexec          — the in-pod executor (init, wait, artifact); the image's entrypoint;
#   argoexec-emissary — the per-pod copy init installs at /var/run/argo/argoexec;
#   argoexec-local    — the local tools (run, node, render), for the host;
#   argoexec-plugin-hello — the tests' executor plugin (scripts/images.sh), never in the
#                       executor image;
#   argoexec-plugin-dir — the tests' artifact plugin (scripts/images.sh), never in the
#                       executor image.
# The same build serves the image and the host (scripts/demo.sh runs the host's tools from
# it). Symbols are stripped by the profile. Prints the sizes, then the directory last.
#   bash scripts/build-static.sh [--profile release|quick|dist] [--executors all|emissary]
# `release` (default: the benchmarks') builds fast, `quick` (opt-level 1: the demo's and the
# tests') faster; `dist` (fat LTO, one codegen unit: the image a cluster pulls,
# scripts/image.sh) is smaller and takes longer (root Cargo.toml).
# `--executors all` (default) builds every backend; `emissary` leaves out Argo v3.3's docker,
# kubelet, k8sapi and pns (argoexec's feature `legacy`; Argo v3.4 removed them), and builds
# only the image's programs (argoexec, argoexec-emissary): the host's tools and the tests'
# plugins come from the `all` build, and building them again without the feature would only
# cost minutes. ARGOEXEC_STATIC_PROGRAMS=main (scripts/demo.sh) leaves the tests' two plugins
# out of the `all` build: the main job builds only what it runs (scripts/images.sh then makes
# no plugin images).
# An explicit --target is needed so that proc-macro crates are still built dynamically.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
features=()
packages=(-p argoexec -p argoexec-emissary -p argoexec-local)
case "${ARGOEXEC_STATIC_PROGRAMS:-all}" in
  all) packages+=(-p argoexec-plugin-hello -p argoexec-plugin-dir) ;;
  main) ;;
  *) echo "build-static.sh: ARGOEXEC_STATIC_PROGRAMS must be all or main" >&2; exit 2 ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=${2:?--profile needs release, quick or dist}; shift 2 ;;
    --executors)
      case "${2:-}" in
        all) features=() ;;
        emissary) features=(--no-default-features); packages=(-p argoexec -p argoexec-emissary) ;;
        *) echo "build-static.sh: --executors needs all or emissary" >&2; exit 2 ;;
      esac
      shift 2 ;;
    *) echo "build-static.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
target=$(rustc -vV | sed -n 's/^host: //p')
# Under CARGO_TARGET_DIR when set (CI keeps its build cache outside the clone).
dir="${STATIC_TARGET_DIR:-${CARGO_TARGET_DIR:-target}/static}"
echo "build-static: cargo build --profile $profile ${features[*]} (static; the first build takes several minutes)" >&2
# pack-relative-relocs: the static-pie's relocations as DT_RELR (glibc 2.36+, binutils 2.38+),
# 0.7 MB less than RELA in argoexec, the same program at run time.
RUSTFLAGS="-C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs" cargo build --profile "$profile" --locked --target "$target" \
  "${features[@]}" "${packages[@]}" --target-dir "$dir"
out="$dir/$target/$profile"
ls -l "$out/argoexec" "$out/argoexec-emissary" >&2
echo "$out"
