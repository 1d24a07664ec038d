#!/usr/bin/env bash
# Set up a virtual environment and run the main job or the tests.
#   scripts/dev.sh run [conform-run-args...]   install, then `conform run testsuite`
#   scripts/dev.sh test [pytest-args...]       install with test extras, then pytest
# VENV (default .venv) and PYTHON (default: newest python3.12+/python3 found) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

pick_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  # StableHLO's newer bindings (jaxlib >= 0.12) need Python >= 3.12; prefer it.
  for c in python3.13 python3.12; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys' >/dev/null 2>&1; then echo "$c"; return; fi
  done
  for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[23]*/bin/python3; do
    if [ -x "$c" ]; then echo "$c"; return; fi
  done
  echo python3
}

mode=${1:-test}
shift || true
if [ ! -x "$VENV/bin/python" ]; then
  "$(pick_python)" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
case "$mode" in
  run)
    "$VENV/bin/python" -m pip install -q -e .
    exec "$VENV/bin/conform" run testsuite "$@"
    ;;
  test)
    "$VENV/bin/python" -m pip install -q -e '.[test]'
    exec "$VENV/bin/python" -m pytest -q -n 2 "$@"
    ;;
  *)
    echo "usage: scripts/dev.sh run|test [args...]" >&2
    exit 2
    ;;
esac
