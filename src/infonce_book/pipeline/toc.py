"""The book's executable pages, read from ``_toc.yml``.

Two words, two sets: a *chapter* is one of the six numbered pages (the pages of the numbered
parts, :func:`~infonce_book.experiment.toc.chapter_stems`); an *executable page* is a page that
the pipeline executes (a jupytext notebook: its front matter has a ``kernelspec``): the chapters
and the executable pages of the back matter (the robustness page).

* :func:`executable_pages` -- ``{stem: path}`` of the executable pages, in the book's order;
* :func:`back_matter` -- the files of the "Back matter" part (no rerun box, no citation entry,
  even when one of them executes code);
* :func:`resolve_chapter` -- an executable page named on the command line, checked.

:func:`toc_files`, :func:`toc_pages` and :func:`chapter_stems` come from
:mod:`infonce_book.experiment.toc`, the one module that reads ``_toc.yml``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ..experiment.paths import project_root
from ..experiment.toc import BACK_MATTER, chapter_stems, toc_files, toc_pages

__all__ = ["BACK_MATTER", "UnknownChapter", "back_matter", "chapter_stems", "chapters", "executable_pages",
           "resolve_chapter", "toc_files", "toc_pages"]


class UnknownChapter(ValueError):
    """A name that is not an executable page of ``_toc.yml``."""


def _front_matter(text: str) -> dict:
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    return yaml.safe_load(text[3:end]) or {} if end > 0 else {}


def executable_pages(root: Path | None = None) -> dict[str, Path]:
    """The executable pages: toc entries whose ``.md`` is a jupytext notebook (has a kernelspec),
    ``{stem: path}`` in the book's order (the chapters and the robustness page)."""
    root = root or project_root()
    out = {}
    for f in toc_files(root):
        p = root / f"{f}.md"
        if p.is_file() and "kernelspec" in _front_matter(p.read_text(encoding="utf-8")):
            out[p.stem] = p
    return out


#: The former name of :func:`executable_pages` (it never meant the six chapters only); kept so that
#: callers written before the rename keep working.
chapters = executable_pages


def back_matter(root: Path | None = None) -> set[str]:
    """The toc files (``book/<name>``) of the "Back matter" part: pages, not chapters (no rerun
    box, no citation entry), even when one of them executes code."""
    return {file for file, caption in toc_pages(root or project_root())
            if caption.strip().lower() == BACK_MATTER}


def resolve_chapter(name: str, root: Path | None = None) -> tuple[str, Path]:
    """Accept ``c1_rate``, ``book/c1_rate`` or ``book/c1_rate.md`` (any executable page, the
    robustness page included); raise if unknown.

    Raises:
        UnknownChapter: ``name`` is not one of :func:`executable_pages` (the message lists them).
    """
    known = executable_pages(root)
    stem = Path(name).stem
    if stem not in known:
        raise UnknownChapter(f"unknown chapter {name!r}; the executable pages are: {', '.join(known)}")
    return stem, known[stem]
