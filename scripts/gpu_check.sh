#!/usr/bin/env bash
# GPU check with no network: GPU tests, CUDA benchmark, every chapter; see scripts/gpu_check.py.
#
#   bash scripts/gpu_check.sh                  # on the GPU machine: its own python3, the package
#                                              # from src/, the wheels carried in .gpu-wheels/
#   bash scripts/gpu_check.sh --rehearse       # on a CPU machine: the same route, offline
#                                              # (PIP_NO_INDEX=1), smoke profile, --device cpu
#   bash scripts/gpu_check.sh --chapters c1_rate,c2_search --budget 300    # options: --help
#
# The bundle (at most 8 files) goes to $OUT when set, else to _build/gpu_check/. Exit status 0
# only when every stage passed. PYTHON names the interpreter (default: python3 on the GPU
# machine; the project's .venv/bin/python for --rehearse, which stands in for the GPU machine's
# and must exist: `make install` first).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ "${1:-}" = "--rehearse" ] || [ "${1:-}" = "rehearse" ]; then
  PY="${PYTHON:-${VENV:-.venv}/bin/python}"
  if [ ! -x "$PY" ]; then
    echo "error: $PY not found; the rehearsal stands the project's .venv in for the GPU machine's" \
         "interpreter: run \`make install\` first" >&2
    exit 2
  fi
  export PIP_NO_INDEX=1
else
  PY="${PYTHON:-python3}"
fi
exec "$PY" scripts/gpu_check.py "$@"
