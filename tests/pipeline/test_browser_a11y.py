"""Every page of the rendered book for every reader: axe-core, the Tab order, a phone's width
(issue 34, items 4 and 8). Shares the browser and the local server of tests/pipeline/test_browser.py.

* axe-core 4.14 (vendored in tests/pipeline/vendor/, no network) finds no serious or critical
  violation on any page in light mode, and no contrast violation in dark mode (text and links at
  least 4.5:1, the large text 3:1, as WCAG 2 AA);
* formulas are not Tab stops (MathJax's menu setting ``inTabOrder: false``);
* at 390 px no page is wider than the screen (nothing scrolls sideways but the formulas, tables and
  code blocks that scroll within the text column);
* every page has a favicon and a meta description.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from . import test_browser as _browser
from .test_browser import WAIT_FOR_MATHJAX

chromium, served = _browser.chromium, _browser.served  # the fixtures, shared with test_browser.py

pytestmark = [pytest.mark.book, pytest.mark.browser]

AXE = Path(__file__).with_name("vendor") / "axe.min.js"

RUN_AXE = """async (rules) => {
  const options = {resultTypes: ['violations']};
  if (rules) options.runOnly = {type: 'rule', values: rules};
  const r = await axe.run(document, options);
  return r.violations.filter(v => ['serious', 'critical'].includes(v.impact)).map(v =>
    `${v.id} (${v.impact}, ${v.nodes.length}x): ${v.help} -- ` +
    v.nodes.slice(0, 3)
      .map(n => n.target.join(' ') + (n.any[0] ? ' [' + n.any[0].message.slice(0, 90) + ']' : ''))
      .join('; '));
}"""

#: Formulas that are Tab stops, but for those that scroll sideways (a keyboard must reach them).
FORMULA_TAB_STOPS = """() => Array.from(document.querySelectorAll('mjx-container, mjx-container *'))
    .filter(e => e.tabIndex >= 0 && e.getAttribute('tabindex') !== null && !e.matches('.infonce-scrolls')).length"""


def _pages(html: Path) -> list[str]:
    return sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                  if not p.relative_to(html).parts[0].startswith("_")
                  and 'http-equiv="Refresh"' not in p.read_text(encoding="utf-8")[:300])


@pytest.fixture(scope="module")
def sweep(chromium, served):
    """Each page in light mode at 1366 px (axe, Tab stops), dark mode (axe's contrast rule) and at
    390 px (the page's width)."""
    base, html = served
    out = {}
    for scheme, width in (("light", 1366), ("dark", 1366), ("light", 390)):
        context = chromium.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        for rel in _pages(html):
            page = context.new_page()
            page.goto(base + rel, wait_until="load")
            page.evaluate(WAIT_FOR_MATHJAX)
            page.wait_for_timeout(300)
            data = out.setdefault(rel, {})
            if width == 390:
                data["width_390"] = page.evaluate("document.documentElement.scrollWidth")
            else:
                page.add_script_tag(path=str(AXE))
                data[f"axe_{scheme}"] = page.evaluate(RUN_AXE, None if scheme == "light" else ["color-contrast"])
                if scheme == "light":
                    data["formula_tab_stops"] = page.evaluate(FORMULA_TAB_STOPS)
                    data["formulas"] = page.evaluate("document.querySelectorAll('mjx-container').length")
            page.close()
        context.close()
    return out


def test_no_serious_or_critical_accessibility_violation_in_light_mode(sweep):
    assert len(sweep) >= 10
    assert {p: d["axe_light"] for p, d in sweep.items() if d["axe_light"]} == {}


def test_text_and_links_have_enough_contrast_in_dark_mode(sweep):
    assert {p: d["axe_dark"] for p, d in sweep.items() if d["axe_dark"]} == {}


def test_formulas_are_not_tab_stops(sweep):
    assert sweep["book/c1_rate.html"]["formulas"] > 100
    assert {p: d["formula_tab_stops"] for p, d in sweep.items() if d["formula_tab_stops"]} == {}


def test_no_page_is_wider_than_a_phone(sweep):
    assert {p: d["width_390"] for p, d in sweep.items() if d["width_390"] > 390} == {}


def test_every_page_has_a_favicon_and_a_description(served):
    _, html = served
    missing = {}
    for rel in _pages(html):
        text = (html / rel).read_text(encoding="utf-8")
        icon = re.search(r'<link rel="icon" href="([^"]+)"', text)
        if icon is None or not (html / rel).parent.joinpath(icon.group(1)).resolve().is_file():
            missing[rel] = "favicon"
        elif rel.startswith("book/") and not re.search(r'<meta name="description" content="[^"]{40,}"', text):
            missing[rel] = "description"
    assert missing == {}
