"""The light commands (``--help``, a bad argument, ``chapters``, ``ledger``) import no torch, SciPy
or pandas and answer quickly; a core-only install (no ``[book]`` extra: here pandas made
unimportable) imports :mod:`infonce_book.learning`, and the command says which extra to install.
Each check runs in a fresh interpreter, whose ``sys.modules`` is all that the command loaded."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infonce_book.pipeline import cli

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "scipy", "pandas", "numpy", "nbformat", "papermill", "matplotlib")

_PROBE = (
    "import json, sys\n"
    "from infonce_book.pipeline.cli import main\n"
    "try:\n"
    "    rc = main(sys.argv[1:])\n"
    "except SystemExit as stop:\n"
    "    rc = stop.code\n"
    "print(json.dumps({'rc': rc, 'loaded': sorted({n.split('.')[0] for n in sys.modules})}), file=sys.stderr)\n"
)

#: pandas unimportable, as in an install without the [book] extra.
_NO_PANDAS = "import sys; sys.modules['pandas'] = None\n"


def _run(code: str, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path,
           "INFONCE_BOOK_ROOT": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    return proc, time.perf_counter() - t0


@pytest.mark.parametrize("args", [["--help"], ["--bad"], ["run"], ["run", "c9_nope"], ["chapters"], ["ledger"],
                                  ["ledger", "--format", "json"]])
def test_light_commands_import_no_torch_scipy_or_pandas(args):
    proc, seconds = _run(_PROBE, *args)
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    assert result["rc"] == (0 if args[0] in ("--help", "chapters", "ledger") else 2), proc.stderr
    assert sorted(set(result["loaded"]) & set(HEAVY)) == [], f"infonce-book {' '.join(args)} imports heavy modules"
    # Generous for a loaded machine: an idle one answers in 0.12-0.20 s (README, "The two commands").
    assert seconds < 5, f"infonce-book {' '.join(args)} took {seconds:.1f} s"


def test_cli_devices_are_the_libraries():
    from infonce_book.utils.device import DEVICES

    assert cli.DEVICES == DEVICES


@pytest.mark.slow
def test_learning_imports_without_pandas():
    proc, _ = _run(_NO_PANDAS + "import infonce_book.learning\n"
                   "print(sorted(n for n in ('pandas', 'torch') if sys.modules.get(n) is not None))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "['torch']"


@pytest.mark.parametrize("args", [["run", "c1_rate", "--device", "cpu"], ["build", "--profile", "smoke"]])
def test_without_the_book_extra_the_command_names_it(args):
    proc, _ = _run(_NO_PANDAS + _PROBE, *args)
    assert json.loads(proc.stderr.strip().splitlines()[-1])["rc"] == 2
    assert "needs 'pandas'" in proc.stderr and "pip install -e '.[book]'" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_cli_paper_sizes_are_the_print_routes():
    from infonce_book.pipeline import cli
    from infonce_book.pipeline.typeset import PAPERS

    assert set(cli.PAPERS) == set(PAPERS)
