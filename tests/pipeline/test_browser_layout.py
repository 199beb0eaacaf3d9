"""The rendered book on a phone, on a wide screen, and its search page, in a real browser.

Shares the browser and the local server of tests/pipeline/test_browser.py (the session's smoke
build). What a reader would notice:

* at 420 px (a phone) no formula, theorem or proof of a chapter is cut: every box lies inside the
  boxes around it, or inside a formula or table that scrolls sideways (MathJax 3 does not break
  long formulas); a screenshot of Theorem 1.3 is saved under ``_build/screenshots/``;
* at 1300 px the notation table fits the text column (its long code names wrap);
* the search page: the results' titles and summaries, the browser tab's titles and the sidebar
  show no raw TeX (``\\(O(1/k)\\)``); the sidebar's formulas are typeset.
"""

from __future__ import annotations

import re

import pytest

from . import test_browser as _browser
from .test_browser import SCREENSHOTS, WAIT_FOR_MATHJAX

chromium, served = _browser.chromium, _browser.served  # the fixtures, shared with test_browser.py

pytestmark = [pytest.mark.book, pytest.mark.browser]

#: Boxes that may hold wider content because they scroll sideways.
SCROLLERS = "mjx-container, table, div.math, pre, div.highlight, div.cell_output, div.output"

CLIPPED = r"""(scrollers) => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  const items = document.querySelectorAll(
      ['mjx-container', 'div.math', 'div.proof', 'div.theorem', 'table'].map(s => `article.bd-article ${s}`)
      .join(', '));  // the page's text (the off-canvas sidebars of a phone are not shown)
  for (const el of items) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    let clip = null, scrolls = false;
    for (let a = el.parentElement; a; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === 'visible') continue;
      if ((ox === 'auto' || ox === 'scroll') && a.matches(scrollers)) { scrolls = true; break; }  // reachable: it scrolls
      const ar = a.getBoundingClientRect();
      if (r.left < ar.left - 1 || r.right > ar.right + 1) { clip = a; break; }
    }
    // Past the viewport's edge and in no scrolling box: cut (inside a scrolling table it is a swipe away).
    if (!clip && !scrolls && (r.right > vw + 1 || r.left < -1)) clip = document.documentElement;
    if (clip) out.push(`${el.tagName.toLowerCase()}.${el.className} [${Math.round(r.left)}, ${Math.round(r.right)}]`
                       + ` cut by ${clip.tagName.toLowerCase()}.${clip.className}: `
                       + el.textContent.trim().slice(0, 60));
  }
  return out;
}"""


def _open(chromium, url: str, width: int):
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(url, wait_until="load")
    assert page.evaluate(WAIT_FOR_MATHJAX) == "typeset"
    page.wait_for_timeout(300)  # the layout script marks wide inline formulas after typesetting
    return context, page


def test_no_math_block_is_clipped_on_a_phone(chromium, served):
    base, html = served
    context, page = _open(chromium, base + "book/c1_rate.html", 420)
    try:
        theorem = page.locator("div.proof.theorem", has=page.locator("code.infonce-label", has_text="c1-thm-rate"))
        assert theorem.count() == 1
        theorem.scroll_into_view_if_needed()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        theorem.screenshot(path=str(SCREENSHOTS / "c1_rate_theorem_420px.png"))
        assert page.locator("main mjx-container[display='true']").count() >= 10
        assert page.evaluate(CLIPPED, SCROLLERS) == []
        # Every formula of the theorem can be read whole: it fits its line, or it scrolls sideways.
        cut = theorem.locator("mjx-container").evaluate_all("""els => els.filter(e => {
            const box = e.parentElement.closest('li, p, dd, div');
            return e.scrollWidth > box.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
          }).map(e => e.textContent.slice(0, 60))""")
        assert cut == []
    finally:
        context.close()
    for stem in ("c2_search", "c4_continuity", "c5_generalisation"):
        context, page = _open(chromium, base + f"book/{stem}.html", 420)
        try:
            assert page.evaluate(CLIPPED, SCROLLERS) == [], stem
        finally:
            context.close()


def test_the_notation_table_fits_the_text_column_at_1300_px(chromium, served):
    base, _ = served
    context, page = _open(chromium, base + "book/notation.html", 1300)
    try:
        tables = page.locator("main table").evaluate_all(
            "els => els.map(e => [e.scrollWidth, e.clientWidth, e.textContent.trim().slice(0, 40)])")
        assert tables
        assert [t for t in tables if t[0] > t[1] + 1] == []
        assert page.evaluate(CLIPPED, SCROLLERS) == []
    finally:
        context.close()


RAW_TEX = re.compile(r"\\\(|\\\)|\\[A-Za-z]+|\$")


