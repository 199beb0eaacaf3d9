"""The rendered book in a real browser: Debian's chromium driven by Playwright.

Serves the smoke build (the session's ``smoke_book``, shared with tests/pipeline/test_pipeline.py) over a
local HTTP server, opens every page and checks what a reader would notice: console errors, failed
or external requests (the book must work offline: MathJax is vendored), formulas that MathJax did
not typeset or typeset with an error (display math inside theorem and proof directives included,
sphinx-proof #91), raw TeX left in the text, images that did not load, and internal links whose
target file or anchor does not exist. Saves two screenshots under ``_build/screenshots/``.

Skipped, saying why, when Playwright or a chromium executable is missing (``make browser-deps``
installs Debian's chromium; ``INFONCE_BOOK_CHROMIUM`` names another executable).
"""

from __future__ import annotations

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from infonce_book.pipeline import run as pipeline

from .support import CHROMIUM_CANDIDATES, find_chromium

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "_build" / "screenshots"
CANDIDATES = CHROMIUM_CANDIDATES
pytestmark = [pytest.mark.book, pytest.mark.browser]  # reads the session's smoke build

class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log in the test output
        pass


@pytest.fixture(scope="module")
def chromium():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (pip install -e '.[test]')")
    exe = find_chromium()
    if exe is None:
        pytest.skip("no chromium executable found (looked for INFONCE_BOOK_CHROMIUM, "
                    + ", ".join(CANDIDATES) + "): run `make browser-deps` (apt-get install -y chromium)")
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=exe)
        except Exception as err:  # chromium present but unusable: a real failure, said clearly
            pytest.fail(f"chromium at {exe} did not start under Playwright: {err}")
        yield browser
        browser.close()


#: The book is served as GitHub Pages serves a project site: under a sub-folder, so that a link to
#: the server's root ("/_static/...") is caught as broken.
SUBFOLDER = "infonce-book"


@pytest.fixture(scope="module")
def served(smoke_book, tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    (root / SUBFOLDER).symlink_to(smoke_book.html, target_is_directory=True)
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{SUBFOLDER}/", smoke_book.html
    server.shutdown()
    server.server_close()


WAIT_FOR_MATHJAX = """async () => {
  const t0 = Date.now();
  if (!window.MathJax) return 'absent';
  while (!(MathJax.startup && MathJax.startup.promise) && Date.now() - t0 < 30000)
    await new Promise(r => setTimeout(r, 50));
  if (!(MathJax.startup && MathJax.startup.promise)) return 'did not start';
  await MathJax.startup.promise;
  await document.fonts.ready;
  return 'typeset';
}"""

COLLECT = r"""async () => {
  const out = {};
  const maths = Array.from(document.querySelectorAll('.math'));
  out.math = maths.length;
  out.unrendered = maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.trim().slice(0, 120));
  out.merror = Array.from(document.querySelectorAll('mjx-merror'))
      .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 120));
  out.mjx = document.querySelectorAll('mjx-container').length;
  const proofDisplay = Array.from(document.querySelectorAll('div.proof div.math, div.theorem div.math'));
  out.proofDisplay = proofDisplay.length;
  out.proofDisplayTypeset = proofDisplay.filter(m => m.querySelector('mjx-container[display="true"]')).length;
  const raw = [];
  const main = document.querySelector('main') || document.body;
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight';
  const tex = /\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|(^|[^\\])\$[^$\s][^$]*\$/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement && n.parentElement.closest(skip)) continue;
    if (tex.test(n.textContent)) raw.push(n.textContent.trim().slice(0, 120));
  }
  out.rawTex = raw;
  const imgs = Array.from(document.images);
  for (const i of imgs) {
    i.loading = 'eager';
    if (!i.complete) await new Promise(r => { i.addEventListener('load', r, {once: true});
                                            i.addEventListener('error', r, {once: true}); setTimeout(r, 10000); });
  }
  out.images = imgs.length;
  out.brokenImages = imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src'));
  out.links = Array.from(document.querySelectorAll('a[href]'))  // an SVG link's href is an object
      .map(a => typeof a.href === 'string' ? a.href : new URL(a.href.baseVal, document.baseURI).href);
  return out;
}"""


@pytest.fixture(scope="module")
def crawl(chromium, served):
    """Visit every page once; what each page showed, by path relative to the html folder."""
    base, html = served
    pages = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                   if not p.relative_to(html).parts[0].startswith("_"))
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    external: list[str] = []

    def route(r):
        if urlsplit(r.request.url).hostname == "127.0.0.1":
            r.continue_()
        else:  # the book must not need the network; record and refuse
            external.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    results = {}
    for rel in pages:
        if "http-equiv=\"Refresh\"" in (html / rel).read_text()[:300]:
            target = re.search(r'url=([^"]+)"', (html / rel).read_text()).group(1)
            results[rel] = {"redirect": target, "links": [base + target]}
            continue
        page = context.new_page()
        errors, bad_responses = [], []
        page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc, e=errors: e.append(f"uncaught: {exc}"))
        page.on("response", lambda r, b=bad_responses: b.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.on("requestfailed", lambda r, b=bad_responses:
                b.append(f"failed {r.url}") if urlsplit(r.url).hostname == "127.0.0.1" else None)
        page.goto(base + rel, wait_until="load")
        mathjax = page.evaluate(WAIT_FOR_MATHJAX)
        data = page.evaluate(COLLECT)
        data.update(mathjax=mathjax, console_errors=errors, bad_responses=bad_responses)
        if rel == "book/c1_rate.html":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "c1_rate.png"))
            theorem = page.locator("div.proof.theorem").first
            if theorem.count():
                theorem.scroll_into_view_if_needed()
                page.screenshot(path=str(SCREENSHOTS / "c1_rate_theorem.png"))
        if rel == "book/appendix_reproducibility.html":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "appendix_reproducibility.png"), full_page=False)
        page.close()
        results[rel] = data
    context.close()
    return {"pages": results, "external": external, "base": base, "html": html}


