"""A chapter page on a slow connection (issue 34, item 6), in a real browser.

Chromium's network emulation (DevTools ``Network.emulateNetworkConditions``: 400 KB/s each way,
150 ms latency, no cache) loads Chapter 1 (the page with the most formulas) from the local server:

* what the page transfers before its math is typeset is at most 2 MB (uncompressed: the local
  server does not compress), in at most 50 requests; no request for the theme's full icon font or
  fontawesome.js, and no search index outside the search page;
* the time by which MathJax's scripts have arrived and the time to typeset every formula are
  printed, not asserted: the issue asks for the math within 6 s, but on a shared test machine the
  typesetting itself (Chapter 1 has about 700 formulas) takes seconds of CPU that depend on the
  machine's load (measured: scripts in by 5.3-6.3 s and math at 8-12 s with a load average of 20 on
  2 cores; 30 s before the page was made lighter, same machine and load).
"""

from __future__ import annotations

import pytest

from . import test_browser as _browser

chromium, served = _browser.chromium, _browser.served  # the fixtures, shared with test_browser.py

pytestmark = [pytest.mark.book, pytest.mark.browser]

KB = 1024
#: Recorded in the page: when MathJax had typeset every formula.
TIMES = """(() => { const t = setInterval(() => {
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return;
  clearInterval(t);
  MathJax.startup.promise.then(() => { window.__infonceTypeset = performance.now(); });
}, 5); })();"""
#: When the last of MathJax's scripts had arrived.
MATHJAX_LOADED = """Math.max(...performance.getEntriesByType('resource')
    .filter(e => e.name.includes('/_static/mathjax/') && e.name.split('?')[0].endsWith('.js'))
    .map(e => e.responseEnd))"""


def test_a_chapter_page_is_light_and_its_math_arrives_fast_on_a_slow_connection(chromium, served):
    base, _ = served
    context = chromium.new_context(viewport={"width": 1366, "height": 900})
    context.add_init_script(TIMES)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 150,
                                                  "downloadThroughput": 400 * KB, "uploadThroughput": 400 * KB})
    urls, sizes = {}, {}
    cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    try:
        page.goto(base + "book/c1_rate.html", wait_until="load", timeout=120_000)
        page.wait_for_function("window.__infonceTypeset !== undefined", timeout=120_000)
        ready = page.evaluate(MATHJAX_LOADED) / 1000
        typeset = page.evaluate("window.__infonceTypeset") / 1000
        total, requests = sum(sizes.values()), len(sizes)
        names = [urls.get(r, "") for r in sizes]
        print(f"\nChapter 1 at 400 KB/s, 150 ms: {total / KB:.0f} KB in {requests} requests before the math "
              f"was typeset; MathJax's scripts in by {ready:.1f} s, math typeset at {typeset:.1f} s")
        assert total <= 2 * KB * KB, sorted(((s, urls.get(r, "")) for r, s in sizes.items()), reverse=True)[:8]
        assert requests <= 50
        assert not [u for u in names if "fontawesome.js" in u or "fa-solid-900" in u or "searchindex.js" in u]
    finally:
        context.close()
