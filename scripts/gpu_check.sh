#!/usr/bin/env bash
# GPU check: run, on a machine with a CUDA GPU, everything that needs one, with wall timings.
#
#   bash scripts/gpu_check.sh            # from anywhere; works in the repository root
#   OUT=/some/dir bash scripts/gpu_check.sh
#
# Steps (each is timed; a failing step is recorded and the next ones still run; the script
# exits 1 if any step failed):
#   1. the virtual environment: `make install TORCH=cuda` (PyPI's CUDA build of torch) plus the
#      benchmark extra (`pip install -e ".[test,bench]"`); needs network access unless $VENV
#      already holds a CUDA build of torch (then nothing is downloaded);
#   2. the GPU tests (tests/test_device.py, marker `gpu`) and the loss tests;
#   3. the benchmark on the GPU into benchmarks/results/cuda/ (results.csv, results.md,
#      throughput.png);
#   4. the book at the full profile on the GPU: `infonce-book build --profile full --device cuda`.
# Output folder: $OUT if set, else _build/gpu_check/: timings.txt (one line a step: name, wall
# seconds, exit status), each step's log, nvidia-smi.txt, environment.txt, and copies of
# _build/timings.json, the ledger (ledger.json) and the benchmark results.
# Variables: VENV (default .venv; a CPU-only torch there is refused, see README "Running on a
# GPU"), PYTHON (for creating the venv), BENCH_ARGS (extra benchmark options), SKIP_BOOK=1.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

OUT_DIR="${OUT:-$ROOT/_build/gpu_check}"
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
BENCH_ARGS="${BENCH_ARGS:-}"
export INFONCE_BOOK_NO_PROGRESS=1

mkdir -p "$OUT_DIR"
TIMINGS="$OUT_DIR/timings.txt"
: > "$TIMINGS"
FAILED=()

# run_step NAME COMMAND...: run COMMAND with its output to the terminal and NAME.log, and append
# "NAME<TAB>seconds<TAB>rc=N" to timings.txt. Never exits on failure: the step is added to FAILED
# (unless OPTIONAL=1 is set for the call).
run_step() {
  local name="$1"
  shift
  local start end rc
  echo "=== $name: $*"
  start=$(date +%s%N)
  set +e
  "$@" 2>&1 | tee "$OUT_DIR/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  end=$(date +%s%N)
  awk -v n="$name" -v s="$start" -v e="$end" -v rc="$rc" \
    'BEGIN { printf "%s\t%.1f s\trc=%d\n", n, (e - s) / 1e9, rc }' >> "$TIMINGS"
  if [ "$rc" -ne 0 ] && [ "${OPTIONAL:-0}" = "1" ]; then
    echo "=== $name failed (exit $rc; optional, not counted)"
  elif [ "$rc" -ne 0 ]; then
    FAILED+=("$name")
    echo "=== $name FAILED (exit $rc)"
  fi
  return 0
}

if ! command -v nvidia-smi > /dev/null 2>&1; then
  echo "nvidia-smi not found: this script needs a machine with an NVIDIA GPU" >&2
  exit 1
fi
nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1 || true

# 1. Environment. A venv whose torch has no CUDA support cannot be turned into a CUDA one by
#    `make install` (it keeps an installed torch): refuse rather than test the CPU build.
if [ -x "$PY" ] && "$PY" -c "import torch" > /dev/null 2>&1; then
  if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.version.cuda else 1)"; then
    echo "$VENV holds a CPU-only torch build; remove it (rm -rf $VENV) or set VENV=.venv-cuda" >&2
    exit 1
  fi
fi
run_step install make install TORCH=cuda VENV="$VENV" ${PYTHON:+PYTHON="$PYTHON"}
# Optional: without the peer library the benchmark marks its column "missing".
OPTIONAL=1 run_step install_bench "$PY" -m pip install --quiet -e ".[test,bench]"
"$PY" - > "$OUT_DIR/environment.txt" 2>&1 << 'EOF' || true
import platform, torch
print("python", platform.python_version())
print("torch", torch.__version__, "cuda", torch.version.cuda)
print("cuda available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0))
EOF
if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "torch in $VENV does not see a CUDA device (see $OUT_DIR/environment.txt)" >&2
  FAILED+=("cuda_available")
fi

# 2. Tests: the GPU tests (run, not skipped, when a GPU is present) and the loss tests.
run_step test_gpu "$PY" -m pytest tests/test_device.py -m gpu -v -rs
run_step test_device_and_losses "$PY" -m pytest tests/test_device.py tests/test_losses.py -q -rs

# 3. Benchmark on the GPU.
# shellcheck disable=SC2086  # BENCH_ARGS is a list of options
run_step benchmark "$PY" benchmarks/bench_infonce.py --device cuda --out benchmarks/results/cuda $BENCH_ARGS
if [ -d benchmarks/results/cuda ]; then
  mkdir -p "$OUT_DIR/benchmark"
  cp -f benchmarks/results/cuda/* "$OUT_DIR/benchmark/" 2> /dev/null || true
fi

# 4. The book at the full profile on the GPU.
if [ "${SKIP_BOOK:-0}" != "1" ]; then
  run_step book_full "$VENV/bin/infonce-book" build --profile full --device cuda
  [ -f _build/timings.json ] && cp -f _build/timings.json "$OUT_DIR/timings.json"
  "$VENV/bin/infonce-book" ledger --format json > "$OUT_DIR/ledger.json" 2> "$OUT_DIR/ledger.err" || true
fi

echo "--- wall timings ($TIMINGS)"
cat "$TIMINGS"
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "failed steps: ${FAILED[*]}" | tee -a "$TIMINGS"
  exit 1
fi
echo "all steps passed" | tee -a "$TIMINGS"
