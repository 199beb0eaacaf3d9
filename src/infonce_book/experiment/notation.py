"""One symbol, one meaning, book-wide: the notation page's table is the single source, and each
chapter declares the symbols it defines.

The notation page (``book/notation.md``) has a section "Every symbol and its chapters" with one
table, ``| symbol | meaning | chapters |``: each row a symbol in TeX (``$\\kappa$``), its one meaning
in words, and the numbers of the chapters that use it. Each chapter's package may declare the
symbols it defines in a module ``notation`` with a dictionary ``SYMBOLS = {tex: meaning}`` (TeX
without the dollars, meaning exactly as in the table). :func:`notation_problems` lists every
disagreement: a symbol listed twice on the page, a symbol a chapter declares that the page does not
list, a meaning that differs from the page's (a symbol defined again with another meaning), a chapter
that uses a symbol the page does not attribute to it, and a declared symbol that the chapter's text
never writes.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SECTION", "Entry", "parse_notation", "chapter_declarations", "notation_problems", "symbol_in_text"]

#: The heading of the notation page's section with the table of every symbol.
SECTION = "## Every symbol and its chapters"


@dataclass(frozen=True)
class Entry:
    """One row of the notation table."""

    symbol: str
    meaning: str
    chapters: frozenset


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def parse_notation(text: str) -> list[Entry]:
    """The rows of the table under :data:`SECTION` in the notation page's ``text`` (Markdown).

    Raises:
        ValueError: no such section, a row without three cells, a symbol cell that is not one
            ``$...$``, or a chapters cell that is not a list of chapter numbers.
    """
    if SECTION not in text:
        raise ValueError(f"the notation page has no section {SECTION!r}")
    body = text.split(SECTION, 1)[1]
    body = body.split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.strip().startswith("|")]
    out = []
    for line in rows[2:]:  # header and rule
        cells = _cells(line)
        if len(cells) != 3:
            raise ValueError(f"notation row needs three cells (symbol, meaning, chapters): {line!r}")
        sym, meaning, chapters = cells
        m = re.fullmatch(r"\$([^$]+)\$", sym)
        if not m:
            raise ValueError(f"notation symbol cell must be one $...$: {sym!r}")
        nums = [c.strip() for c in chapters.split(",")]
        if not all(n.isdigit() for n in nums):
            raise ValueError(f"notation chapters cell must list chapter numbers: {chapters!r}")
        out.append(Entry(m.group(1).strip(), meaning, frozenset(int(n) for n in nums)))
    return out


def chapter_declarations(chapters_dir: Path | None = None) -> dict[int, dict[str, str]]:
    """``{chapter number: {symbol: meaning}}`` from each chapter package's ``notation.SYMBOLS``
    (packages ``c<N>_<name>`` of :mod:`infonce_book.chapters`; a package without a ``notation``
    module declares nothing)."""
    chapters_dir = chapters_dir or Path(__file__).resolve().parents[1] / "chapters"
    out = {}
    for pkg in sorted(p for p in chapters_dir.iterdir() if p.is_dir() and re.match(r"c\d+_", p.name)):
        if not (pkg / "notation.py").is_file():
            continue
        mod = importlib.import_module(f"infonce_book.chapters.{pkg.name}.notation")
        out[int(re.match(r"c(\d+)_", pkg.name).group(1))] = dict(mod.SYMBOLS)
    return out


def symbol_in_text(symbol: str, text: str) -> bool:
    """Whether the TeX ``symbol`` occurs in ``text`` (as written, or with its one-letter subscript
    or superscript braced or not: ``\\kappa_d`` matches ``\\kappa_{d}``; a command is not matched
    inside a longer one: ``\\nu`` is not in ``\\nuance``)."""
    variants = {symbol, re.sub(r"([_^])\{(\w)\}", r"\1\2", symbol), re.sub(r"([_^])(\w)(?!\w)", r"\1{\2}", symbol)}
    for v in variants:
        pattern = re.escape(v) + (r"(?![A-Za-z])" if re.search(r"\\[A-Za-z]+$", v) else "")
        if re.search(pattern, text):
            return True
    return False


def notation_problems(entries: list[Entry], declarations: dict[int, dict[str, str]],
                      texts: dict[int, str] | None = None) -> list[str]:
    """Every way the chapters' declared symbols disagree with the notation table (module
    docstring); empty when each symbol has one meaning book-wide.

    Args:
        entries: the table (:func:`parse_notation`).
        declarations: ``{chapter: {symbol: meaning}}`` (:func:`chapter_declarations`).
        texts: ``{chapter: the chapter's Markdown}``; when given, each declared symbol must occur in
            its chapter's text.

    Examples:
        >>> table = [Entry("\\\\kappa", "concentration of the vMF law", frozenset({1, 5}))]
        >>> problems = notation_problems(table, {5: {"\\\\kappa": "curvature constant"}})
        >>> len(problems), problems[0].endswith("one meaning: 'concentration of the vMF law'")
        (1, True)
        >>> problems[0].startswith("Chapter 5 defines")
        True
    """
    problems = []
    seen = {}
    for e in entries:
        if e.symbol in seen:
            problems.append(f"the notation page lists ${e.symbol}$ twice: {seen[e.symbol]!r} and {e.meaning!r}")
        seen.setdefault(e.symbol, e.meaning)
    table = {e.symbol: e for e in entries}
    for chapter, symbols in sorted(declarations.items()):
        for sym, meaning in symbols.items():
            e = table.get(sym)
            if e is None:
                problems.append(f"Chapter {chapter} defines ${sym}$ ({meaning!r}), "
                                "which the notation page does not list")
                continue
            if meaning != e.meaning:
                problems.append(f"Chapter {chapter} defines ${sym}$ as {meaning!r}; the notation page gives it one "
                                f"meaning: {e.meaning!r}")
            if chapter not in e.chapters:
                problems.append(f"the notation page does not list Chapter {chapter} for ${sym}$")
            if texts is not None and chapter in texts and not symbol_in_text(sym, texts[chapter]):
                problems.append(f"Chapter {chapter} declares ${sym}$ but its text never writes it")
    return problems
