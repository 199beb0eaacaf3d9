"""Titles with math as plain text (the <title>, the search index): the converter and the HTML rewrite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infonce_book.pipeline.sphinx_ext import plain_title_html
from infonce_book.pipeline.tex_text import tex_to_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tex, text", [
    (r"O(1/k)", "O(1/k)"), (r"\chi^2", "χ²"), (r"c_1", "c₁"), (r"\pi M \ne \pi", "π M ≠ π"),
    (r"p_{\mathrm{eff}}/n", "p_eff/n"), (r"2\bar R", "2R̄"), (r"\mathbb{E}_x[\log k]", "𝔼ₓ[log k]"),
    (r"\frac{1}{k}", "1/k"), (r"\operatorname{KL}(\varrho\|\varpi)", "KL(ϱ‖ϖ)"), (r"\omega_k", "ωₖ"),
    (r"k \to \infty", "k → ∞"), (r"\sqrt{n}", "√n"), (r"e^{2\beta}", "e^(2β)"),
])
def test_tex_to_text(tex, text):
    assert tex_to_text(tex) == text


def _title_math() -> list[str]:
    """The inline math of every heading and every directive title of the book's pages."""
    found = []
    for page in sorted((ROOT / "book").glob("*.md")):
        for line in page.read_text(encoding="utf-8").splitlines():
            if re.match(r"^(#{1,6} |[`:]{3,}\{[\w:-]+\} )", line):
                found += re.findall(r"\$([^$]+)\$", line)
    return found


def test_every_title_of_the_book_becomes_plain_text():
    maths = _title_math()
    assert len(maths) >= 5
    bad = {m: tex_to_text(m) for m in maths if re.search(r"[\\{}]", tex_to_text(m))}
    assert bad == {}


def test_plain_title_html_replaces_the_math_spans_only():
    html = ('<span class="section-number">1. </span>The limit and its '
            '<span class="math notranslate nohighlight">\\(O(1/k)\\)</span> rate &amp; '
            '<span class="math notranslate nohighlight">\\(a &lt; b\\)</span>')
    assert plain_title_html(html) == ('<span class="section-number">1. </span>The limit and its O(1/k) rate '
                                      '&amp; a &lt; b')
    assert plain_title_html("No math") == "No math"
