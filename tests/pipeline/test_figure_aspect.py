"""The book's figures on screen, in a real browser: their own aspect at every width, labels a
reader can read, and alt text that describes them.

Shares the browser and the local server of tests/pipeline/test_browser.py (the session's smoke
build). On every chapter page, at 1366 px (a desktop) and at 390 px (a phone), every figure:

* is shown at its natural aspect (rendered width/height within 2 % of the PNG's): the build writes
  each image's size inline and ``max-width: 100%`` alone would narrow only the width, squashing
  it (issue 34 measured 24 of 34 figures squashed on a desktop, all 34 on a phone);
* keeps its smallest text at 9 px or more: the PNG records its dpi and the font size of its
  smallest text (:func:`~infonce_book.experiment.style.glue_figure` writes them, and refuses a
  figure with text below :data:`~infonce_book.experiment.style.MIN_FONT_PT`), so the text's
  height on screen is ``font_pt * dpi / 72 * rendered_width / natural_width``;
* has alt text that is a sentence describing it, not empty and not the image's file path (the
  build's default).

Saves screenshots of Fig. 1.1 and Fig. 6.2 at both widths under ``_build/screenshots/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from PIL import Image

from infonce_book.experiment.style import MIN_LABEL_PX, PNG_FONT_KEY
from infonce_book.pipeline import run as pipeline

from . import test_browser as _browser
from .test_browser import ROOT, SCREENSHOTS

chromium, served = _browser.chromium, _browser.served  # the fixtures, shared with test_browser.py

pytestmark = [pytest.mark.book, pytest.mark.browser]

WIDTHS = (1366, 390)
#: Rendered and natural aspect may differ by this fraction (rounding to whole pixels included).
ASPECT_TOLERANCE = 0.02

FIGURES = r"""async () => {
  const imgs = Array.from(document.querySelectorAll('article.bd-article figure img'));
  for (const i of imgs) {
    i.loading = 'eager';
    if (!i.complete) await new Promise(r => { i.addEventListener('load', r, {once: true});
                                            i.addEventListener('error', r, {once: true}); setTimeout(r, 20000); });
  }
  return imgs.map(i => {
    const r = i.getBoundingClientRect();
    const fig = i.closest('figure');
    const num = fig && fig.querySelector('.caption-number');
    return {id: fig ? fig.id : '', number: num ? num.textContent.trim() : '', src: i.src, alt: i.getAttribute('alt'),
            natural: [i.naturalWidth, i.naturalHeight], shown: [r.width, r.height]};
  });
}"""

SHOTS = {"c1-fig-idea": "fig_1_1", "c6-fig-training": "fig_6_2"}


@pytest.fixture(scope="module")
def figures(chromium, served):
    """Every chapter page's figures as shown at each width: ``{(width, stem): [figure, ...]}``."""
    base, html = served
    out = {}
    for width in WIDTHS:
        context = chromium.new_context(viewport={"width": width, "height": 900})
        for stem in pipeline.executable_pages(ROOT):
            page = context.new_page()
            page.set_default_timeout(120_000)
            page.goto(f"{base}book/{stem}.html", wait_until="load")
            out[(width, stem)] = page.evaluate(FIGURES)
            for fig_id, name in SHOTS.items():
                fig = page.locator(f"figure#{fig_id}")
                if fig.count():
                    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                    fig.scroll_into_view_if_needed()
                    fig.screenshot(path=str(SCREENSHOTS / f"{name}_{width}px.png"))
            page.close()
        context.close()
    return {"figures": out, "html": html}


def _png(html: Path, src: str) -> Image.Image:
    path = unquote(urlsplit(src).path)  # served under a sub-folder: the file is html/_images/...
    return Image.open(html / path[path.index("_images/"):] if "_images/" in path else html / path.lstrip("/"))


def test_every_chapter_shows_its_figures(figures):
    for width in WIDTHS:
        counts = {stem: len(figures["figures"][(width, stem)]) for stem in pipeline.executable_pages(ROOT)}
        numbered = {stem: n for stem, n in counts.items() if re.match(r"c\d_", stem)}  # Chapters 1-6
        assert len(numbered) >= 6 and all(n >= 3 for n in numbered.values()), (width, counts)
        assert sum(counts.values()) >= 30, (width, counts)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_figure_keeps_its_natural_aspect(figures, width):
    bad = []
    for stem in pipeline.executable_pages(ROOT):
        for f in figures["figures"][(width, stem)]:
            (nw, nh), (w, h) = f["natural"], f["shown"]
            assert nw > 0 and nh > 0 and w > 0 and h > 0, f
            ratio = (w / h) / (nw / nh)
            if abs(ratio - 1) > ASPECT_TOLERANCE:
                bad.append(f"{f['number']} ({f['id']}): natural {nw}x{nh}, shown {w:.0f}x{h:.0f} (aspect x{ratio:.2f})")
    assert bad == [], f"squashed or stretched at {width} px"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_figure_keeps_its_labels_at_9_px(figures, width):
    small = []
    for stem in pipeline.executable_pages(ROOT):
        for f in figures["figures"][(width, stem)]:
            image = _png(figures["html"], f["src"])
            assert PNG_FONT_KEY in image.info, f"{f['number']}: the PNG does not record its smallest font"
            font_pt, dpi = float(image.info[PNG_FONT_KEY]), float(image.info["dpi"][0])
            label_px = font_pt * dpi / 72 * f["shown"][0] / f["natural"][0]
            if label_px < MIN_LABEL_PX - 0.05:
                small.append(f"{f['number']} ({f['id']}): {font_pt:g} pt at {f['shown'][0]:.0f} of "
                             f"{f['natural'][0]} px is {label_px:.1f} px")
    assert small == [], f"labels below {MIN_LABEL_PX:g} px at {width} px"


def test_every_figure_has_alt_text_that_describes_it(figures):
    bad = []
    for stem in pipeline.executable_pages(ROOT):
        for f in figures["figures"][(WIDTHS[0], stem)]:
            alt = (f["alt"] or "").strip()
            if (not alt or re.search(r"_images/|\.(png|svg|jpe?g|pdf)\b", alt, re.I)
                    or len(alt.split()) < 6 or not alt.endswith(".") or "$" in alt or "\\" in alt):
                bad.append(f"{f['number']} ({f['id']}): {alt!r}")
    assert bad == []


def test_screenshots_of_fig_1_1_and_6_2_are_saved(figures):
    for name in SHOTS.values():
        for width in WIDTHS:
            shot = SCREENSHOTS / f"{name}_{width}px.png"
            assert shot.is_file() and shot.stat().st_size > 5_000, shot
