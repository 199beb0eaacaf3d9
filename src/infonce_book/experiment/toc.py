"""The book's table of contents, read from ``_toc.yml``: the one place that says which pages exist
and which of them are chapters.

* :func:`toc_files` -- every page, in order (``book/intro``, ``book/c1_rate``, ...);
* :func:`toc_pages` -- every page after the root with the caption of its part; the part captioned
  :data:`BACK_MATTER` holds pages that are not chapters;
* :func:`chapter_stems` -- the chapters: the pages of the numbered parts, in order. Each has a
  package ``infonce_book.chapters.<stem>`` and a test file ``tests/chapters/test_<stem>.py``;
  nothing else lists them (the pipeline, the layout test and the citation page derive theirs
  from here).

A new chapter is a page, its package, its test and one line in ``_toc.yml`` (README, "Adding a
chapter"); it may go anywhere in a numbered part: the book numbers chapters by position, and
labels are frozen one by one, not by position.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .paths import project_root

__all__ = ["BACK_MATTER", "chapter_stems", "toc_files", "toc_pages"]

#: The caption (lower case) of the ``_toc.yml`` part whose pages are not chapters: no rerun box, no
#: citation entry, even when one of them executes code.
BACK_MATTER = "back matter"


def _toc(root: Path | None) -> dict:
    root = Path(root) if root is not None else project_root()
    return yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))


def toc_files(root: Path | None = None) -> list[str]:
    """The files of ``_toc.yml`` in order (paths relative to the root, without extension).

    Raises:
        FileNotFoundError: no ``_toc.yml`` under ``root`` (default: the repository root).
    """
    toc = _toc(root)
    out = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                out.append(e["file"])
            walk(e.get("sections"))
            for part in e.get("parts", []) or []:
                walk(part.get("chapters"))

    walk(toc.get("chapters"))
    for part in toc.get("parts", []) or []:
        walk(part.get("chapters"))
    return out


def toc_pages(root: Path | None = None) -> list[tuple[str, str]]:
    """``(file, part caption)`` for every page of ``_toc.yml`` after the root, in order (caption
    ``""`` outside parts)."""
    toc = _toc(root)
    out: list[tuple[str, str]] = []

    def walk(entries, caption):
        for e in entries or []:
            if "file" in e:
                out.append((e["file"], caption))
            walk(e.get("sections"), caption)

    walk(toc.get("chapters"), "")
    for part in toc.get("parts", []) or []:
        walk(part.get("chapters"), str(part.get("caption", "")))
    return out


def chapter_stems(root: Path | None = None) -> list[str]:
    """The chapters: the stems of the pages of the numbered parts of ``_toc.yml`` (``numbered:
    true``), in the book's order (``["c1_rate", ..., "c6_digits"]``)."""
    out = []
    for part in _toc(root).get("parts", []) or []:
        if part.get("numbered"):
            out += [Path(c["file"]).name for c in part.get("chapters", []) or []]
    return out
