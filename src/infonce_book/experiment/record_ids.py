"""Record ids that name their chapter (see :mod:`.ledger`): the ledger stores a record under
:func:`book_id` and keeps the chapter's own id as its alias, which :func:`find_record` still finds."""

from __future__ import annotations

import re
from dataclasses import asdict

__all__ = ["book_id", "chapter_number", "find_record", "record_alias"]


_STEM = re.compile(r"^c(\d+)_")


def chapter_number(chapter: str) -> int | None:
    """The number of a chapter from its stem (``"c4_continuity"`` -> 4); ``None`` for a page
    that is not a numbered chapter.

    Examples:
        >>> chapter_number("c4_continuity"), chapter_number("robustness")
        (4, None)
    """
    m = _STEM.match(chapter)
    return int(m.group(1)) if m else None


def book_id(chapter: str, record_id: str) -> str:
    """The id under which the ledger stores a record: its chapter's number, a dot, the id the
    chapter gave it (``book_id("c4_continuity", "C5-rademacher-slope-k")`` is
    ``"4.C5-rademacher-slope-k"``), so that a reader finds the record's chapter from its id. An id
    that already carries its chapter's number, or a record of a page without a number, is
    unchanged.

    Examples:
        >>> book_id("c5_generalisation", "C6-pac-bayes-k-uniform")
        '5.C6-pac-bayes-k-uniform'
        >>> book_id("c5_generalisation", "5.C6-pac-bayes-k-uniform")
        '5.C6-pac-bayes-k-uniform'
        >>> book_id("robustness", "R-a")
        'R-a'
    """
    number = chapter_number(chapter)
    if number is None or record_id.startswith(f"{number}."):
        return record_id
    return f"{number}.{record_id}"


def record_alias(record) -> str:
    """The id a chapter gave the record (its old id), from a record dict or :class:`Record`."""
    r = record if isinstance(record, dict) else asdict(record)
    return r.get("alias") or r["id"]


def find_record(records, record_id: str):
    """The record with ``record_id`` as its id or its alias (the old id), from a list of record
    dicts or :class:`Record` objects.

    Raises:
        KeyError: no record has that id or alias.
    """
    for r in records:
        d = r if isinstance(r, dict) else asdict(r)
        if record_id in (d["id"], d.get("alias")):
            return r
    raise KeyError(f"no ledger record has the id or old id {record_id!r}")
