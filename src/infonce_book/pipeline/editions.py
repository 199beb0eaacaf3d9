"""The student edition: the book without the solutions to its exercises.

``infonce-book build --edition students`` (``make book-students``) builds ``<build>/html-students``
from the same executed chapters as the web edition, with every ``{solution}`` directive (and every
gated ``{solution-start}`` ... ``{solution-end}`` block) removed from the pages *before* Sphinx
reads them: from the rendered pages, and also from what a student can download (the executed
``.ipynb``, the jupytext ``.md`` source, Sphinx's ``_sources``) and from the search index.
sphinx-exercise's ``hide_solutions`` option is set as well; on its own it would drop the
solutions from the rendered pages only. A page that still links to a removed solution (a
``{ref}`` or a Markdown link to its label) stops the build with an error naming the page and the
label (:class:`DanglingSolutionLink`): the link would otherwise dangle in the student's book.
"""

from __future__ import annotations

import re
from pathlib import Path

EDITIONS = ("web", "students")

_LABEL = re.compile(r"^[ \t]*:label:[ \t]*(?P<label>\S+)")


class DanglingSolutionLink(ValueError):
    """A page of the student edition links to a solution that the edition removes."""

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
        self.labels: list[str] = []  # the labels of the removed solutions

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
            if self.fence is not None or self.gated:
                label = _LABEL.match(line)
                if label:
                    self.labels.append(label.group("label"))
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


def strip_solutions_text(text: str, stripper: _Stripper | None = None) -> tuple[str, int]:
    """A MyST page without its solution blocks, and how many were removed (``stripper``, when
    given, keeps the removed solutions' labels in ``stripper.labels``).

    Raises:
        ValueError: a solution block is not closed before the end of the page.
    """
    s = stripper if stripper is not None else _Stripper()
    out = s.feed(text)
    if s.inside:
        raise ValueError("a {solution} block is not closed before the end of the page")
    return re.sub(r"\n{3,}", "\n\n", out), s.removed


def strip_solutions_notebook(nb, labels: list[str] | None = None, keep: frozenset = frozenset()) -> int:
    """Remove the solution blocks from a notebook's markdown cells (code cells inside a gated
    solution go too), in place; returns how many were removed. The removed solutions' labels are
    appended to ``labels`` when given; glued values that the page no longer refers to are dropped,
    but for the names in ``keep`` (those other pages refer to, ``{glue:text}`page.ipynb::name```)."""
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
        _drop_unreferenced_glue(nb, keep)
    if labels is not None:
        labels.extend(s.labels)
    return s.removed


def solution_links(text: str, labels) -> list[str]:
    """The labels among ``labels`` that a MyST text links to: a role (``{ref}``, ``{numref}``, with
    or without a link text) or a Markdown link (``[text](#label)``, ``<project:#label>``)."""
    found = []
    for label in labels:
        lab = re.escape(label)
        role = rf"\{{(?:ref|numref|prf:ref)\}}`(?:[^`<]*<)?#?{lab}>?`"
        link = rf"\]\(#?{lab}\)|<project:#?{lab}>"
        if re.search(f"{role}|{link}", text):
            found.append(label)
    return found


_GLUE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`(?P<role>[^`:]+)[^`]*`|^[ \t]*(?:`{3,}|:{3,})\{glue(?::[a-z]+)?\}[ \t]+(?P<dir>\S+)",
                       re.M)


#: A glue reference to another page's value: ``{glue:text}`c5_generalisation.ipynb::c5_name:.3f```.
_CROSS_GLUE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`[^`:]+\.ipynb::(?P<name>[^`:]+)")


def _drop_unreferenced_glue(nb, keep: frozenset = frozenset()) -> None:
    """Drop the glued values (myst-nb ``glue`` outputs) that no page text refers to any more: the
    numbers a removed solution quoted would otherwise stay in the student's ``.ipynb``. The names in
    ``keep`` stay (other pages refer to them)."""
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = {m.group("role") or m.group("dir") for m in _GLUE_REF.finditer(text)} | set(keep)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("outputs"):
            cell.outputs = [o for o in cell.outputs
                            if o.get("metadata", {}).get("scrapbook", {}).get("name", None) in (None, *used)]


def strip_solutions_site(site: Path) -> int:
    """Strip the solutions from every page (``.md``, ``.ipynb``) under ``site/book``; returns the
    number of solution blocks removed.

    Raises:
        DanglingSolutionLink: a page still links to a removed solution (the message names the
            page, the solution's label and what to link to instead).
    """
    import nbformat  # heavy: only the student edition needs it

    removed, labels, texts = 0, [], {}
    pages = sorted(Path(site, "book").rglob("*"))
    keep = frozenset(m.group("name") for page in pages if page.suffix in (".md", ".ipynb")
                     for m in _CROSS_GLUE_REF.finditer(page.read_text(encoding="utf-8")))
    for page in pages:
        if page.suffix == ".md":
            s = _Stripper()
            text, n = strip_solutions_text(page.read_text(encoding="utf-8"), s)
            labels.extend(s.labels)
            if n:
                page.write_text(text, encoding="utf-8")
            texts[page] = text
            removed += n
        elif page.suffix == ".ipynb":
            nb = nbformat.read(page, as_version=4)
            n = strip_solutions_notebook(nb, labels, keep)
            if n:
                nbformat.write(nb, page)
            texts[page] = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
            removed += n
    dangling = [f"{page.relative_to(site)} links to {label}" for page, text in texts.items()
                for label in solution_links(text, labels)]
    if dangling:
        raise DanglingSolutionLink(
            "the student edition removes the solutions, but " + "; ".join(dangling) + ": link to the "
            "exercise instead (its label, e.g. c1-ex-..., stays in the student edition)")
    return removed
