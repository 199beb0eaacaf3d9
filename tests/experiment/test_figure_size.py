"""Figures drawn for the text column: glue_figure refuses a figure too wide for it, with an aspect
a column cannot show, or with text that would fall below 9 px on a phone; what it glues is a PNG
(256 colours, its dpi and smallest font recorded, shown at half its pixels) and a vector PDF."""

import base64
import io
import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest
from PIL import Image

from infonce_book.experiment import style

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _book_style():
    with plt.rc_context():
        style.use_book_style()
        yield
    plt.close("all")


def test_the_column_arithmetic_keeps_the_smallest_text_at_9_px_on_a_phone():
    # 11 pt on a 5.6 in figure scaled to a 342 px column: 11 * 342 / (72 * 5.6) = 9.33 px
    size = style.FigureSize(style.COLUMN_WIDTH_IN, 3.5, style.MIN_FONT_PT)
    assert size.label_px(style.PHONE_COLUMN_PX) == pytest.approx(11 * 342 / (72 * 5.6))
    assert size.label_px(style.PHONE_COLUMN_PX) >= style.MIN_LABEL_PX
    # on a desktop the figure is shown at its own size (616 px < 740 px): 11 pt at 110 px/in = 16.8 px
    assert size.label_px(style.DESKTOP_COLUMN_PX) == pytest.approx(11 * 110 / 72)
    assert size.aspect == pytest.approx(5.6 / 3.5)


def test_a_column_figure_passes_and_its_size_is_measured():
    fig, axes, rest = style.panel_grid(3, panel_height=2.5)
    for ax in axes:
        ax.plot([1, 2, 3], [1, 4, 9], "o-", label="data")
        ax.set_xlabel("$k$")
    style.legend_in(rest[0], *axes[0].get_legend_handles_labels())
    size = style.check_figure_size(fig, "c0_fig")
    assert size.width_in <= style.COLUMN_WIDTH_IN + 0.01
    assert size.height_in == pytest.approx(5.0, abs=0.1)
    assert size.min_font_pt == style.MIN_FONT_PT
    assert len(axes) == 3 and len(rest) == 1  # two a row: 2 rows


def test_a_figure_wider_than_the_column_is_refused():
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))  # three panels in a row, as Fig. 6.3 was drawn
    with pytest.raises(ValueError, match=r"'c0_wide' is not drawn for the text column: 1\d\.\d\d in wide"):
        style.check_figure_size(fig, "c0_wide")


def test_a_strip_is_refused_for_its_aspect():
    fig, ax = plt.subplots(figsize=(5.6, 1.2))
    with pytest.raises(ValueError, match=r"aspect \d\.\d\d \(width/height\) outside"):
        style.check_figure_size(fig, "c0_strip")


def test_small_text_is_refused_and_named():
    fig, ax = plt.subplots(figsize=(5.6, 3.5))
    ax.legend(handles=ax.plot([0, 1], label="a small legend entry"), fontsize="x-small")
    with pytest.raises(ValueError, match=r"below 9 px.*'a small legend entry'"):
        style.check_figure_size(fig, "c0_small")


def test_glued_figure_carries_a_png_for_the_web_and_a_pdf_for_latex():
    fig, ax = plt.subplots(figsize=(5.6, 3.5))
    ax.plot([1, 2, 3], [3, 1, 2], "s--")
    glued = style.GluedFigure(fig)
    data, meta = glued._repr_mimebundle_()
    png = base64.b64decode(data["image/png"])
    image = Image.open(io.BytesIO(png))
    assert image.mode == "P"  # 256 colours
    assert image.info[style.PNG_FONT_KEY] == "11"
    assert image.info["dpi"] == pytest.approx((style.PNG_DPI, style.PNG_DPI), abs=0.1)
    w, h = image.size
    assert w == pytest.approx(5.6 * style.PNG_DPI, abs=3) and h == pytest.approx(3.5 * style.PNG_DPI, abs=3)
    assert meta == {"image/png": {"width": w // 2, "height": h // 2}}  # shown at 110 CSS px per inch
    assert base64.b64decode(data["application/pdf"]).startswith(b"%PDF")


def test_glue_figure_refuses_a_figure_not_drawn_for_the_column(monkeypatch):
    glued = []
    monkeypatch.setattr(style, "glue", lambda *a, **k: glued.append(a))
    monkeypatch.setattr(style, "get_ipython", lambda: None)
    fig, ax = plt.subplots(figsize=(10, 3.6))
    with pytest.raises(ValueError, match="'c0_fig' is not drawn for the text column"):
        style.glue_figure("c0_fig", fig)
    assert glued == []


def test_every_figure_of_the_book_has_alt_text_a_sentence():
    """Every ``{glue:figure}`` directive of a chapter sets ``:alt:`` (the build's default alt
    text is the image's file path): a plain sentence, no TeX, no file name."""
    root = Path(__file__).resolve().parents[2]
    figures = 0
    for md in sorted((root / "book").glob("c*.md")):
        for block in re.findall(r"```\{glue:figure\}[^\n]*\n((?::\w+:[^\n]*\n)*)", md.read_text()):
            figures += 1
            options = dict(re.findall(r":(\w+): ?([^\n]*)", block))
            alt = options.get("alt", "")
            assert len(alt.split()) >= 6 and alt.endswith(".") and alt[0].isupper(), (md.name, options)
            assert not re.search(r"[$\\]|_images/|\.png\b", alt), (md.name, alt)
    assert figures >= 30
