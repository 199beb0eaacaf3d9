"""``import infonce_book.losses`` stays lean: what library users import pulls in torch and NumPy,
not the book's machinery (notebooks, the site build, data frames, plotting). Checked in a fresh
interpreter, whose ``sys.modules`` after the import is all that import loaded."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Top-level packages the book's upper layers use and the loss must not load.
HEAVY = ("IPython", "jupyter_book", "myst_nb", "sphinx", "papermill", "pandas", "seaborn", "matplotlib")

_PROBE = (
    "import json, sys\n"
    "import infonce_book.losses\n"
    "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n"
)


@pytest.fixture(scope="module")
def loaded():
    """The top-level names in ``sys.modules`` of a fresh interpreter after ``import infonce_book.losses``
    (this tree's ``src`` first on the path)."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", _PROBE], env={**os.environ, "PYTHONPATH": path},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_the_probe_imports_this_tree(loaded):
    assert {"infonce_book", "torch"} <= loaded


@pytest.mark.parametrize("package", HEAVY)
def test_losses_import_does_not_load(loaded, package):
    assert package not in loaded, f"import infonce_book.losses loads {package}"
