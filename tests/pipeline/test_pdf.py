"""The PDFs (`infonce-book pdf`): printed from the session's smoke build with Debian's chromium and
read back with pypdf: page counts, chapter-numbered captions and labels, typeset math (no raw
TeX), figures, bookmarks, links that stay inside the PDF, and the links to the PDFs on the pages.

Skipped, saying why, without playwright or a chromium executable (``make browser-deps``)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from infonce_book.pipeline import pdf as pdf_build
from infonce_book.pipeline import run as pipeline

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.book, pytest.mark.browser]
RAW_TEX = ("\\frac", "$$", "\\(", "\\)", "\\begin{", "\\mathbb", "\\tau")


@pytest.fixture(scope="module")
def pdfs(smoke_book):
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    pypdf = pytest.importorskip("pypdf", reason="pypdf is not installed (pip install -e '.[test]')")
    if pdf_build.find_chromium() is None:
        pytest.skip("no chromium executable found: run `make browser-deps` (apt-get install -y chromium)")
    made = pdf_build.build_pdfs(smoke_book.build, ROOT, log=lambda m: None)
    readers = {name: pypdf.PdfReader(str(path)) for name, path in
               [("book", made.book), *made.chapters.items()]}
    texts = {name: "\n".join(p.extract_text() for p in r.pages) for name, r in readers.items()}
    return made, readers, texts


def _numbered_chapters() -> list[str]:
    back = {f for f, c in pdf_build.toc_pages(ROOT) if c.strip().lower() == pdf_build.BACK_MATTER}
    return [s for s, p in pipeline.chapters(ROOT).items()
            if str(p.relative_to(ROOT).with_suffix("")) not in back]


def test_make_pdf_writes_the_book_and_one_pdf_per_chapter_with_their_pages(pdfs, smoke_book):
    made, readers, _ = pdfs
    chapters = _numbered_chapters()
    assert made.book == smoke_book.build / "pdf" / "book.pdf"
    assert sorted(made.chapters) == sorted(chapters)
    toc = [f for f, _ in pdf_build._toc_entries(ROOT)]
    assert list(made.pages) == toc  # every page of _toc.yml, in order
    # The book is the pages one after the other; each chapter's PDF is its part of the book.
    assert len(readers["book"].pages) == sum(made.pages.values())
    for stem in chapters:
        assert len(readers[stem].pages) == made.pages[f"book/{stem}"] >= 3, stem


def test_captions_and_labels_are_those_of_the_web_pages(pdfs, smoke_book):
    """Numbering as on the web: every caption number (Theorem 1.3, Fig. 1.2, Exercise 1.1) and
    every visible label of a chapter's HTML page is in its PDF, chapter-numbered."""
    _, _, texts = pdfs
    for n, stem in enumerate(_numbered_chapters(), start=1):
        html = (smoke_book.html / "book" / f"{stem}.html").read_text()
        captions = [c.strip() for c in re.findall(r'<span class="caption-number">([^<]*)</span>', html)]
        labels = re.findall(r'<code class="infonce-label[^"]*"><span class="pre">([^<]+)</span>', html)
        assert captions and labels, stem
        text = re.sub(r"\s+", " ", texts[stem])
        assert [c for c in captions if c not in text] == [], stem
        assert [lb for lb in labels if lb not in text] == [], stem
        own = [c for c in captions if not c.startswith("Proof")]
        assert all(re.fullmatch(rf"[A-Z][a-z.]* {n}\.\d+", c) for c in own), (stem, own)
        # The chapter's title with its number, as in the web edition's table of contents.
        assert re.search(rf"^{n}\. ", texts[stem], flags=re.M), stem
    assert "c1-thm-rate" in texts["book"]


def _code_text(html_dir: Path) -> str:
    """The text of every code block (``<pre>``) of the HTML build: Python source may hold TeX
    strings (figure titles, sympy labels) that are code, not math left untypeset."""
    blocks = []
    for page in html_dir.rglob("*.html"):
        for block in re.findall(r"<pre[^>]*>(.*?)</pre>", page.read_text(errors="ignore"), flags=re.S):
            blocks.append(unescape(re.sub(r"<[^>]+>", "", block)))
    return "\n".join(blocks)


def test_math_is_typeset_not_raw_tex(pdfs, smoke_book):
    _, _, texts = pdfs
    code = _code_text(smoke_book.html)
    for name, text in texts.items():
        raw = [line for line in text.splitlines() if any(t in line for t in RAW_TEX)
               and line.strip() not in code]  # a line of a printed code cell is code
        assert raw == [], (name, raw[:5])
    # MathJax's output is text too: the symbols of the first theorem are there as glyphs.
    assert "∞" in texts["c1_rate"] and "τ" in texts["c1_rate"]


def test_figures_are_in_the_pdfs(pdfs, smoke_book):
    _, readers, _ = pdfs
    for stem in _numbered_chapters():
        html = (smoke_book.html / "book" / f"{stem}.html").read_text()
        figures = len(re.findall(r"<figure\b", html))
        images = sum(len(page.images) for page in readers[stem].pages)
        assert images >= figures >= 1, (stem, images, figures)


def test_bookmarks_and_links_stay_inside_the_pdf(pdfs):
    _, readers, _ = pdfs
    outline = readers["book"].outline
    titles = [o.title for o in outline if not isinstance(o, list)]
    assert {"The population risk", "Generalisation", "Back matter"} <= set(titles)
    nested = [o.title for group in outline if isinstance(group, list) for o in group if not isinstance(o, list)]
    assert any(t.startswith("1. ") for t in nested) and not any("\\(" in t for t in nested)
    for name, reader in readers.items():
        internal = 0
        for page in reader.pages:
            for ref in page.get("/Annots") or []:
                annot = ref.get_object()
                action = annot.get("/A")
                uri = str(action.get_object().get("/URI", "")) if action is not None else ""
                assert "127.0.0.1" not in uri and "localhost" not in uri, (name, uri)
                internal += isinstance(annot.get("/Dest"), list)
        assert internal > 0, name
    # Links between pages of the book (citations, the notation's equations) became jumps inside it.
    assert sum(isinstance(r.get_object().get("/Dest"), list) for p in readers["book"].pages
               for r in p.get("/Annots") or []) > sum(
        isinstance(r.get_object().get("/Dest"), list) for s in _numbered_chapters()
        for p in readers[s].pages for r in p.get("/Annots") or [])


def test_each_chapter_page_and_the_intro_link_to_their_pdf(pdfs, smoke_book):
    html = smoke_book.html
    for stem in _numbered_chapters():
        page = (html / "book" / f"{stem}.html").read_text()
        m = re.search(r'<p class="infonce-pdf"><a class="reference download" href="([^"]+)"', page)
        assert m and m.group(1) == f"../pdf/{stem}.pdf" and (html / "pdf" / f"{stem}.pdf").is_file(), stem
    intro = (html / "book" / "intro.html").read_text()
    assert '<a class="reference download" href="../pdf/book.pdf"' in intro
    assert (html / "pdf" / "book.pdf").stat().st_size > 100_000


def test_titles_lose_their_tex_for_bookmarks_and_footers():
    assert pdf_build.plain_title(r"1. The limit and its \(O(1/k)\) rate (C1) — Book") == "1. The limit and its O(1/k) rate (C1)"
    assert pdf_build.plain_title(r"3. How \(\tau\) and \(\kappa\) matter") == "3. How τ and κ matter"
