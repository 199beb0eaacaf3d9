"""The PDFs (`infonce-book pdf`): typeset by LaTeX through jupyter-book's builder from the session's
smoke build, both editions (the lecturer's on A4, the student edition on US Letter), and read back:
the files and their page numbers, every image at its own aspect, one body type size across the
chapters, no number or word split inside a table, an index listing every glossary term, section
references with their numbers and pages, the numbering of the web (Theorem N.M, Fig. N.M), no code,
ledger table or build note in the chapters, and a LaTeX log with no error and no undefined reference.

Skipped, saying why, without TeX Live (``make tex-deps``), pypdf or poppler's ``pdfimages``."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from infonce_book.pipeline import run as pipeline
from infonce_book.pipeline import typeset
from infonce_book.pipeline.run import site_dir

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.book]
EDITIONS = ("lecturer", "students")
BODY_PT = 10.95  # LaTeX's 11 pt


def _typeset(build: Path, edition: str, paper: str):
    pypdf = pytest.importorskip("pypdf", reason="pypdf is not installed (pip install -e '.[test]')")
    missing = [t for t in (*typeset.TEX_TOOLS, "pdftotext", "pdfimages") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not found: `make tex-deps` (TeX Live) and poppler-utils")
    made = typeset.build_pdfs(build, ROOT, edition=edition, paper=paper, log=lambda m: None)
    readers = {p.name: pypdf.PdfReader(str(p)) for p in [made.book, made.appendix, *made.chapters.values()]}
    tex = site_dir(build, edition) / "_build" / "latex" / "book.tex"
    return made, readers, tex.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def lecturer(smoke_book):
    """The lecturer's edition (with the solutions), typeset once on A4."""
    return _typeset(smoke_book.build, "web", "a4")


@pytest.fixture(scope="module")
def students(smoke_students, smoke_book):
    """The student edition (conftest's ``smoke_students``), typeset once on US Letter."""
    return _typeset(smoke_book.build, "students", "letter")


@pytest.fixture(params=EDITIONS)
def pdfs(request):
    return request.getfixturevalue(request.param)


def _text(path: Path, layout: bool = False) -> str:
    args = ["pdftotext", *(["-layout"] if layout else []), str(path), "-"]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def _numbered_chapters() -> list[str]:
    back = set(pipeline.back_matter(ROOT))
    return [s for s, p in pipeline.executable_pages(ROOT).items() if str(p.relative_to(ROOT).with_suffix("")) not in back]


def test_the_book_the_appendix_and_one_pdf_per_chapter_with_the_books_page_numbers(pdfs, smoke_book):
    made, readers, _ = pdfs
    assert sorted(made.chapters) == sorted(_numbered_chapters())
    book = readers["book.pdf"]
    labels = book.page_labels
    for name, path in [*((p.name, p) for p in made.chapters.values()), ("appendix.pdf", made.appendix)]:
        part = readers[name]
        first = len(labels) - 1 - labels[::-1].index(made.first_page[name])  # its first page in the book (the
        # title pages are numbered 1, 2 too)
        assert part.page_labels[0] == made.first_page[name] and part.page_labels[-1] == labels[first + len(part.pages) - 1]
        assert part.pages[0].extract_text() == book.pages[first].extract_text()
    assert "Chapter 1" in readers["c1_rate.pdf"].pages[0].extract_text()
    html = smoke_book.build / ("html" if made.book.parent.name == "pdf" else "html-students")
    assert sorted(p.name for p in (html / "pdf").glob("*.pdf")) == sorted(readers)
    intro = (html / "book" / "intro.html").read_text(encoding="utf-8")
    assert 'href="../pdf/book.pdf"' in intro and "PDF of the whole book" in intro
    assert 'href="../pdf/c1_rate.pdf"' in (html / "book" / "c1_rate.html").read_text(encoding="utf-8")


def test_the_latex_log_has_no_error_and_no_undefined_reference(pdfs):
    made, _, _ = pdfs
    log = made.log.read_text(encoding="utf-8", errors="replace")
    assert typeset.log_problems(made.log) == []
    assert "There were undefined references" not in log and "LaTeX Error" not in log
    assert "Output written on book" in log or "book.xdv" in log  # it is the log of the whole run


