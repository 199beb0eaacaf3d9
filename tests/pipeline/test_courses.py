"""What a lecturer needs, checked on the smoke build (the session's ``smoke_book``): results
numbered by chapter, the paper's results never cited by a bare number, a visible label on every
result, chapter cells without plumbing, the reading path on the intro, and the student edition.

Some of these read the chapters' own text (titles, captions, code cells): a chapter that breaks
them fails here, naming the page and the line.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import nbformat
import pytest

from infonce_book.experiment.toc import BACK_MATTER, toc_pages
from infonce_book.pipeline import run as pipeline

ROOT = Path(__file__).resolve().parents[2]
book = pytest.mark.book  # the tests that read the session's smoke build

RESULT_TYPES = ("Theorem", "Lemma", "Proposition", "Corollary", "Definition", "Conjecture")
MAX_GLUE_LINES = 3  # glue( calls a rendered code cell may show
MAX_LINE = 88  # characters of a rendered code line (the page cuts longer ones off)
HIDDEN_TAGS = {"remove-input", "remove-cell"}  # hide-input still renders the code (collapsed)


def numbered_chapters() -> list[str]:
    """Chapter N is the N-th page of the numbered parts (everything but Foundations and Back matter)."""
    return [Path(f).name for f, caption in toc_pages(ROOT)
            if caption.strip().lower() not in ("foundations", BACK_MATTER)]


def visible_text(html: str) -> str:
    """What a reader sees as prose: no code, scripts, styles or navigation; tags stripped."""
    main = re.search(r"<main[^>]*>(.*)</main>", html, flags=re.S)
    html = main.group(1) if main else html
    html = re.sub(r"<(pre|script|style|code|nav)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_chapter_n_is_the_page_cn():
    assert numbered_chapters() == [f"c{n}_{s.split('_', 1)[1]}" for n, s in enumerate(numbered_chapters(), 1)]


@book
def test_every_result_caption_is_chapter_numbered(smoke_book):
    bad = []
    for n, stem in enumerate(numbered_chapters(), start=1):
        html = (smoke_book.html / "book" / f"{stem}.html").read_text()
        h1 = re.search(r'<h1><span class="section-number">([^<]*)</span>', html)
        if not h1 or h1.group(1).strip() != f"{n}.":
            bad.append(f"{stem}: the title is not numbered {n}.")
        captions = [c.strip() for c in re.findall(r'<span class="caption-number">([^<]*)</span>', html)]
        assert captions, stem
        for c in captions:
            if not re.fullmatch(rf"({'|'.join(RESULT_TYPES)}|Fig\.|Table|Exercise|Listing) {n}\.\d+", c):
                bad.append(f"{stem}: caption {c!r} is not numbered {n}.k")
        for eq in re.findall(r'<span class="eqno">\(([^)]*)\)', html):
            if not re.fullmatch(rf"{n}\.\d+", eq):
                bad.append(f"{stem}: equation ({eq}) is not numbered ({n}.k)")
        # References to results anywhere on the page carry chapter numbers too.
        for ref in re.findall(r'<a class="reference internal"[^>]*>(?:<span[^>]*>)?\s*((?:%s) [\d.]+)'
                              % "|".join(RESULT_TYPES + ("Exercise", "Fig\\.")), html):
            if not re.fullmatch(r"\S+ \d+\.\d+", ref.strip()):
                bad.append(f"{stem}: a reference reads {ref!r}")
    assert bad == []


BARE = re.compile(r"\b(%s)s? (\d+)(?![.\d])" % "|".join(RESULT_TYPES))
CITED = re.compile(r"[A-Z][a-z]+(?:’s|'s)?\s*[\[(]\s*\d{4}\s*[\])]")  # "Maurer [ 2016 ]", "Hoeffding (1963)"


def bare_paper_references(text: str) -> list[str]:
    """"Theorem 1" without its source: the book's own results are numbered N.k, so a bare number is
    the paper's, and must say so ("Theorem 1 of Whiteley (2026)", "Whiteley's (2026) Theorem 1")."""
    out = []
    for m in BARE.finditer(text):
        around = text[max(0, m.start() - 40):m.end() + 40]
        if "Whiteley" not in around and not CITED.search(around):  # another work's, with its source
            out.append(text[max(0, m.start() - 60):m.end() + 30].strip())
    return out


