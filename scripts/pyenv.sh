#!/usr/bin/env bash
# Usage: scripts/pyenv.sh [SUITE]   (SUITE: conformance (default), moto, fake-gcs or awscli)
# Creates the suite's virtualenv .venv-SUITE (for conformance, override with ARGOEXEC_VENV)
# with the exact pins of tests/SUITE/requirements.txt. One venv per suite because the
# kubernetes client, moto and awscli pin clashing versions of the same packages. Idempotent: when
# the venv's stamp matches the requirements file (sha256) and the venv's interpreter still
# runs, it returns at once. Otherwise the venv is recreated from scratch, so it never holds
# anything but the pinned set. Python packages are only ever installed inside this venv.
# Prints the venv's path on stdout (last line).
set -euo pipefail
cd "$(dirname "$0")/.."

suite=${1:-conformance}
case "$suite" in
  conformance) venv=${ARGOEXEC_VENV:-$PWD/.venv-conformance} ;;
  moto | fake-gcs | awscli) venv=$PWD/.venv-$suite ;;
  *) echo "pyenv: unknown suite $suite (conformance, moto, fake-gcs, awscli)" >&2; exit 2 ;;
esac
req=tests/$suite/requirements.txt
python=${ARGOEXEC_PYTHON:-python3}
stamp="$venv/.argoexec-requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$venv/bin/python" -c '' 2>/dev/null; then
  echo "$venv"
  exit 0
fi

command -v "$python" >/dev/null || { echo "pyenv: $python not found" >&2; exit 1; }
if [ -e "$venv" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
  # Only remove something that is a virtualenv (guards against a mistyped ARGOEXEC_VENV).
  [ -f "$venv/pyvenv.cfg" ] || { echo "pyenv: $venv exists and is not a virtualenv; not touching it" >&2; exit 1; }
  echo "pyenv: requirements changed or venv broken; recreating $venv" >&2
  rm -rf "$venv"
fi
echo "pyenv: creating $venv ($("$python" --version 2>&1))" >&2
"$python" -m venv "$venv" || {
  echo "pyenv: '$python -m venv' failed (on Debian's own python3: apt-get install python3-venv)" >&2
  exit 1
}
"$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check -r "$req" >&2
"$venv/bin/python" -m pip check >&2
echo "$want" >"$stamp"
echo "$venv"
