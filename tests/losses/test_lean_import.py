"""``import infonce_book.losses`` (and ``.models``, ``.theory``) stays lean: what library users
import pulls in torch, NumPy, SciPy and SymPy (the core dependencies of ``pyproject.toml``), not
the book's machinery (notebooks, the site build, data frames, plotting: the extra ``[book]``).
Checked in a fresh interpreter per package, whose ``sys.modules`` after the import is all that
import loaded."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Top-level packages the book's upper layers use and the loss must not load.
HEAVY = ("IPython", "jupyter_book", "myst_nb", "sphinx", "papermill", "pandas", "seaborn", "matplotlib",
         "nbformat", "jupytext", "ipykernel", "sklearn", "yaml", "tabulate")
PACKAGES = ("infonce_book.losses", "infonce_book.models", "infonce_book.theory")

_PROBE = (
    "import importlib, json, sys\n"
    "importlib.import_module(sys.argv[1])\n"
    "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n"
)


@pytest.fixture(scope="module", params=PACKAGES)
def loaded(request):
    """``(package, names)``: the top-level names in ``sys.modules`` of a fresh interpreter after
    ``import <package>`` (this tree's ``src`` first on the path)."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", _PROBE, request.param], env={**os.environ, "PYTHONPATH": path},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return request.param, set(json.loads(proc.stdout.splitlines()[-1]))


def test_the_probe_imports_this_tree(loaded):
    _, names = loaded
    assert {"infonce_book", "torch"} <= names


def test_import_loads_none_of_the_book_machinery(loaded):
    package, names = loaded
    assert sorted(names & set(HEAVY)) == [], f"import {package} loads book machinery"


def test_scipy_is_needed_by_the_theory_and_the_models_but_not_by_the_losses(loaded):
    # SciPy stays a core dependency because the theory (statistics) and the models (Bessel
    # functions of the vMF model) import it; the losses never do.
    package, names = loaded
    assert ("scipy" in names) == (package != "infonce_book.losses"), sorted(names)