def test_every_image_keeps_its_aspect(pdfs):
    made, readers, _ = pdfs
    rows = [line.split() for line in subprocess.run(["pdfimages", "-list", str(made.book)], capture_output=True,
                                                    text=True, check=True).stdout.splitlines()[2:]]
    images = [(int(r[0]), float(r[12]), float(r[13])) for r in rows if r[2] == "image"]
    squashed = [(page, x, y) for page, x, y in images if abs(x / y - 1) > 0.02]
    assert not squashed, f"(page, x-ppi, y-ppi) of images not at their own aspect: {squashed}"
    captions = re.findall(r"Fig\. (\d+)\.(\d+):", _text(made.book))
    assert len(captions) >= 6 and {c for c, _ in captions} >= {"1", "2", "3", "4", "5", "6"}


def _sizes(reader) -> Counter:
    """Characters of each type size (pt, to 0.1) on a PDF's pages."""
    sizes = Counter()

    def visit(text, cm, tm, font, size):
        if text.strip():
            scale = (abs(tm[0] * tm[3] - tm[1] * tm[2]) * abs(cm[0] * cm[3] - cm[1] * cm[2])) ** 0.5
            sizes[round(size * scale, 1)] += len(text.strip())

    for page in reader.pages:
        page.extract_text(visitor_text=visit)
    return sizes


def test_one_body_type_size_across_the_chapters(pdfs):
    made, readers, _ = pdfs
    body = {name: _sizes(readers[p.name]).most_common(1)[0][0] for name, p in made.chapters.items()}
    assert len(set(body.values())) == 1 and all(abs(size - BODY_PT) < 0.1 for size in body.values()), body


_TABLE = re.compile(r"\\begin\{(tabulary|longtable|tabular)\}(.*?)\\end\{\1\}", re.S)
_NUMBER = re.compile(r"(?<![\w.])[−-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])[−-]?\d+\.\d+")
_WORD = re.compile(r"(?<![\\\w])[A-Za-z]{4,}(?![\w{])")


def _rows(tex: str) -> list[str]:
    """The rows of every table of the LaTeX source, as plain text (math and commands left out)."""
    rows = []
    for _, body in _TABLE.findall(tex):
        body = re.sub(r"^(?:\{\\linewidth\})?(?:\[\w\])?\{.*?\}\n", "", body.lstrip(), flags=re.S)  # the column spec
        body = re.sub(r"\\\(.*?\\\)|\\detokenize\{.*?\}|\\sphinxhyphen\{\}|\\sphinxcode\{\\sphinxupquote\{.*?\}\}|\\DUrole\{[^}]*\}", " ",
                      body)  # math and code names are not words
        rows += [r for r in re.split(r"\\\\", body) if "&" in r]
    return rows


def test_no_number_or_word_is_split_inside_a_table(pdfs):
    made, _, tex = pdfs
    rows = _rows(tex)  # every table: the chapters' and the back matter's (the claims ledger among them)
    assert len(rows) > 200
    text = _text(made.book, layout=True)
    for ligature, letters in {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}.items():
        text = text.replace(ligature, letters)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    joined = "\n".join(lines)
    missing = []
    for row in rows:
        tokens = [t.replace("-", "−") if t.startswith("-") else t for t in _NUMBER.findall(row)]
        tokens += [w for w in _WORD.findall(re.sub(r"\\[A-Za-z]+", " ", row)) if w.lower() not in {"cline"}]
        # whole: no letter or digit touches a word ("monte_carlo", "torch.Tensor": their parts print
        # whole, and may break after an underscore), no digit a number (1.00117 of 1.00117e-12)
        missing += [t for t in tokens if not re.search(rf"(?<![A-Za-z0-9]){re.escape(t)}(?![A-Za-z0-9])"
                                                       if t[0].isalpha() else
                                                       rf"(?<![\d.,]){re.escape(t)}(?![\d])", joined)]
    assert not missing, f"table entries not printed whole on one line: {sorted(set(missing))[:20]}"


