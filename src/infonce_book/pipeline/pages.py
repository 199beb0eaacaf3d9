"""The book's executable pages, read from ``_toc.yml`` (through :mod:`infonce_book.experiment.toc`).

A *chapter* is a page of the numbered parts; an *executable page* is one the pipeline executes (its
front matter has a ``kernelspec``): the chapters and the robustness page of the back matter.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ..experiment.paths import project_root
from ..experiment.toc import BACK_MATTER, toc_files, toc_pages


class UnknownChapter(ValueError):
    """A name that is not an executable page of ``_toc.yml``."""


def executable_pages(root: Path | None = None) -> dict[str, Path]:
    """``{stem: path}`` of the toc pages whose ``.md`` is a jupytext notebook, in the book's order."""
    root = root or project_root()
    out = {}
    for f in toc_files(root):
        p = root / f"{f}.md"
        text = p.read_text(encoding="utf-8") if p.is_file() else ""
        end = text.find("\n---", 3) if text.startswith("---") else -1
        if end > 0 and "kernelspec" in (yaml.safe_load(text[3:end]) or {}):
            out[p.stem] = p
    return out


def back_matter(root: Path | None = None) -> set[str]:
    """The toc files (``book/<name>``) of the "Back matter" part: no rerun box, no citation entry."""
    return {file for file, caption in toc_pages(root or project_root()) if caption.strip().lower() == BACK_MATTER}


def resolve_chapter(name: str, root: Path | None = None) -> tuple[str, Path]:
    """``c1_rate``, ``book/c1_rate`` or ``book/c1_rate.md`` (any executable page) as ``(stem, path)``;
    :class:`UnknownChapter` (listing the executable pages) for any other name."""
    known = executable_pages(root)
    stem = Path(name).stem
    if stem not in known:
        raise UnknownChapter(f"unknown chapter {name!r}; the executable pages are: {', '.join(known)}")
    return stem, known[stem]
