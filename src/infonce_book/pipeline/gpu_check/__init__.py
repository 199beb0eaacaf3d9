"""The offline GPU check: GPU tests, the CUDA benchmark and every chapter, with no network.

    make gpu-wheels                           # here, with network: fill .gpu-wheels/ for the GPU
                                              # machine's Python (3.12, x86-64 Linux)
    bash scripts/gpu_check.sh                 # there: its own python3, the package from src/,
                                              # the carried wheels; nothing downloaded
    bash scripts/gpu_check.sh --rehearse      # here, on a CPU: the same route (smoke profile, cpu)

The GPU machine this project can use is offline, runs one command of at most 10 minutes and returns
at most 8 files; its ``python3`` has torch and the scientific stack but not the notebook tool chain
(:mod:`.machine`: ``DEVICE_PACKAGES`` and the other constants). The check

1. installs the carried wheels (:mod:`.carried`) into ``<work>/site`` and runs everything with
   ``PYTHONPATH=<work>/site:src`` (the package is not installed there);
2. runs the stages ``setup``, ``tests``, ``benchmark`` and ``chapters``, each within a time budget
   (:mod:`.route`, :mod:`.limits`); the chapters run through papermill, or through the direct
   runner (:mod:`.direct`) when the tool chain does not import;
3. writes one bundle of at most 8 files (:mod:`.bundle`) to ``$OUT`` when set, else to
   ``_build/gpu_check/``; also when a stage fails. The exit status is 0 only when every stage passed.

``--rehearse`` (:mod:`.rehearsal`) runs the same route on a CPU machine, offline. The commands are
in :mod:`.cli`; ``scripts/gpu_check.py`` is a thin entry point that puts this tree's ``src/`` on
``sys.path``. README.md, "Running on a GPU", is the user's guide.

Standard library only at import time (the orchestrator runs before the wheels are installed):
``packaging`` and the chapters' libraries are imported inside the functions that need them.
"""

from .bundle import check_bundle, junit_summary, write_bundle
from .carried import carried_distributions, check_wheel_folder, download_wheels, wheel_from_installed
from .cli import main
from .direct import myst_code_cells, read_code_cells, run_direct
from .limits import fair_share, run_limited, stop_group
from .machine import (
    BENCH_ARGS,
    BUNDLE,
    DEVICE_BUDGET_S,
    DEVICE_PACKAGES,
    DEVICE_PYTHON,
    RESERVE_S,
    STAGE_BUDGET_S,
    STAGES,
    TEST_FILES,
    canon,
)
from .rehearsal import build_standin, rehearse
from .route import Run

__all__ = ["BENCH_ARGS", "BUNDLE", "DEVICE_BUDGET_S", "DEVICE_PACKAGES", "DEVICE_PYTHON", "RESERVE_S", "STAGES",
           "STAGE_BUDGET_S", "TEST_FILES", "Run", "build_standin", "canon", "carried_distributions",
           "check_bundle", "check_wheel_folder", "download_wheels", "fair_share", "junit_summary", "main",
           "myst_code_cells", "read_code_cells", "rehearse", "run_direct", "run_limited", "stop_group",
           "wheel_from_installed", "write_bundle"]
