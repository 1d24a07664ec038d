#!/usr/bin/env bash
# The gate on a GPU (or any accelerator's) PJRT plugin: does it load, the official suites on it, its report.
#
#   scripts/gpu_check.sh [BACKEND] [SUITE] [OUT]
#
# BACKEND  default pjrt:xla_cuda13 (JAX's CUDA plugin: pip install jax-cuda13-pjrt jax-cuda13-plugin);
#          pjrt:xla_cuda12, pjrt:/path/to/libvendor_pjrt.so, ... as `conform backends` lists them
# SUITE    a folder holding the official interpret/ and testdata/ folders (default ../shared/stablehlo-suite)
# OUT      where the results go (default gpu-check/): interpret.json/.html, testdata.json,
#          report/ (report.html, report.json, junit.xml), log.txt (everything printed)
# JOBS     worker processes (default: the CPU count, at most 8); each worker's plugin process
#          shares the device, without preallocating its memory (XLA_PYTHON_CLIENT_PREALLOCATE=false
#          unless set)
# Runs with `conform` on the PATH, else from this source checkout with $PYTHON (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-pjrt:xla_cuda13}
S=${2:-../shared/stablehlo-suite}
W=${3:-gpu-check}
J=${JOBS:-$(n=$(nproc); echo $(( n > 8 ? 8 : n )))}
if command -v conform >/dev/null 2>&1; then C=(conform); else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}; C=("${PYTHON:-python3}" -m stablehlo_conform.cli); fi
mkdir -p "$W"
: > "$W/log.txt"
start=$(date +%s)
worst=0
# run STEP-NAME COMMAND...: its output on the terminal and in log.txt; the worst exit code is the script's
run() {
  local name=$1; shift
  echo "== $name ($(( $(date +%s) - start )) s)" | tee -a "$W/log.txt"
  "$@" 2>&1 | tee -a "$W/log.txt"
  local rc=${PIPESTATUS[0]}
  (( rc > worst )) && worst=$rc
  return "$rc"
}
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L | tee -a "$W/log.txt"
run "versions" "${PYTHON:-python3}" -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__)"
loads() {  # whether `conform backends` says the backend loads
  "${PYTHON:-python3}" -c 'import json, sys; sys.exit(0 if any(d["name"] == sys.argv[2] and d["loads"]
    for d in json.load(open(sys.argv[1]))) else 1)' "$W/backends.json" "$B"
}
run "backends $B" "${C[@]}" backends "$B" --json "$W/backends.json"
if ! loads; then
  echo "$B does not load: nothing else runs" | tee -a "$W/log.txt"; exit 2
fi
run "interpret" "${C[@]}" run "$S/interpret" --backend "$B" -j "$J" -q --json "$W/interpret.json" --html "$W/interpret.html"
run "testdata" "${C[@]}" run "$S/testdata" --backend "$B" -j "$J" -q --json "$W/testdata.json"
run "plugin report" "${C[@]}" plugin-report "$B" "$S/interpret" "$S/testdata" -j "$J" -q -o "$W/report"
echo "== end ($(( $(date +%s) - start )) s): exit $worst (0: every test passed; 1: a test did not; 2: usage)" | tee -a "$W/log.txt"
exit "$worst"
