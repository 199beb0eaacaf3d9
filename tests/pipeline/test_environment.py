"""environment.yml (conda) installs the same dependencies as pyproject.toml (pip): the core ones and the
extras [book] and [test], everything that `make install` installs."""

import re
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONDA_NAMES = {"torch": "pytorch"}  # pip name -> conda-forge name


def _split(req: str):
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def test_conda_environment_matches_pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    pip_reqs = meta["dependencies"] + extras["book"] + extras["test"]
    want = {CONDA_NAMES.get(n, n): spec for n, spec in map(_split, pip_reqs)}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str) and not d.startswith(("python", "pip"))]
    got = dict(map(_split, conda))
    assert got == want
    pip_section = [d for d in env["dependencies"] if isinstance(d, dict)][0]["pip"]
    assert pip_section == ["-e ."]


def test_make_install_installs_the_book_and_the_tests():
    """The core dependencies are the library's; `make install` adds the extras the book and the
    tests need (README "Install")."""
    makefile = (ROOT / "Makefile").read_text()
    assert 'pip install --quiet -e ".[book,test]"' in makefile
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_split(r)[0] for r in meta["dependencies"]}
    assert core == {"torch", "numpy", "scipy", "sympy", "tqdm"}
