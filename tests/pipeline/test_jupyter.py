"""A chapter run as a student would run it: in a plain kernel (papermill, not the book's pipeline),
at the smoke profile, with a parameter changed in the chapter's parameter cell. Its figures must
show below their cells, and the figure titles and glued values must follow the new parameter.

The chapter is c1_rate, whose model is the vMF model with kappa = 4 (changed here to 2). Marked
``book``: it executes a chapter (about a minute on 2 cores)."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from infonce_book.models import VonMisesFisher

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "c1_rate.md"
OLD_KAPPA, NEW_KAPPA, TAU = 4.0, 2.0, 0.5
KAPPA_SETTING = re.compile(r"\b(kappa|KAPPA)(\s*=\s*)4(?:\.0*)?\b")


def change_kappa(nb) -> int:
    """Set kappa = 2 in the chapter's parameter cell: the first code cell after the papermill
    ``parameters`` cell that sets kappa (``kappa=4.0`` in a model call, or ``KAPPA = 4.0``).
    Returns the index of the changed cell."""
    start = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    for i in range(start + 1, len(nb.cells)):
        cell = nb.cells[i]
        if cell.cell_type == "code" and KAPPA_SETTING.search(cell.source):
            cell.source = KAPPA_SETTING.sub(lambda m: f"{m.group(1)}{m.group(2)}{NEW_KAPPA}", cell.source)
            return i
    raise AssertionError("no code cell after the parameters cell sets kappa = 4")


def glued_values(nb) -> dict:
    """``{name: value}`` of every value glued with myst-nb (text/plain, as a literal)."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            text = o.get("data", {}).get(meta.get("mime_prefix", "") + "text/plain")
            if text is None:
                continue
            try:
                out[meta["name"]] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                out[meta["name"]] = text
    return out


def shown_figures(nb) -> list[dict]:
    """The figures displayed below their cells (not only glued): their ``infonce_book`` metadata."""
    return [o["metadata"]["infonce_book"] for c in nb.cells for o in c.get("outputs", [])
            if o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
            and "infonce_book" in o.get("metadata", {})]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    papermill = pytest.importorskip("papermill")
    tmp = tmp_path_factory.mktemp("jupyter")
    nb = jupytext.read(CHAPTER)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    changed = change_kappa(nb)
    nbformat.write(nb, tmp / "in.ipynb")
    with pytest.MonkeyPatch.context() as mp:  # a student's kernel: not under the pipeline
        mp.delenv("INFONCE_BOOK_PIPELINE", raising=False)
        mp.setenv("INFONCE_BOOK_ROOT", str(ROOT))
        mp.setenv("INFONCE_BOOK_BUILD_DIR", str(tmp / "_build"))
        mp.setenv("INFONCE_BOOK_CACHE_DIR", str(tmp / "cache"))
        mp.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp / "ledger"))
        mp.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        papermill.execute_notebook(str(tmp / "in.ipynb"), str(tmp / "out.ipynb"), kernel_name="python3",
                                   parameters={"profile": "smoke", "device": "cpu", "seed": 0},
                                   cwd=str(CHAPTER.parent), progress_bar=False)
    return nbformat.read(tmp / "out.ipynb", as_version=4), changed


def test_the_parameter_cell_is_found_and_changed():
    nb = jupytext.read(CHAPTER)
    i = change_kappa(nb)
    assert f"kappa={NEW_KAPPA}" in nb.cells[i].source.replace(" ", "") or f"KAPPA = {NEW_KAPPA}" in nb.cells[i].source


@pytest.mark.book
def test_figures_show_below_their_cells_in_a_plain_kernel(executed):
    nb, _ = executed
    calls = sum(c.source.count("glue_figure(") for c in nb.cells if c.cell_type == "code")
    shown = shown_figures(nb)
    assert calls >= 5 and len(shown) == calls  # every glued figure is also displayed, once


@pytest.mark.book
def test_a_changed_kappa_reaches_the_figure_titles_and_the_glued_values(executed):
    nb, _ = executed
    titles = [t for f in shown_figures(nb) for t in f["titles"]]
    assert any(re.search(r"\\kappa\s*=\s*2\b", t) for t in titles), titles
    assert not any(re.search(r"\\kappa\s*=\s*4\b", t) for t in titles), titles
    # c_1 of the vMF model on S^2 at tau = 0.5: its closed form (VonMisesFisher.bias_coefficients,
    # checked against sympy and quadrature in tests/models) at the new kappa, not the old one.
    c1_new = VonMisesFisher(dim=3, kappa=NEW_KAPPA).bias_coefficients(TAU, "standard")[0]
    c1_old = VonMisesFisher(dim=3, kappa=OLD_KAPPA).bias_coefficients(TAU, "standard")[0]
    assert abs(c1_new - c1_old) > 0.1
    values = [v for v in glued_values(nb).values() if isinstance(v, float)]
    assert any(math.isclose(v, c1_new, rel_tol=1e-9) for v in values)


@pytest.mark.book
def test_the_prose_takes_kappa_from_the_parameter_cell(executed):
    nb, changed = executed
    glued = glued_values(nb)
    assert any("kappa" in name.lower() and value == NEW_KAPPA for name, value in glued.items()), sorted(glued)
    typed = [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()
             if re.search(r"\\kappa\s*=\s*4\b", line)]
    assert typed == []
    # The parameters sit in one visible cell near the top: the one changed is among the first code cells.
    # (Indices in the executed notebook: papermill inserts its injected-parameters cell, so the
    # changed cell is found by its new setting, not by its index in the input.)
    code = [c for c in nb.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]
    assert any(f"kappa={NEW_KAPPA}" in c.source for c in code[:4]), [c.source[:80] for c in code[:4]]