_WORD_BOX = re.compile(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>')


def test_nothing_prints_past_the_text_block(pdfs):
    """No table, display or figure label runs into the margins or the footer: on every page with a
    running head and foot, each word lies within their left and right ends and clear of both."""
    made, _, _ = pdfs
    html = subprocess.run(["pdftotext", "-bbox", str(made.book), "-"], capture_output=True, text=True,
                          check=True).stdout
    pages = [[(float(a), float(b), float(c), float(d), w) for a, b, c, d, w in _WORD_BOX.findall(p)]
             for p in html.split("<page ")[1:]]
    foot_y = Counter(round(max(w[1] for w in p)) for p in pages if p).most_common(1)[0][0]  # the foot's line
    head_y = Counter(round(min(w[3] for w in p)) for p in pages if p).most_common(1)[0][0]  # the head's
    ends = {}  # page parity -> the leftmost and rightmost ends of the running heads and feet
    for number, words in enumerate(pages, start=1):
        rule = [w for w in words if w[3] <= head_y + 1 or w[1] >= foot_y - 1]
        if rule:
            low, high = ends.get(number % 2, (math.inf, -math.inf))
            ends[number % 2] = (min(low, *(w[0] for w in rule)), max(high, *(w[2] for w in rule)))
    outside = []
    for number, words in enumerate(pages, start=1):
        head = [w for w in words if w[3] <= head_y + 1]
        foot = [w for w in words if w[1] >= foot_y - 1]
        if not head or not foot:  # a part's or chapter's opening page
            continue
        left, right = ends[number % 2][0] - 2, ends[number % 2][1] + 2
        outside += [(number, w[4]) for w in words if w not in head and w not in foot
                    and (w[0] < left or w[2] > right or w[3] > foot_y - 4 or w[1] < head_y + 2)]
    assert not outside, f"words past the text block (page, word): {outside[:12]}"


def _glossary_terms() -> list[str]:
    text = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}", 1)[1].split("\n```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line[0].isspace()]


def test_the_index_lists_every_glossary_term_the_notations_terms_and_the_named_results(pdfs):
    made, readers, _ = pdfs
    book = readers["book.pdf"]
    start = max(i for i, p in enumerate(book.pages) if p.extract_text().lstrip().startswith("Index"))
    index = " ".join(" ".join(p.extract_text() for p in book.pages[start:]).replace("-\n", "").split()).lower()
    terms = _glossary_terms()
    assert len(terms) >= 10
    missing = [t for t in terms if " ".join(t.split()).lower() not in index]
    assert not missing, f"glossary terms not in the index: {missing}"
    assert "theorem c1-thm-rate" in index.replace("\u2010", "-")  # a named result, with its kind and label


def _section_refs() -> dict[str, str]:
    """``{label: page}`` of every section label of a numbered chapter that a chapter refers to."""
    refs = {}
    for stem in _numbered_chapters():
        text = (ROOT / "book" / f"{stem}.md").read_text(encoding="utf-8")
        labels = set(re.findall(r"^\((\S+)\)=\n+#{2,} ", text, flags=re.M))
        for other in _numbered_chapters():
            used = re.findall(r"\{ref\}`(?:[^`<]*<)?([^`>]+)>?`", (ROOT / "book" / f"{other}.md").read_text("utf-8"))
            refs.update({label: stem for label in used if label in labels})
    return refs


def test_section_references_print_their_numbers_and_pages(pdfs):
    made, _, tex = pdfs
    refs = _section_refs()
    assert len(refs) >= 10
    texts = {}
    for label, stem in refs.items():
        found = re.findall(r"\\hyperref\[\\detokenize\{book/%s:%s\}\]\{\\sphinxcrossref\{(.*?)\}\}\}~\(p\.\\,\\pageref"
                           % (re.escape(stem), re.escape(label)), tex)
        texts[label] = found
    bare = {label: t for label, t in texts.items() if t and not all(re.fullmatch(r"Section \d+(\.\d+)+", x) for x in t)}
    assert not bare, f"section references without their numbers: {bare}"
    assert sum(map(len, texts.values())) >= 10
    assert re.search(r"Section \d+\.\d+\s+\(p\.\s?\d+\)", _text(made.book))


def test_numbered_as_on_the_web_and_without_the_laboratory(pdfs):
    made, readers, _ = pdfs
    text = _text(made.book)
    assert re.search(r"Theorem 1\.3 \(", text) and re.search(r"Fig\. 1\.1:", text) and "(1.1)" in text
    assert not re.search(r"(Theorem|Lemma|Proposition|Corollary|Exercise|Fig\.) \d+\.\d+\.\d+", text)
    assert not re.search(r"Chapter \d+\s+(Notation|Glossary|Who it is for)", text)  # front matter unnumbered
    chapters = "\n".join(_text(p) for p in made.chapters.values())
    for phrase in ("ledger_view", "glue_all(", "ctx.ledger", "Rerun this chapter", "click", "box below",
                   "in the box", "infonce-book run"):
        assert phrase not in chapters, phrase
    assert "passed" in _text(made.appendix)  # the appendix keeps the claims ledger


def test_solutions_in_the_lecturers_edition_only(lecturer, students):
    assert "Solution to Exercise" in _text(lecturer[0].book)
    assert "Solution to Exercise" not in _text(students[0].book)
    assert "Exercise 1.1" in _text(students[0].book)