def test_titles_and_search_results_have_no_raw_tex(chromium, served):
    base, html = served
    for page_file in sorted((html / "book").glob("*.html")):
        title = re.search(r"<title>(.*?)</title>", page_file.read_text(encoding="utf-8"), re.S).group(1)
        assert not RAW_TEX.search(title), (page_file.name, title)
    context = chromium.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    try:
        page.goto(base + "search.html?q=rate", wait_until="load")
        page.wait_for_selector("#search-results ul.search li", timeout=30000)
        page.wait_for_function("document.querySelectorAll('#search-results p.context').length > 0", timeout=30000)
        page.wait_for_timeout(1000)  # the summaries arrive one by one
        links = page.locator("#search-results ul.search li > a").all_inner_texts()
        assert any("O(1/k)" in t for t in links), links[:10]
        assert [t for t in links if RAW_TEX.search(t)] == []
        summaries = page.locator("#search-results p.context").all_inner_texts()
        assert summaries and [s for s in summaries if RAW_TEX.search(s)] == []
        assert page.evaluate(WAIT_FOR_MATHJAX) == "typeset"
        sidebar = page.locator("nav.bd-links")
        assert sidebar.locator("mjx-container").count() >= 1  # "O(1/k)" of Chapter 1, typeset
        visible = sidebar.evaluate("""n => { const c = n.cloneNode(true);
            c.querySelectorAll('mjx-container, mjx-assistive-mml').forEach(m => m.remove()); return c.textContent; }""")
        assert not RAW_TEX.search(visible), visible[:300]
        assert not RAW_TEX.search(page.title())
    finally:
        context.close()


# (left and right only as TeX's delimiters, "left(": the words are English too)
TEX_NAMES = re.compile(r"\b(mathbb|mathcal|mathrm|mathbf|operatorname|frac|sqrt)\b|\b(left|right)\s*[(\[|\\]")
CODE = re.compile(r"\b[A-Z_]{3,} = |^\s*(import|from|def) ", re.M)  # lines of code cells


@pytest.mark.parametrize("query", ["temperature", "negatives", "bound"])
def test_search_summaries_have_no_tex_names_or_code_and_titles_rank_first(chromium, served, query):
    """Sphinx cuts each result's summary from the found page's text: formulas turned into text
    ("𝔼", not "mathbb E"), displayed formulas and code left out; a page whose title holds the query
    comes before pages that only have a section on it ("temperature": Chapter 3, after at most the
    glossary's definition)."""
    base, _ = served
    context = chromium.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    try:
        page.goto(base + f"search.html?q={query}", wait_until="load")
        page.wait_for_selector("#search-results ul.search li", timeout=60000)
        page.wait_for_function("document.querySelectorAll('#search-results p.context').length > 2", timeout=60000)
        page.wait_for_timeout(1500)  # the summaries arrive one by one
        summaries = page.locator("#search-results p.context").all_inner_texts()
        assert [s for s in summaries if TEX_NAMES.search(s) or CODE.search(s) or RAW_TEX.search(s)] == []
        if query == "temperature":  # Chapter 3 is the first chapter found (the glossary's term may lead)
            hrefs = [a.get_attribute("href") for a in page.locator("#search-results ul.search li > a").all()]
            chapters = [h for h in hrefs if re.search(r"book/c\d_", h)]
            assert chapters[0].startswith("book/c3_temperature.html"), hrefs[:5]
            assert hrefs.index(chapters[0]) <= 1, hrefs[:5]
    finally:
        context.close()


def test_hovering_a_reference_previews_its_target(chromium, served):
    """sphinx-tippy's previews (tippy.js vendored; the page may reach nothing but the local server):
    hovering a reference to a result of another chapter, a figure or an equation shows a preview."""
    base, _ = served
    context = chromium.new_context(viewport={"width": 1300, "height": 900})
    context.route("**/*", lambda r: r.continue_() if "127.0.0.1" in r.request.url else r.abort())
    targets = {"book/c2_search.html": {"result": "[href='c1_rate.html#c1-lem-identity']",
                                       "equation": "[href^='#equation-']"},
               "book/c1_rate.html": {"figure": "[href='#c1-fig-idea']"}}
    try:
        for rel, links in targets.items():
            page = context.new_page()
            page.goto(base + rel, wait_until="load")
            assert page.evaluate(WAIT_FOR_MATHJAX) == "typeset"
            page.wait_for_timeout(500)
            for kind, selector in links.items():
                link = page.locator(f"article.bd-article a.reference.internal{selector}").first
                assert link.count() == 1, kind
                link.scroll_into_view_if_needed()
                link.hover()
                box = page.locator(".tippy-box").last
                box.wait_for(state="visible", timeout=5000)
                assert len(box.inner_text().strip()) > 10, kind
                page.mouse.move(5, 5)
                page.wait_for_timeout(400)
            page.close()
    finally:
        context.close()
