"""Every text file the pipeline reads or writes is UTF-8, whatever the locale.

The book's pages, notebooks, ledgers and logs hold non-ASCII text (Greek letters, dashes, umlauts
in authors' names). Under ``LC_ALL=C`` with Python's UTF-8 mode off (``PYTHONUTF8=0``) the
locale's encoding is ASCII, and an ``open`` or ``read_text`` without ``encoding=`` fails with a
UnicodeDecodeError. Two checks: the CLI run end to end under that locale on a minimal book whose
pages are not ASCII, and a scan of the package's source for text I/O that leaves the encoding to
the locale.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

from .support import CLI, HEADER, PARAMETERS, ROOT, minimal_project

C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}

UNICODE_CHAPTER = HEADER + "\n# Größe — the rate $O(1/k)$ as τ → 0\n" + PARAMETERS + """
Text with non-ASCII letters: θ, 𝔼, “quotes”, naïve.

```{code-cell} ipython3
from infonce_book.experiment.ledger import Ledger

print("θ → ∞ with", profile)
Ledger("ok", profile, device, seed).record(claim="C1", id="C1-τ", quantity="θ → ∞", predicted=1.0,
                                           measured=1.0, ci_low=0.5, ci_high=1.5, params={"τ": 0.5})
```
"""


@pytest.fixture
def project(tmp_path):
    root = minimal_project(tmp_path)
    (root / "book" / "ok.md").write_text(UNICODE_CHAPTER, encoding="utf-8")
    (root / "book" / "intro.md").write_text("# Intro — Größe\n", encoding="utf-8")
    return root


def _cli(project: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **C_LOCALE, "INFONCE_BOOK_ROOT": str(project)}
    env.pop("PYTHONIOENCODING")
    return subprocess.run(CLI + list(argv), env=env, capture_output=True, cwd=project)


def test_the_c_locale_is_really_ascii_here():
    """The premise of the test below: under these variables Python's default encoding is ASCII."""
    env = {**os.environ, **C_LOCALE}
    env.pop("PYTHONIOENCODING")
    out = subprocess.run([CLI[0], "-c", "import locale, sys; print(locale.getpreferredencoding(False), "
                          "sys.flags.utf8_mode)"], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["ANSI_X3.4-1968", "0"], out


@pytest.mark.slow
def test_cli_chapters_run_and_ledger_under_the_c_locale(project):
    listing = _cli(project, "chapters")
    assert listing.returncode == 0, listing.stderr.decode("utf-8", "replace")
    assert b"ok\tbook/ok.md" in listing.stdout
    ran = _cli(project, "run", "ok", "--profile", "smoke", "--device", "cpu")
    assert ran.returncode == 0, ran.stderr.decode("utf-8", "replace")
    nb = json.loads((project / "_build" / "notebooks" / "ok.ipynb").read_text(encoding="utf-8"))
    outputs = "".join(o.get("text", "") if isinstance(o.get("text"), str) else "".join(o.get("text", []))
                      for c in nb["cells"] for o in c.get("outputs", []))
    assert "θ → ∞ with smoke" in outputs
    assert "Größe" in "".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                              for c in nb["cells"])
    again = _cli(project, "run", "ok", "--profile", "smoke", "--device", "cpu")  # reads the run record
    assert again.returncode == 0 and b"skipped" in again.stderr + again.stdout, again.stderr
    for fmt in ("json", "table"):
        shown = _cli(project, "ledger", "--format", fmt)
        assert shown.returncode == 0, shown.stderr.decode("utf-8", "replace")
        assert b"C1-\\u03c4" in shown.stdout, shown.stdout  # the escape, not a UnicodeEncodeError


def _text_io_without_encoding(path: Path) -> list[str]:
    """Calls in one module that read or write text with the locale's encoding."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        keywords = {k.arg for k in node.keywords}
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if "encoding" in keywords:
            continue
        if name in ("read_text", "write_text") and not (name == "read_text" and node.args):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}() without encoding=")
        elif name == "open" and isinstance(func, ast.Name):
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                                None)
            if not (isinstance(mode, ast.Constant) and "b" in str(mode.value)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: open() in text mode without encoding=")
        elif name in ("run", "Popen", "check_output") and any(
                k.arg in ("text", "universal_newlines") and isinstance(k.value, ast.Constant) and k.value.value
                for k in node.keywords):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: subprocess text mode without encoding=")
    return found


def test_no_text_io_in_the_package_leaves_the_encoding_to_the_locale():
    found = [f for p in sorted((ROOT / "src" / "infonce_book").rglob("*.py")) for f in _text_io_without_encoding(p)]
    assert found == []
