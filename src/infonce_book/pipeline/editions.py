"""The student edition: the book without the solutions to its exercises.

``infonce-book build --edition students`` (``make book-students``) builds ``<build>/html-students``
from the same executed chapters as the web edition, with every ``{solution}`` directive (and every
gated ``{solution-start}`` ... ``{solution-end}`` block) removed from the pages *before* Sphinx
reads them: from the rendered pages, and also from what a student can download (the executed
``.ipynb``, the jupytext ``.md`` source, Sphinx's ``_sources``) and from the search index.
sphinx-exercise's ``hide_solutions`` option is set as well; on its own it would drop the
solutions from the rendered pages only.
"""

from __future__ import annotations

import re
from pathlib import Path

EDITIONS = ("web", "students")

_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,}|:{3,})\{(?P<name>[A-Za-z0-9_:-]+)\}")


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return (len(stripped) >= len(fence) and set(stripped) == {fence[0]})


class _Stripper:
    """Removes solution blocks from a sequence of MyST text chunks (a page, or a notebook's cells:
    a gated solution may span cells). ``state`` survives between chunks."""

    def __init__(self):
        self.removed = 0
        self.fence = None  # closing fence of the solution directive being skipped
        self.gated = False  # inside {solution-start} ... {solution-end}
        self.end_fence = None  # closing fence of the {solution-end} directive being skipped

    @property
    def inside(self) -> bool:
        return self.fence is not None or self.gated or self.end_fence is not None

    def feed(self, text: str) -> str:
        out = []
        for line in text.splitlines(keepends=True):
            if self.end_fence is not None:  # the {solution-end} directive's own lines
                if _closes(line, self.end_fence):
                    self.end_fence = None
                continue
            if self.fence is not None:
                if _closes(line, self.fence):
                    self.fence = None
                continue
            m = _OPEN.match(line)
            if self.gated:
                if m and m.group("name") == "solution-end":
                    self.gated = False
                    self.end_fence = m.group("fence")
                continue
            if m and m.group("name") == "solution":
                self.fence = m.group("fence")
                self.removed += 1
                continue
            if m and m.group("name") == "solution-start":
                self.gated = True
                self.removed += 1
                continue
            out.append(line)
        return "".join(out)


def strip_solutions_text(text: str) -> tuple[str, int]:
    """A MyST page without its solution blocks, and how many were removed.

    Raises:
        ValueError: a solution block is not closed before the end of the page.
    """
    s = _Stripper()
    out = s.feed(text)
    if s.inside:
        raise ValueError("a {solution} block is not closed before the end of the page")
    return re.sub(r"\n{3,}", "\n\n", out), s.removed


def strip_solutions_notebook(nb) -> int:
    """Remove the solution blocks from a notebook's markdown cells (code cells inside a gated
    solution go too), in place; returns how many were removed."""
    s = _Stripper()
    kept = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            new = s.feed(cell.source)
            if new.strip() or not cell.source.strip():  # drop a cell that was only a solution
                cell.source = new
                kept.append(cell)
            continue
        if not s.inside:
            kept.append(cell)
    if s.inside:
        raise ValueError("a gated solution ({solution-start}) is not closed by {solution-end}")
    nb.cells = kept
    if s.removed:
        _drop_unreferenced_glue(nb)
    return s.removed


_GLUE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`(?P<role>[^`:]+)[^`]*`|^[ \t]*(?:`{3,}|:{3,})\{glue(?::[a-z]+)?\}[ \t]+(?P<dir>\S+)",
                       re.M)


def _drop_unreferenced_glue(nb) -> None:
    """Drop the glued values (myst-nb ``glue`` outputs) that no page text refers to any more: the
    numbers a removed solution quoted would otherwise stay in the student's ``.ipynb``."""
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = {m.group("role") or m.group("dir") for m in _GLUE_REF.finditer(text)}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("outputs"):
            cell.outputs = [o for o in cell.outputs
                            if o.get("metadata", {}).get("scrapbook", {}).get("name", None) in (None, *used)]


def strip_solutions_site(site: Path) -> int:
    """Strip the solutions from every page (``.md``, ``.ipynb``) under ``site/book``; returns the
    number of solution blocks removed."""
    import nbformat  # heavy: only the student edition needs it

    removed = 0
    for page in sorted(Path(site, "book").rglob("*")):
        if page.suffix == ".md":
            text, n = strip_solutions_text(page.read_text(encoding="utf-8"))
            if n:
                page.write_text(text, encoding="utf-8")
            removed += n
        elif page.suffix == ".ipynb":
            nb = nbformat.read(page, as_version=4)
            n = strip_solutions_notebook(nb)
            if n:
                nbformat.write(nb, page)
            removed += n
    return removed
