"""The book's index, proof index and glossary, read from the smoke build's HTML."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from infonce_book.pipeline import run as pipeline

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.book  # reads the session's smoke build

#: Terms the chapters use that a reader must find in the glossary (the issue's examples and more).
REQUIRED_TERMS = ("SNIS", "decoupled", "density floor", "old constants", "sharp constants", "chance level",
                  "in-batch negatives", "PAC-Bayes", "Rademacher complexity", "equivalence test", "ERM")


def _text(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _glossary_terms() -> list[str]:
    text = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith(" ")]


def _index_entries(html: Path) -> list[str]:
    page = (html / "genindex.html").read_text(encoding="utf-8")
    return [_text(m) for m in re.findall(r"<li>(.*?)(?=<ul>|</li>)", page, re.S)]


def test_the_glossary_defines_the_chapters_terms():
    terms = _glossary_terms()
    assert [t for t in REQUIRED_TERMS if t not in terms] == []
    assert terms == sorted(terms, key=str.lower), "alphabetical order"


def test_the_general_index_lists_glossary_notation_and_results_by_name(smoke_book):
    entries = _index_entries(smoke_book.html)
    lowered = {e.lower() for e in entries}
    assert [t for t in _glossary_terms() if t.lower() not in lowered] == []
    notation = (ROOT / "book" / "notation.md").read_text(encoding="utf-8")
    bold = [" ".join(b.split()) for b in re.findall(r"\*\*([^*$]+?)\*\*", notation)]
    assert len(bold) >= 5
    assert [b for b in bold if b.strip(" :").lower() not in lowered and
            re.sub(r"^(the|a|an) ", "", b.strip(" :").lower()) not in lowered] == []
    assert any(e.startswith("O(1/k) rate, with explicit constants") for e in entries), entries[:40]
    assert "theorem c1-thm-rate" in entries
    assert not [e for e in entries if "\\" in e or "$" in e], "raw TeX in the index"


def test_the_proof_index_shows_numbers_and_titles(smoke_book):
    page = (smoke_book.html / "prf-prf.html").read_text(encoding="utf-8")
    rows = [_text(r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S)]
    results = [r for r in rows if re.match(r"(Theorem|Lemma|Proposition|Corollary|Definition) \d+\.\d+", r)]
    assert "Theorem 1.3 (The O(1/k) rate, with explicit constants) (c1-thm-rate)" in results, rows[:10]
    bare = [r for r in rows if re.fullmatch(r"[\w-]+", r) and "-" in r]
    assert bare == [], "bare labels in the proof index"
    chapters = list(pipeline.executable_pages(ROOT))
    assert len(results) >= 3 * len([c for c in chapters if c.startswith("c")])


def test_every_chapter_links_to_the_glossary(smoke_book):
    for stem in pipeline.executable_pages(ROOT):
        if not stem.startswith("c"):
            continue
        page = (smoke_book.html / "book" / f"{stem}.html").read_text(encoding="utf-8")
        assert 'href="glossary.html#term-' in page, f"{stem}: no term linked to the glossary"


def test_the_first_page_links_the_indexes_the_chapters_and_their_results(smoke_book):
    """The intro (index.html redirects to it) opens with a "Start reading" link, links the proof
    index and the general index, and names each of the six chapters with a result whose numbers
    are glued from the executed chapters (no glue role left as text, no number missing)."""
    intro = (smoke_book.html / "book" / "intro.html").read_text(encoding="utf-8")
    main = intro.split('<article class="bd-article">', 1)[1]
    top = main.split('id="who-it-is-for"', 1)[0]  # everything above "Who it is for"
    assert re.search(r'<a class="reference internal" href="c1_rate.html">.*?Start reading', top, re.S)
    assert 'href="../prf-prf.html"' in top and 'href="../genindex.html"' in top
    assert re.search(r'<img [^>]*alt="Top, training', top) and "intro_idea" in top  # the idea in one picture
    chapters = re.search(r'<section id="the-six-chapters-one-result-each">(.*?)</section>', top, re.S).group(1)
    items = re.findall(r"<li>(.*?)</li>", chapters, re.S)
    stems = [s for s in pipeline.executable_pages(ROOT) if re.match(r"c\d+_", s)]
    assert len(items) == len(stems) == 6
    for stem, item in zip(stems, items):
        assert f'href="{stem}.html"' in item
        assert "glue" not in _text(item) and "::" not in _text(item)
    glued = [re.findall(r'<span class="pasted-text">([^<]+)</span>', item) for item in items]
    assert [len(g) for g in glued] == [2, 1, 2, 1, 2, 2]
    assert all(re.fullmatch(r"[−-]?[0-9][0-9.,]*", v) for g in glued for v in g), glued
    assert '<svg class="infonce-reading-path"' in top and '<a href="c6_digits.html">' in top
