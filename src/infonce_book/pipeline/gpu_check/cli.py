"""``scripts/gpu_check.py`` (``bash scripts/gpu_check.sh``): the commands of the offline GPU check.

    gpu_check.py [run] [--profile P --device D --chapters A,B --stages S --budget SECONDS ...]
    gpu_check.py rehearse | --rehearse [--cache-from DIR --wheels DIR ...]
    gpu_check.py wheels [--dest DIR --python-version 3.12]      (make gpu-wheels)
    gpu_check.py carried [--python-version 3.12]                 (the carried set, one name==version a line)
    gpu_check.py direct-chapter CHAPTER [--profile --device --seed --build-dir]
    gpu_check.py probe                                           (internal: the setup stage's probe)
"""

from __future__ import annotations

import argparse
import os
import sys

from .carried import carried_distributions, download_wheels
from .direct import main_direct_chapter
from .machine import DEFAULT_WHEELS, DEFAULT_WORK, DEVICE_BUDGET_S, DEVICE_PYTHON, STAGES
from .probe import main_probe
from .rehearsal import rehearse
from .route import main_run

__all__ = ["command_line", "main", "parser"]

DESCRIPTION = "GPU check that needs no network: GPU tests, the CUDA benchmark and every chapter, offline."


def _common(sp, profile: str, device: str, budget: float) -> None:
    sp.add_argument("--profile", default=profile, choices=("smoke", "standard", "full"))
    sp.add_argument("--device", default=device, help="cuda (default on the GPU machine), cpu or auto")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--out", default=os.environ.get("OUT") or str(DEFAULT_WORK),
                    help="bundle folder (default: $OUT, else _build/gpu_check)")
    sp.add_argument("--work", default=str(DEFAULT_WORK / "work"), help="scratch folder")
    sp.add_argument("--budget", type=float, default=budget, help="seconds for the whole run")
    sp.add_argument("--chapters", default=None, help="comma-separated subset (default: every chapter)")
    sp.add_argument("--stages", default=None, help=f"comma-separated subset of {','.join(STAGES[1:])} "
                                                   "(setup always runs)")


def parser() -> argparse.ArgumentParser:
    """The argument parser of every command (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="gpu_check.py", description=DESCRIPTION,
                                 epilog="README.md, 'Running on a GPU', says what each stage does and what the "
                                        "bundle holds.")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="the device route (default)")
    _common(r, "full", "cuda", DEVICE_BUDGET_S)
    r.add_argument("--mode", default="device", choices=("device", "rehearsal"))
    r.add_argument("--wheels", default=str(DEFAULT_WHEELS), help="folder of carried wheels")
    r.add_argument("--runner", default="auto", choices=("auto", "papermill", "direct"))
    r.add_argument("--bench-out", default=None, help="benchmark folder (default benchmarks/results/cuda on a GPU)")
    r.add_argument("--bench-args", default=None, help="benchmark options instead of the default grid")
    r.add_argument("--test-files", nargs="*", default=None, help=argparse.SUPPRESS)
    r.add_argument("--cache-from", default=None, help=argparse.SUPPRESS)  # the rehearsal's, see there
    rh = sub.add_parser("rehearse", help="the same route on a CPU machine, offline (--rehearse)")
    # The rehearsal's budget only guards against a hang: on a busy shared CPU the smoke profile can
    # take several times its quiet-machine time. Stage budgets scale with it.
    _common(rh, "smoke", "cpu", 2400)
    rh.add_argument("--wheels", default=None, help="use these wheels (for this interpreter) instead of "
                                                   "rebuilding them from the environment's installed copies")
    rh.add_argument("--cache-from", default=None,
                    help="start the chapters with a copy of this experiment cache (a smoke build's "
                         "_build/cache of the same tree): chapters still execute, runners load their tables")
    w = sub.add_parser("wheels", help="download the carried wheels (make gpu-wheels)")
    w.add_argument("--dest", default=str(DEFAULT_WHEELS))
    w.add_argument("--python-version", default=DEVICE_PYTHON)
    c = sub.add_parser("carried", help="list the carried distributions")
    c.add_argument("--python-version", default=DEVICE_PYTHON)
    sub.add_parser("probe", help=argparse.SUPPRESS)
    d = sub.add_parser("direct-chapter", help="run one chapter's code cells without papermill")
    d.add_argument("chapter")
    d.add_argument("--profile", default="full")
    d.add_argument("--device", default="auto")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--build-dir", default=str(DEFAULT_WORK / "work" / "build"))
    return ap


def _carried(args) -> int:
    for name, version in carried_distributions(args.python_version):
        print(f"{name}=={version}")
    return 0


def command_line(argv: list[str]) -> list[str]:
    """``argv`` with its command: none (only options) is ``run``, and ``--rehearse`` is ``rehearse``
    (as ``gpu_check.sh --rehearse`` passes it)."""
    argv = list(argv)
    if not argv or argv[0].startswith("-"):
        argv.insert(0, "rehearse" if "--rehearse" in argv else "run")
        if "--rehearse" in argv:
            argv.remove("--rehearse")
    return argv


def main(argv=None) -> int:
    """Run a command (:func:`command_line`; see the module docstring); returns the exit status."""
    args = parser().parse_args(command_line(sys.argv[1:] if argv is None else argv))
    commands = {"run": main_run, "rehearse": rehearse, "probe": main_probe, "direct-chapter": main_direct_chapter,
                "carried": _carried, "wheels": lambda a: download_wheels(a.dest, a.python_version)}
    return commands[args.command](args)
