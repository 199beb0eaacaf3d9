"""Links to solutions: complete from any page, never dangling in the student edition, not citable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infonce_book.pipeline.editions import (
    DanglingSolutionLink,
    solution_links,
    strip_solutions_site,
    strip_solutions_text,
)

ROOT = Path(__file__).resolve().parents[2]

CHAPTER = """# A chapter

```{exercise} A question
:label: c9-ex-a

Why?
```

```{solution} c9-ex-a
:label: c9-sol-a
:class: dropdown

Because.
```
"""


def _site(tmp_path: Path, other_page: str) -> Path:
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "c9.md").write_text(CHAPTER, encoding="utf-8")
    (tmp_path / "book" / "other.md").write_text(other_page, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("link", ["{ref}`c9-sol-a`", "{ref}`the answer <c9-sol-a>`", "[the answer](#c9-sol-a)",
                                  "<project:#c9-sol-a>", "{numref}`c9-sol-a`"])
def test_the_student_edition_refuses_a_link_to_a_removed_solution(tmp_path, link):
    site = _site(tmp_path, f"# Other\n\nSee {link}.\n")
    with pytest.raises(DanglingSolutionLink, match=r"book/other\.md links to c9-sol-a: link to the exercise"):
        strip_solutions_site(site)


def test_a_link_to_the_exercise_is_kept(tmp_path):
    site = _site(tmp_path, "# Other\n\nSee {ref}`c9-ex-a` (label `c9-sol-a` is only mentioned).\n")
    assert strip_solutions_site(site) == 1
    assert "Because" not in (site / "book" / "c9.md").read_text(encoding="utf-8")
    assert solution_links("{ref}`c9-ex-a`", ["c9-sol-a"]) == []


def test_the_book_links_to_no_solution_from_a_page_the_student_edition_keeps():
    """The book's own pages, as the student edition sees them (solutions of every page removed)."""
    labels = re.findall(r"^[ \t]*:label:[ \t]*(\S*-sol-\S+)", "\n".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "book").glob("*.md")), re.M)
    assert labels, "the book's solutions carry labels (c<N>-sol-...)"
    for page in sorted((ROOT / "book").glob("*.md")):
        text, _ = strip_solutions_text(page.read_text(encoding="utf-8"))
        assert solution_links(text, labels) == [], page.name


def test_a_solution_link_from_another_page_reads_in_full(tmp_path):
    """sphinx-exercise alone renders a cross-page {ref} to a solution as just "Solution to"."""
    application = pytest.importorskip("sphinx.application")  # the docs tool chain (installed with the book)
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["sphinx_exercise", "infonce_book.pipeline.sphinx_ext"]\n'
                                 'numfig = True\nhtml_theme = "basic"\n', encoding="utf-8")
    (src / "index.rst").write_text("Book\n====\n\n.. toctree::\n   :numbered:\n\n   one\n   two\n", encoding="utf-8")
    (src / "one.rst").write_text("One\n===\n\n.. exercise:: A question\n   :label: one-ex-a\n\n   Why?\n\n"
                                 ".. solution:: one-ex-a\n   :label: one-sol-a\n\n   Because. Here: :ref:`one-sol-a`.\n",
                                 encoding="utf-8")
    (src / "two.rst").write_text("Two\n===\n\nThere: :ref:`one-sol-a`; mine: :ref:`the answer <one-sol-a>`.\n",
                                 encoding="utf-8")
    app = application.Sphinx(str(src), str(src), str(tmp_path / "html"), str(tmp_path / "doctrees"), "html",
                             status=None, warning=None, warningiserror=True, freshenv=True)
    app.build()
    two = (tmp_path / "html" / "two.html").read_text(encoding="utf-8")
    one = (tmp_path / "html" / "one.html").read_text(encoding="utf-8")
    link = re.compile(r'<a class="reference internal" href="[^"]*#one-sol-a"><span[^>]*>(.*?)</span></a>')
    assert link.findall(one) == ["Solution to Exercise 1.1 (A question)"]
    assert link.findall(two) == ["Solution to Exercise 1.1 (A question)", "the answer"]


def test_the_how_to_cite_page_lists_no_solution_as_citable():
    text = (ROOT / "book" / "cite.md").read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table and not [line for line in table if "sol" in line.split("|")[1]], table
    assert "-sol-" not in text
