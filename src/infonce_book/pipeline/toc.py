"""The book's pages and which of them are chapters, read from ``_toc.yml``.

* :func:`toc_files` -- every page of the table of contents, in order (``book/c1_rate``, ...), and
  :func:`chapter_stems` -- the chapters (the numbered parts), both from
  :mod:`infonce_book.experiment.toc`, the one place that reads them;
* :func:`chapters` -- the executable ones (a jupytext notebook: its front matter has a
  ``kernelspec``), ``{stem: path}``;
* :func:`back_matter` -- the pages of the "Back matter" part (pages, not chapters: no rerun box,
  no citation entry, even when one executes code);
* :func:`resolve_chapter` -- a chapter name given on the command line, checked.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ..experiment.paths import project_root
from ..experiment.toc import chapter_stems, toc_files
from .citation import BACK_MATTER, toc_pages

__all__ = ["UnknownChapter", "back_matter", "chapter_stems", "chapters", "resolve_chapter", "toc_files"]


class UnknownChapter(ValueError):
    """A chapter name that is not an executable page of ``_toc.yml``."""


def _front_matter(text: str) -> dict:
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    return yaml.safe_load(text[3:end]) or {} if end > 0 else {}


def chapters(root: Path | None = None) -> dict[str, Path]:
    """Executable chapters: toc entries whose ``.md`` is a jupytext notebook (has a kernelspec)."""
    root = root or project_root()
    out = {}
    for f in toc_files(root):
        p = root / f"{f}.md"
        if p.is_file() and "kernelspec" in _front_matter(p.read_text(encoding="utf-8")):
            out[p.stem] = p
    return out


def back_matter(root: Path | None = None) -> set[str]:
    """The toc files (``book/<name>``) of the "Back matter" part: pages, not chapters (no rerun
    box, no citation entry), even when one of them executes code."""
    return {file for file, caption in toc_pages(root or project_root())
            if caption.strip().lower() == BACK_MATTER}


def resolve_chapter(name: str, root: Path | None = None) -> tuple[str, Path]:
    """Accept ``c1_rate``, ``book/c1_rate`` or ``book/c1_rate.md``; raise if unknown.

    Raises:
        UnknownChapter: ``name`` is not one of :func:`chapters` (the message lists them).
    """
    known = chapters(root)
    stem = Path(name).stem
    if stem not in known:
        raise UnknownChapter(f"unknown chapter {name!r}; the chapters are: {', '.join(known)}")
    return stem, known[stem]
