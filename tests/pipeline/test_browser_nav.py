"""The theme's header buttons, tapped in a real browser at a phone's, a tablet's and a laptop's width,
in light and dark mode (issue 34, item 1; the shim is pipeline/static/infonce-theme.js).

* At 390 and 800 px the visible ☰ button opens the book's contents (the sidebar, as a dialog) and
  the contents button opens the page's sections; Escape closes each.
* At 1366 px the sidebar is on the page, and ☰ hides it and shows it again.
* The ".pdf" entry of the download menu no longer prints the page: it opens the chapter's PDF where
  one was made, and is absent otherwise (the smoke build has no PDFs).
"""

from __future__ import annotations

import pytest

from . import test_browser as _browser
from .test_browser import SCREENSHOTS, WAIT_FOR_MATHJAX

chromium, served = _browser.chromium, _browser.served  # the fixtures, shared with test_browser.py

pytestmark = [pytest.mark.book, pytest.mark.browser]

PAGE = "book/c1_rate.html"
PRIMARY = ".bd-header-article .primary-toggle"
SECONDARY = ".bd-header-article .secondary-toggle"


def _open(chromium, url: str, width: int, scheme: str):
    context = chromium.new_context(viewport={"width": width, "height": 844 if width < 500 else 900},
                                   color_scheme=scheme)
    page = context.new_page()
    page.goto(url, wait_until="load")
    assert page.evaluate(WAIT_FOR_MATHJAX) == "typeset"
    return context, page


def _dialog_links(page, dialog: str) -> int:
    """How many links of the open dialog a reader can see (0 when it is closed)."""
    return page.evaluate("""(sel) => { const d = document.querySelector(sel);
        if (!d || !d.open) return 0;
        return Array.from(d.querySelectorAll('a[href]')).filter(a => {
          const r = a.getBoundingClientRect();
          return r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < innerHeight;
        }).length; }""", dialog)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 800])
def test_menu_and_contents_buttons_open_on_phones_and_tablets(chromium, served, width, scheme):
    base, _ = served
    context, page = _open(chromium, base + PAGE, width, scheme)
    try:
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
        assert page.locator(PRIMARY).is_visible() and page.locator(SECONDARY).is_visible()
        assert _dialog_links(page, "#pst-primary-sidebar-modal") == 0
        page.locator(PRIMARY).click()
        page.wait_for_timeout(400)
        assert _dialog_links(page, "#pst-primary-sidebar-modal") >= 6  # the chapters, at least
        if width == 390 and scheme == "light":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "c1_rate_390px_menu.png"))
        page.keyboard.press("Escape")
        page.wait_for_timeout(200)
        assert _dialog_links(page, "#pst-primary-sidebar-modal") == 0
        page.locator(SECONDARY).click()
        page.wait_for_timeout(400)
        assert _dialog_links(page, "#pst-secondary-sidebar-modal") >= 3  # the page's sections
        page.keyboard.press("Escape")
        page.wait_for_timeout(200)
        assert _dialog_links(page, "#pst-secondary-sidebar-modal") == 0
    finally:
        context.close()


SIDEBAR_SHOWN = """() => { const s = document.querySelector('#pst-primary-sidebar');
    const r = s.getBoundingClientRect();
    return getComputedStyle(s).visibility !== 'hidden' && r.right > 0 && r.width > 50; }"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_menu_button_toggles_the_sidebar_on_a_laptop(chromium, served, scheme):
    base, _ = served
    context, page = _open(chromium, base + PAGE, 1366, scheme)
    try:
        assert page.locator(PRIMARY).is_visible()
        assert page.evaluate(SIDEBAR_SHOWN)
        page.locator(PRIMARY).click()
        page.wait_for_timeout(600)
        assert not page.evaluate(SIDEBAR_SHOWN)
        assert _dialog_links(page, "#pst-primary-sidebar-modal") == 0  # hidden, not a dialog
        page.locator(PRIMARY).click()
        page.wait_for_timeout(600)
        assert page.evaluate(SIDEBAR_SHOWN)
        if page.locator(SECONDARY).is_visible():  # where the theme shows it, it must work too
            page.locator(SECONDARY).click()
            page.wait_for_timeout(400)
            assert _dialog_links(page, "#pst-secondary-sidebar-modal") >= 3
    finally:
        context.close()


def test_the_pdf_button_gives_the_chapters_pdf_or_is_absent(chromium, served):
    base, html = served
    context, page = _open(chromium, base + PAGE, 1366, "light")
    try:
        has_pdf = (html / "pdf" / "c1_rate.pdf").is_file()
        buttons = page.locator(".btn-download-pdf-button")
        if not has_pdf:
            assert buttons.count() == 0
        else:
            assert buttons.count() == 1
            assert page.evaluate("document.querySelector('.btn-download-pdf-button').onclick.toString()").find(
                "print") < 0
            with page.expect_request(lambda r: r.url.endswith("pdf/c1_rate.pdf")):
                page.locator(".dropdown-download-buttons button").first.click()
                buttons.first.click()
    finally:
        context.close()