def test_the_bare_reference_check_tells_the_papers_numbers_with_and_without_source():
    assert bare_paper_references("as in Theorem 1 of Whiteley (2026), and Theorem 5.3 here") == []
    assert bare_paper_references("Whiteley's (2026) Proposition 4 and Lemma 4.2") == []
    assert bare_paper_references("Theorem 1 term by term") == ["Theorem 1 term by term"]
    assert len(bare_paper_references("Theorems 1 and Proposition 4 hold")) == 2
    # Another work's result with its source is not the paper's.
    assert bare_paper_references("inequality ( Maurer [ 2016 ] , Corollary 1) gives") == []
    assert bare_paper_references("bound ( Hoeffding [ 1963 ] , Theorem 1, for variables") == []


@book
def test_no_bare_theorem_number_refers_to_the_paper(smoke_book):
    bad = {}
    for file, _ in [("book/intro", ""), *toc_pages(ROOT)]:
        page = smoke_book.html / f"{file}.html"
        found = bare_paper_references(visible_text(page.read_text()))
        if found:
            bad[file] = found
    assert bad == {}


@book
def test_every_result_exercise_and_figure_shows_its_label(smoke_book):
    missing, shown = [], 0
    label = r'<code class="infonce-label[^"]*"><span class="pre">([^<]+)</span></code>'
    for stem in numbered_chapters():
        html = (smoke_book.html / "book" / f"{stem}.html").read_text()
        blocks = re.findall(r'<div class="(?:proof (?:%s)|exercise) admonition" id="([^"]+)">\s*'
                            r'<p class="admonition-title">(.*?)</p>' % "|".join(t.lower() for t in RESULT_TYPES),
                            html, flags=re.S)
        blocks += re.findall(r'<figure[^>]* id="([^"]+)">(.*?)</figcaption>', html, flags=re.S)
        assert blocks, stem
        for ident, title in blocks:
            if re.findall(label, title) != [ident]:
                missing.append(f"{stem}: {ident}")
            shown += 1
        assert f"c{numbered_chapters().index(stem) + 1}-" in html
    assert missing == [] and shown > 20
    css = (smoke_book.html / "_static" / "infonce-book.css").read_text()
    assert "code.infonce-label" in css and "user-select: all" in css
    assert "_static/infonce-book.css" in (smoke_book.html / "book" / "c1_rate.html").read_text()


def rendered_code_cells(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"
            and not HIDDEN_TAGS & set(c.get("metadata", {}).get("tags", []))]


def plumbing_problems(nb, name: str) -> list[str]:
    out = []
    for i, source in enumerate(rendered_code_cells(nb)):
        lines = source.splitlines()
        glue_lines = [ln for ln in lines if "glue(" in ln]
        if len(glue_lines) > MAX_GLUE_LINES:
            out.append(f"{name}: a rendered code cell ({lines[0][:50]!r}...) shows {len(glue_lines)} glue( lines "
                       f"(at most {MAX_GLUE_LINES}: use infonce_book.experiment.style.glue_all, or tag the cell "
                       f"remove-input)")
        out += [f"{name}: line of {len(ln)} characters: {ln[:60]!r}..." for ln in lines if len(ln) > MAX_LINE]
    return out


def test_the_plumbing_check_counts_glue_lines_and_long_lines():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("glue('a', 1)\nglue('b', 2)\nglue('c', 3)\nglue('d', 4)"),
                nbformat.v4.new_code_cell("glue('a', 1)\n" * 5, metadata={"tags": ["remove-input"]}),
                nbformat.v4.new_code_cell("x = 1  # " + "y" * 80),
                nbformat.v4.new_code_cell("glue_all('c9_', summary)\nglue_figure('c9-fig', fig)")]
    problems = plumbing_problems(nb, "t")
    assert len(problems) == 2 and "shows 4 glue( lines" in problems[0] and "89 characters" in problems[1]


