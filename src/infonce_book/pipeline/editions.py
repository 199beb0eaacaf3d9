"""The student edition: the book without the solutions to its exercises.

``infonce-book build --edition students`` builds ``<build>/html-students`` from the same executed
chapters, with every ``{solution}`` directive (and every gated ``{solution-start}`` ...
``{solution-end}`` block) removed from the pages *before* Sphinx reads them, so also from what a
student can download (``.ipynb``, ``.md``, ``_sources``) and from the search index (sphinx-exercise's
``hide_solutions``, also set, drops them from the rendered pages only). A page that still links to a
removed solution stops the build (:class:`DanglingSolutionLink`).
"""

from __future__ import annotations

import re
from pathlib import Path

EDITIONS = ("web", "students")

_LABEL = re.compile(r"^[ \t]*:label:[ \t]*(?P<label>\S+)")
_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,}|:{3,})\{(?P<name>[A-Za-z0-9_:-]+)\}")
_GLUE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`(?P<role>[^`:]+)[^`]*`|"
                       r"^[ \t]*(?:`{3,}|:{3,})\{glue(?::[a-z]+)?\}[ \t]+(?P<dir>\S+)", re.M)
#: A glue reference to another page's value: ``{glue:text}`c5_generalisation.ipynb::c5_name:.3f```.
_CROSS_GLUE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`[^`:]+\.ipynb::(?P<name>[^`:]+)")


class DanglingSolutionLink(ValueError):
    """A page of the student edition links to a solution that the edition removes."""


class _Stripper:
    """Removes solution blocks from a sequence of MyST text chunks (a page, or a notebook's cells:
    a gated solution may span cells), keeping the removed solutions' labels."""

    def __init__(self):
        self.removed, self.labels = 0, []
        self.fence = None  # the closing fence of the directive being skipped
        self.gated = False  # inside {solution-start} ... {solution-end}

    @property
    def inside(self) -> bool:
        return self.fence is not None or self.gated

    def feed(self, text: str) -> str:
        out = []
        for line in text.splitlines(keepends=True):
            m = _OPEN.match(line)
            name = m.group("name") if m else None
            if self.inside and (label := _LABEL.match(line)):
                self.labels.append(label.group("label"))
            if self.fence is not None:
                stripped = line.strip()
                if len(stripped) >= len(self.fence) and set(stripped) == {self.fence[0]}:
                    self.fence = None
            elif self.gated:
                if m and name == "solution-end":
                    self.gated, self.fence = False, m.group("fence")
            elif m and name in ("solution", "solution-start"):
                self.removed += 1
                if name == "solution":
                    self.fence = m.group("fence")
                else:
                    self.gated = True
            else:
                out.append(line)
        return "".join(out)


def strip_solutions_text(text: str, labels: list[str] | None = None) -> tuple[str, int]:
    """A MyST page without its solution blocks, and how many were removed (their labels are appended
    to ``labels``); ``ValueError`` when a block is not closed before the end of the page."""
    s = _Stripper()
    out = s.feed(text)
    if s.inside:
        raise ValueError("a {solution} block is not closed before the end of the page")
    (labels if labels is not None else []).extend(s.labels)
    return re.sub(r"\n{3,}", "\n\n", out), s.removed


def strip_solutions_notebook(nb, labels: list[str] | None = None, keep: frozenset = frozenset()) -> int:
    """Remove the solution blocks from a notebook's markdown cells (and the code cells inside a gated
    solution), in place; returns how many. The removed labels are appended to ``labels``; glued
    values no text of the page refers to any more are dropped, but for the names in ``keep`` (those
    other pages refer to)."""
    s = _Stripper()
    kept = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            new = s.feed(cell.source)
            if new.strip() or not cell.source.strip():  # drop a cell that was only a solution
                cell.source = new
                kept.append(cell)
        elif not s.inside:
            kept.append(cell)
    if s.inside:
        raise ValueError("a gated solution ({solution-start}) is not closed by {solution-end}")
    nb.cells = kept
    if s.removed:  # the numbers a removed solution quoted would otherwise stay in the .ipynb
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        used = {m.group("role") or m.group("dir") for m in _GLUE_REF.finditer(text)} | set(keep)
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.get("outputs"):
                cell.outputs = [o for o in cell.outputs
                                if o.get("metadata", {}).get("scrapbook", {}).get("name", None) in (None, *used)]
    (labels if labels is not None else []).extend(s.labels)
    return s.removed


def solution_links(text: str, labels) -> list[str]:
    """The labels among ``labels`` that a MyST text links to: a role (``{ref}``, ``{numref}``,
    ``{prf:ref}``, with or without a link text) or a Markdown link (``[text](#label)``, ``<project:#label>``)."""
    found = []
    for label in labels:
        lab = re.escape(label)
        role = rf"\{{(?:ref|numref|prf:ref)\}}`(?:[^`<]*<)?#?{lab}>?`"
        if re.search(rf"{role}|\]\(#?{lab}\)|<project:#?{lab}>", text):
            found.append(label)
    return found


def strip_solutions_site(site: Path) -> int:
    """Strip the solutions from every page (``.md``, ``.ipynb``) under ``site/book``; returns how many
    were removed. Raises :class:`DanglingSolutionLink` when a page still links to one."""
    import nbformat  # heavy: only the student edition needs it

    removed, labels, texts = 0, [], {}
    pages = [p for p in sorted(Path(site, "book").rglob("*")) if p.suffix in (".md", ".ipynb")]
    keep = frozenset(m.group("name") for page in pages
                     for m in _CROSS_GLUE_REF.finditer(page.read_text(encoding="utf-8")))
    for page in pages:
        if page.suffix == ".md":
            text, n = strip_solutions_text(page.read_text(encoding="utf-8"), labels)
            if n:
                page.write_text(text, encoding="utf-8")
        else:
            nb = nbformat.read(page, as_version=4)
            n = strip_solutions_notebook(nb, labels, keep)
            if n:
                nbformat.write(nb, page)
            text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        texts[page] = text
        removed += n
    dangling = [f"{page.relative_to(site)} links to {label}" for page, text in texts.items()
                for label in solution_links(text, labels)]
    if dangling:
        raise DanglingSolutionLink(
            "the student edition removes the solutions, but " + "; ".join(dangling) + ": link to the "
            "exercise instead (its label, e.g. c1-ex-..., stays in the student edition)")
    return removed
