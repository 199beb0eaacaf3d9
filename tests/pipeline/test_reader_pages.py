"""The rendered chapter pages show readers tables, not data-frame printouts (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infonce_book.experiment.toc import toc_pages
from infonce_book.testing.reader_pages import page_problems

ROOT = Path(__file__).resolve().parents[2]
book = pytest.mark.book  # reads the session's smoke build


@book
def test_no_chapter_page_shows_column_names_index_columns_nan_or_cut_tables(smoke_book):
    stems = [Path(f).name for f, caption in toc_pages(ROOT) if Path(f).name[:1] == "c" and Path(f).name[1:2].isdigit()]
    assert len(stems) >= 6
    problems = {}
    for stem in stems:
        html = (smoke_book.html / "book" / f"{stem}.html").read_text()
        assert "exact check" in html or "two-sided interval" in html, stem  # the test beside each verdict
        found = page_problems(html)
        if found:
            problems[stem] = found
    assert problems == {}
