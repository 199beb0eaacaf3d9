"""The PDFs (`infonce-book pdf`): printed from the session's smoke build with Debian's chromium and
read back with pypdf: page counts, chapter-numbered captions and labels, typeset math (no raw
TeX), figures, bookmarks, links that stay inside the PDF, and the links to the PDFs on the pages;
that no character of any page lies outside the page's text column (the lecturer's edition on A4,
the student edition on US Letter), that the pages are numbered through, that the contents page
lists every chapter and section with its page, that no toggle text is printed (solutions printed
open, absent from the student edition) and that the back matter is in ``appendix.pdf``.

Skipped, saying why, without playwright or a chromium executable (``make browser-deps``)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from infonce_book.pipeline import pdf as pdf_build
from infonce_book.pipeline import pdf_layout, pdf_pages
from infonce_book.pipeline import run as pipeline

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.book, pytest.mark.browser]
RAW_TEX = ("\\frac", "$$", "\\(", "\\)", "\\begin{", "\\mathbb", "\\tau")


def _print(build, edition, paper):
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    pypdf = pytest.importorskip("pypdf", reason="pypdf is not installed (pip install -e '.[test]')")
    if pdf_build.find_chromium() is None:
        pytest.skip("no chromium executable found: run `make browser-deps` (apt-get install -y chromium)")
    made = pdf_build.build_pdfs(build, ROOT, edition=edition, paper=paper, log=lambda m: None)
    readers = {name: pypdf.PdfReader(str(path)) for name, path in
               [("book", made.book), ("appendix", made.appendix), *made.chapters.items()]}
    texts = {name: "\n".join(p.extract_text() for p in r.pages) for name, r in readers.items()}
    return made, readers, texts


@pytest.fixture(scope="module")
def pdfs(smoke_book):
    """The lecturer's (full) edition, printed once on A4."""
    return _print(smoke_book.build, "web", "a4")


@pytest.fixture(scope="module")
def student_pdfs(smoke_students, smoke_book):
    """The student edition (conftest's ``smoke_students``), printed once on US Letter."""
    return _print(smoke_book.build, "students", "letter")


def _numbered_chapters() -> list[str]:
    back = {f for f, c in pdf_build.toc_pages(ROOT) if c.strip().lower() == pdf_build.BACK_MATTER}
    return [s for s, p in pipeline.chapters(ROOT).items()
            if str(p.relative_to(ROOT).with_suffix("")) not in back]


def test_make_pdf_writes_the_book_the_appendix_and_one_pdf_per_chapter_with_their_pages(pdfs, smoke_book):
    made, readers, _ = pdfs
    chapters = _numbered_chapters()
    assert made.book == smoke_book.build / "pdf" / "book.pdf"
    assert made.appendix == smoke_book.build / "pdf" / "appendix.pdf"
    assert sorted(made.chapters) == sorted(chapters)
    entries = pdf_build._toc_entries(ROOT)
    assert list(made.pages) == [f for f, _ in entries]  # every page of _toc.yml, in order
    in_book, in_appendix = pdf_build.split_entries(entries)
    assert in_appendix and {f for f, _ in in_appendix} == {
        f for f, c in entries if c.strip().lower() == pdf_build.BACK_MATTER} - set(pdf_build.BOOK_BACK_MATTER)
    # The book is its contents pages, then its pages one after the other; the appendix likewise;
    # each chapter's PDF is its part of the book.
    assert len(readers["book"].pages) == made.front["book.pdf"] + sum(made.pages[f] for f, _ in in_book)
    assert len(readers["appendix"].pages) == made.front["appendix.pdf"] + sum(made.pages[f] for f, _ in in_appendix)
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
    assert pdf_build.plain_title(r"1.9. How \(c_1\) and \(u_{12}\) depend") == "1.9. How c₁ and u₁₂ depend"


MM = 72 / 25.4  # points per millimetre
FOOTER_MM = 6.0  # the footers' baseline lies above this height (they sit 8 mm above the edge)


def _cut_characters(reader) -> list[tuple[int, list]]:
    """``(page number, glyphs)`` of every page with a character outside its printable area: the
    text column (the page less the left and right margins, so a formula, table or code line that
    overflows it is found), from the top margin down to the footer."""
    m = pdf_pages.MARGIN_MM
    out = []
    for i, page in enumerate(reader.pages):
        width, height = float(page.mediabox.width), float(page.mediabox.height)
        glyphs = pdf_layout.glyph_boxes(page, reader)
        assert glyphs or i > 0, "no text found on the first page: the reader of positions is broken"
        bad = pdf_layout.outside(glyphs, m["left"] * MM, FOOTER_MM * MM, width - m["right"] * MM,
                                 height - m["top"] * MM)
        if bad:
            out.append((i + 1, [(round(g.x0), round(g.x1), round(g.y)) for g in bad[:3]]))
    return out


