"""The mathematics imports no notebook or book machinery: importing ``infonce_book.theory`` and
``infonce_book.models`` (with every module under them) loads none of IPython, jupyter_book,
myst_nb, sphinx, papermill, pandas, seaborn or matplotlib, so that a library user or a test of the mathematics does not
pay for the book. Checked in a fresh interpreter (this test process has imported them already)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
BOOK_MACHINERY = ("IPython", "jupyter_book", "myst_nb", "sphinx", "papermill", "pandas", "seaborn", "matplotlib")

PROBE = """
import importlib, json, pkgutil, sys
package = importlib.import_module(sys.argv[1])
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(info.name)
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _top_level_modules_after_importing(package: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", PROBE, package], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
@pytest.mark.parametrize("package", ["infonce_book.losses", "infonce_book.theory", "infonce_book.models"])
def test_the_mathematics_imports_no_book_machinery(package):
    loaded = _top_level_modules_after_importing(package)
    assert "infonce_book" in loaded
    assert sorted(loaded & set(BOOK_MACHINERY)) == [], f"importing {package} loads book machinery"