def _problems(crawl, key):
    return {p: d[key] for p, d in crawl["pages"].items() if d.get(key)}


def test_every_page_loads_without_console_errors_or_failed_requests(crawl):
    assert len(crawl["pages"]) >= 8
    assert _problems(crawl, "console_errors") == {}
    assert _problems(crawl, "bad_responses") == {}
    assert crawl["external"] == [], "the book requested resources from the network (it must work offline)"


def test_mathjax_typesets_every_formula_without_errors(crawl):
    pages = crawl["pages"]
    assert _problems(crawl, "unrendered") == {}
    assert _problems(crawl, "merror") == {}
    assert _problems(crawl, "rawTex") == {}
    for stem in pipeline.executable_pages(ROOT):
        data = pages[f"book/{stem}.html"]
        assert data["mathjax"] == "typeset" and data["mjx"] > 0, (stem, data["mathjax"], data["mjx"])
    for rel, data in pages.items():
        if data.get("math"):
            assert data["mathjax"] == "typeset", (rel, data["mathjax"])
    # Display math inside theorem and proof directives (sphinx-proof #91): present and typeset.
    assert sum(d.get("proofDisplay", 0) for d in pages.values()) > 0
    assert {p: (d["proofDisplay"], d["proofDisplayTypeset"]) for p, d in pages.items()
            if d.get("proofDisplay") != d.get("proofDisplayTypeset")} == {}


def test_every_image_loads(crawl):
    assert crawl["pages"]["book/c1_rate.html"]["images"] >= 5
    assert _problems(crawl, "brokenImages") == {}


def _ids(path: Path, cache={}) -> set[str]:
    if path not in cache:
        text = path.read_text(errors="ignore")
        cache[path] = set(re.findall(r'\bid="([^"]+)"', text)) | set(re.findall(r'\bname="([^"]+)"', text))
    return cache[path]


def test_no_internal_link_is_broken(crawl):
    base, html = crawl["base"], crawl["html"]
    host = urlsplit(base).netloc
    broken, checked = [], 0
    for rel, data in crawl["pages"].items():
        for href in data["links"]:
            url = urlsplit(href)
            if url.scheme not in ("http", "https") or url.netloc != host:
                continue
            path = unquote(url.path).lstrip("/")
            if path != SUBFOLDER and not path.startswith(SUBFOLDER + "/"):
                broken.append(f"{rel}: {href} (outside the site's folder: broken on GitHub Pages)")
                continue
            path = path[len(SUBFOLDER) + 1:]
            target = html / path if path else html / "index.html"
            if target.is_dir() or path.endswith("/"):
                target = target / "index.html"
            checked += 1
            if not target.is_file():
                broken.append(f"{rel}: {href} (no file {target.relative_to(html)})")
            elif url.fragment and target.suffix == ".html" and unquote(url.fragment) not in _ids(target):
                broken.append(f"{rel}: {href} (no anchor #{unquote(url.fragment)})")
    assert checked > 100
    assert broken == []


def test_screenshots_are_saved(crawl):
    for name in ("c1_rate.png", "appendix_reproducibility.png"):
        shot = SCREENSHOTS / name
        assert shot.is_file() and shot.stat().st_size > 10_000, shot