@pytest.mark.parametrize("edition", ["lecturer", "student"])
def test_no_character_lies_outside_the_printable_area(edition, request):
    made, readers, _ = request.getfixturevalue("pdfs" if edition == "lecturer" else "student_pdfs")
    paper = pdf_pages.PAPERS["a4" if edition == "lecturer" else "letter"]
    for name in ("book", "appendix"):
        reader = readers[name]
        box = reader.pages[0].mediabox
        size = (float(box.width) / MM, float(box.height) / MM)  # chromium rounds to a pixel
        assert abs(size[0] - paper.width_mm) < 1 and abs(size[1] - paper.height_mm) < 1, (name, size)
        assert _cut_characters(reader) == [], (edition, name)


def test_the_position_reader_finds_a_character_in_the_margin(pdfs):
    """The check above can fail: every glyph of the first page, moved 30 mm right, leaves the
    column (the glyphs' advances are real widths, not zero)."""
    _, readers, _ = pdfs
    page = readers["book"].pages[0]
    glyphs = pdf_layout.glyph_boxes(page, readers["book"])
    assert len(glyphs) > 50 and all(g.x1 > g.x0 for g in glyphs if g.code not in ("3", "20"))
    shifted = [pdf_layout.Glyph(g.x0 + 30 * MM, g.x1 + 30 * MM, g.y, g.code) for g in glyphs]
    right = float(page.mediabox.width) - pdf_pages.MARGIN_MM["right"] * MM
    assert pdf_layout.outside(shifted, 0, 0, right, 1e4)


@pytest.mark.parametrize("edition", ["lecturer", "student"])
def test_pages_are_numbered_through_and_the_contents_lists_every_chapter(edition, request):
    made, readers, texts = request.getfixturevalue("pdfs" if edition == "lecturer" else "student_pdfs")
    book, front = readers["book"], made.front["book.pdf"]
    labels = book.page_labels
    assert labels == [pdf_pages.page_label(i, front) for i in range(len(book.pages))]
    assert labels[front] == "1" and labels[-1] == str(len(book.pages) - front)
    for i, page in enumerate(book.pages):  # the printed footer says the same
        assert re.search(rf"· {labels[i]}\s*$", page.extract_text().strip()), (i, labels[i])
    contents = re.sub(r"\s+", " ", "\n".join(book.pages[i].extract_text() for i in range(front)))
    starts = {o.title: book.get_destination_page_number(o) for group in book.outline
              for o in (group if isinstance(group, list) else [group]) if not isinstance(o, list)}
    for n, stem in enumerate(_numbered_chapters(), start=1):
        title = next(t for t in starts if t.startswith(f"{n}. "))
        assert f"{title} {labels[starts[title]]}" in contents, (title, labels[starts[title]])
        assert re.search(rf"{n}\.2\. .+? \d+", contents), n  # its sections, with their pages
    assert "appendix.pdf" in contents
    # The chapter PDFs carry the book's page numbers.
    for stem in _numbered_chapters():
        title = next(t for t in starts if t.startswith(f"{_numbered_chapters().index(stem) + 1}. "))
        assert readers[stem].page_labels[0] == labels[starts[title]], stem


def test_no_toggle_text_solutions_open_in_the_lecturers_pdf_absent_in_the_students(pdfs, student_pdfs):
    for made, _, texts in (pdfs, student_pdfs):
        for name, text in texts.items():
            assert "Click to" not in text, name
    lecturer, student = pdfs[2]["book"], student_pdfs[2]["book"]
    solutions = re.findall(r"Solution to Exercise \d+\.\d+", lecturer)
    assert len(solutions) >= 10
    assert "Solution to" not in student and "Exercise 1.1" in student


def test_the_back_matter_is_in_the_appendix(pdfs):
    _, readers, texts = pdfs
    book_titles = {o.title for g in readers["book"].outline for o in (g if isinstance(g, list) else [g])
                   if not isinstance(o, list)}
    app_titles = {o.title for g in readers["appendix"].outline for o in (g if isinstance(g, list) else [g])
                  if not isinstance(o, list)}
    _, in_appendix = pdf_build.split_entries(pdf_build._toc_entries(ROOT))
    assert len(app_titles - {"Contents", "Back matter"}) == len(in_appendix)
    assert not (app_titles - {"Contents", "Back matter"}) & book_titles
    assert any("References" in t for t in book_titles)


def test_blocks_scaled_to_fit_keep_most_of_their_size(pdfs, student_pdfs):
    """Scaling a display, table or image to its box is the last resort (long displays are broken
    at the source): what was scaled keeps at least 60 % of its size, so it stays readable."""
    for made, _, _ in (pdfs, student_pdfs):
        print("scaled to fit:", made.fitted)  # shown with -rP: where a source break would help
        zooms = [zoom for blocks in made.fitted.values() for _, _, zoom in blocks]
        assert all(z >= 0.6 for z in zooms), made.fitted