@book
def test_no_rendered_code_cell_shows_plumbing_or_long_lines(smoke_book):
    problems = []
    for stem in pipeline.executable_pages(ROOT):
        nb = nbformat.read(smoke_book.build / "notebooks" / f"{stem}.ipynb", as_version=4)
        problems += plumbing_problems(nb, stem)
    assert problems == []


@book
def test_the_intro_has_prerequisites_and_the_reading_path(smoke_book):
    html = (smoke_book.html / "book" / "intro.html").read_text()
    text = visible_text(html)
    for topic in ("McDiarmid", "Rademacher", "von Mises", "Bessel", "Laplace transforms", "control variates"):
        assert topic in text, topic
    assert "Shalev-Shwartz and Ben-David" in text and "chapter 26" in text
    svg = re.search(r'<svg class="infonce-reading-path".*?</svg>', html, flags=re.S)
    assert svg, "the reading-path diagram is not on the intro page"
    boxes = re.findall(r"<text[^>]*>(\d) [a-z]+</text>", svg.group(0))
    assert sorted(boxes) == [str(n) for n in range(1, len(numbered_chapters()) + 1)]
    assert svg.group(0).count("<line ") >= len(numbered_chapters()) - 2  # arrows between chapters
    rows = re.findall(r"<tr[^>]*>\s*<td[^>]*><p>(\d)</p></td>", html)
    assert rows == [str(n) for n in range(1, len(numbered_chapters()) + 1)]


@pytest.fixture(scope="module")
def students(smoke_students):
    """The student edition, built once per session (conftest's ``smoke_students``; the PDF test
    prints it too)."""
    return smoke_students


def solution_snippets(html_dir: Path) -> list[str]:
    """Distinctive plain-text runs (six words or more, no math) of every solution of the web
    edition: what must not be anywhere in the student edition."""
    out = []
    for page in sorted((html_dir / "book").glob("*.html")):
        html = page.read_text()
        for body in re.findall(r'<div class="solution[^"]*admonition" id="[^"]+">(.*?)</section>', html, flags=re.S):
            body = re.sub(r'<span class="math[^"]*">.*?</span>|<div class="math[^"]*">.*?</div>', "|", body, flags=re.S)
            text = unescape(re.sub(r"<[^>]+>", "|", body))
            for run in re.split(r"\s*\|\s*", re.sub(r"[ \t\n]+", " ", text)):
                if len(run.split()) >= 6 and not re.search(r"[\\$]", run):
                    out.append(run.strip())
    return out


@book
def test_the_student_edition_has_the_exercises_but_no_solution_text(smoke_book, students):
    web = smoke_book.html
    snippets = solution_snippets(web)
    assert len(snippets) >= len(pipeline.executable_pages(ROOT))  # the web edition has solutions to look for

    def corpus(html_dir):
        files = [p for p in html_dir.rglob("*") if p.is_file() and p.suffix in {".html", ".js", ".ipynb", ".md", ".txt"}]
        return re.sub(r"\s+", " ", "\n".join(unescape(p.read_text(errors="ignore")) for p in files))

    web_text, student_text = corpus(web), corpus(students)
    # The snippets are findable: the web edition has each one (pages, sources, search index).
    assert [s for s in snippets if s not in web_text] == []
    assert [s for s in snippets if s in student_text] == []
    for page in (students / "book").glob("c*_*.html"):
        html = page.read_text()
        assert 'class="solution' not in html, page.name
        assert html.count('class="exercise admonition"') == (web / "book" / page.name).read_text().count(
            'class="exercise admonition"'), page.name
    # What a student downloads has no solutions either: the executed notebook and the .md source.
    for stem in numbered_chapters():
        nb_text = (students / "_sources" / "book" / f"{stem}.ipynb").read_text()
        assert "{solution" not in nb_text and "{solution" in (web / "_sources" / "book" / f"{stem}.ipynb").read_text()
    assert "Student edition" in (students / "book" / "c1_rate.html").read_text()
