"""The book's figure style, and glueing figures and values into pages.

Each chapter draws its own figures (``chapters/<stem>.py``, functions named ``fig_*``) with
labelled axes and units ("nats"); this module sets the common style and puts results into the
page:

* :func:`glue_figure` glues a figure for a ``{glue:figure}`` directive after
  :func:`readable_ticks`, after checking that its labels are mathematics and words, not code
  names (:func:`~infonce_book.experiment.figure_labels.check_figure`), and that it is drawn for
  the text column (:func:`check_figure_size`): at most :data:`COLUMN_WIDTH_IN` inches wide, an
  aspect a column can show, and no text smaller than :data:`MIN_FONT_PT`, so that its labels stay
  >= :data:`MIN_LABEL_PX` px on a phone. It glues two formats (:class:`GluedFigure`): a PNG at
  :data:`PNG_DPI` dpi for the web, shown at half its pixels (:data:`SCREEN_DPI` CSS px per inch)
  and reduced to 256 colours (a third of the bytes), and a vector PDF that the LaTeX builder
  prefers (myst-nb's render priority picks ``application/pdf`` for LaTeX, ``image/png`` for HTML).
  Under the book's pipeline (``infonce-book run``/``build``) the figure appears once, where the
  page places it; in an interactive kernel (Jupyter, or papermill run by hand) it is also shown
  below the cell, so a student running a chapter sees its plots.
* :func:`glue_all` glues a whole dictionary of values in one call (``{glue:text}`` in the prose),
  so a chapter cell shows one line instead of a loop of ``glue(...)`` calls.
* :func:`as_math` shows sympy expressions (the symbolic checks of
  :mod:`infonce_book.theory.symbolic`) as typeset equations.
"""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns
import sympy as sp
from IPython import get_ipython
from IPython.display import Math, display
from matplotlib.text import Text
from myst_nb import glue
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from .figure_labels import check_figure
from .paths import PIPELINE_ENV

#: The book's one palette: seaborn's colour-blind-safe "colorblind" (ten colours, after Okabe and Ito).
PALETTE = "colorblind"
#: Markers that tell lines apart without colour, in the order of :data:`PALETTE`.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


#: The width every figure is drawn at, in inches: two panels side by side at most. At
#: :data:`SCREEN_DPI` it is 616 CSS px, inside the desktop column (about 740 px); scaled to a
#: phone's column (:data:`PHONE_COLUMN_PX`) its smallest text (:data:`MIN_FONT_PT`) stays at
#: :data:`MIN_LABEL_PX` px: 11 pt x 342 px / (72 pt/in x 5.6 in) = 9.3 px.
COLUMN_WIDTH_IN = 5.6
#: The smallest font size of any text in a figure (tick labels, legends, annotations), in points.
MIN_FONT_PT = 11.0
#: The smallest label a reader should have to read, in CSS px (STYLE.md: a figure on a phone).
MIN_LABEL_PX = 9.0
#: The text column of a phone (a 390 px wide screen), in CSS px: the narrowest a figure is shown.
PHONE_COLUMN_PX = 342
#: The text column of a desktop page, in CSS px.
DESKTOP_COLUMN_PX = 740
#: A figure's CSS px per inch on the web (it is shown at this size unless the column is narrower).
SCREEN_DPI = 110
#: The PNG's pixels per inch: twice :data:`SCREEN_DPI`, sharp on high-density screens.
PNG_DPI = 2 * SCREEN_DPI
#: The aspects (width / height) a column can show: not a strip, not a tower.
ASPECT_RANGE = (0.6, 2.8)
#: The PNG text chunk that records the figure's smallest font size (read by the browser test).
PNG_FONT_KEY = "infonce-book:min-font-pt"


def use_book_style() -> None:
    """Apply the book's plotting style (seaborn ``whitegrid``, colour-blind palette, text no
    smaller than :data:`MIN_FONT_PT`, figures :data:`COLUMN_WIDTH_IN` inches wide with a
    constrained layout, so no blank margins), and show tables' text in full (pandas cuts cells at
    50 characters by default, which cut the ledger's descriptions of what each record measures)."""
    pd.set_option("display.max_colwidth", None)
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.figsize": (COLUMN_WIDTH_IN, 3.6), "figure.dpi": SCREEN_DPI,
                         "savefig.dpi": PNG_DPI, "savefig.bbox": "tight", "savefig.pad_inches": 0.04,
                         "figure.constrained_layout.use": True,
                         "font.size": 12, "axes.titlesize": 12, "axes.labelsize": 12,
                         "xtick.labelsize": MIN_FONT_PT, "ytick.labelsize": MIN_FONT_PT,
                         "legend.fontsize": MIN_FONT_PT, "legend.title_fontsize": MIN_FONT_PT,
                         "legend.framealpha": 0.9, "pdf.fonttype": 42})


def panel_grid(n: int, *, panel_height: float = 2.6, extra_height: float = 0.0, sharex: bool = False,
               sharey: bool = False, spare: bool = False):
    """A figure of ``n`` panels drawn for the column: two a row at most (one when ``n`` is 1),
    :data:`COLUMN_WIDTH_IN` wide, ``panel_height`` inches a row plus ``extra_height`` (a legend
    below), constrained layout.

    Returns ``(fig, axes, rest)``: ``axes`` the ``n`` panels in reading order, ``rest`` the empty
    cells of the last row (turned off, unless ``spare``: then left on for a legend to fill, see
    :func:`legend_in`).

    Raises:
        ValueError: ``n`` below 1.
    """
    if n < 1:
        raise ValueError(f"panel_grid: n must be at least 1, got {n!r}")
    ncols = 1 if n == 1 else 2
    nrows = -(-n // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(COLUMN_WIDTH_IN, panel_height * nrows + extra_height),
                             squeeze=False, sharex=sharex, sharey=sharey, layout="constrained")
    cells = list(grid.flat)
    rest = cells[n:]
    for ax in rest:
        ax.axis("off")
    return fig, cells[:n], rest


def legend_below(fig, handles=None, labels=None, *, ncol: int = 2, **kw):
    """A legend under the panels, outside the data (constrained layout makes room for it)."""
    if handles is None:
        handles, labels = fig.axes[0].get_legend_handles_labels()
    kw = {"columnspacing": 1.0, "handlelength": 1.8, **kw}
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, **kw)


def legend_in(ax, handles, labels, **kw):
    """A legend filling an empty panel ``ax`` (the spare cell of :func:`panel_grid`)."""
    ax.axis("off")
    return ax.legend(handles, labels, loc="center", frameon=False, **kw)


#: Line styles that tell lines apart in greyscale, in the order of :data:`MARKERS`.
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1.5, 1, 1.5, 1, 1.5)), (0, (1, 1)), (0, (8, 2)), "-", "--", "-.")


def palette(n: int) -> list:
    """``n`` colours of the book's colour-blind-safe palette (``n`` <= 10)."""
    if not 1 <= n <= 10:
        raise ValueError(f"palette: n must be between 1 and 10, got n={n!r}")
    return sns.color_palette(PALETTE, n)


def _plain_number(x, _pos=None) -> str:
    return f"{x:g}".replace("-", "\u2212")


def _minor_number(x, _pos=None) -> str:
    """A log axis's minor tick: labelled at 2 and 5 times a power of ten only."""
    if x <= 0:
        return ""
    mantissa = x / 10 ** np.floor(np.log10(x))
    return _plain_number(x) if round(mantissa) in (2, 5) and abs(mantissa - round(mantissa)) < 1e-6 else ""


def _log_major(top: float):
    """A log axis's major tick labels: plain numbers with thousands separators (``1``, ``10``,
    ``10,000``; ``0.01``) when the axis ends below 100,000, else powers of ten in mathematics
    (``$10^{6}$``) from 1,000 on, so that one axis keeps one style; below 0.001 powers of ten
    (``$10^{-6}$``, not ``1e-06``)."""
    def label(x, _pos=None) -> str:
        if x <= 0:
            return ""
        e = np.log10(x)
        if ((x >= 1000 and top >= 1e5) or x < 1e-3) and abs(e - round(e)) < 1e-9:
            return f"$10^{{{int(round(e))}}}$"
        return f"{x:,.0f}" if x >= 1 and x == round(x) else f"{x:g}"
    return label


def readable_ticks(fig) -> None:
    """Label log axes with plain numbers (``1``, ``10``, ``100``; powers of ten from 1,000 on
    only on an axis reaching 100,000, and the minor ticks at 2 and 5 times a power of ten when the axis spans less than two
    decades) and symlog axes too (``−1``, ``0``, ``1``), instead of matplotlib's ``10⁰``,
    ``6×10⁰`` and ``−10⁰``."""
    for ax in fig.axes:
        for axis, scale, lims in ((ax.xaxis, ax.get_xscale(), ax.get_xlim()), (ax.yaxis, ax.get_yscale(), ax.get_ylim())):
            if scale == "symlog":
                axis.set_major_formatter(mticker.FuncFormatter(_plain_number))
                axis.set_minor_formatter(mticker.NullFormatter())
            elif scale == "log" and min(lims) > 0:
                axis.set_major_formatter(mticker.FuncFormatter(_log_major(max(lims))))
                short = max(lims) / min(lims) < 100
                axis.set_minor_formatter(mticker.FuncFormatter(_minor_number) if short else mticker.NullFormatter())


def under_pipeline() -> bool:
    """Whether this process is a chapter kernel started by the book's pipeline."""
    return os.environ.get(PIPELINE_ENV) == "1"


@dataclass(frozen=True)
class FigureSize:
    """A figure as saved: its size in inches (the tight bounding box) and its smallest text."""

    width_in: float
    height_in: float
    min_font_pt: float

    @property
    def aspect(self) -> float:
        """Width over height."""
        return self.width_in / self.height_in

    def label_px(self, column_px: float) -> float:
        """The smallest text's height in CSS px when the figure is shown ``column_px`` wide (or
        at its own size, :data:`SCREEN_DPI` px per inch, where the column is wider)."""
        shown = min(column_px, self.width_in * SCREEN_DPI)
        return self.min_font_pt * shown / (72.0 * self.width_in)


def _texts(fig) -> list[Text]:
    """The texts of ``fig`` a reader sees: visible, non-empty, inside the figure's drawn area
    (tick labels of ticks outside the axes' limits are never drawn)."""
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)  # display units
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or t.figure is None:
            continue
        ext = t.get_window_extent(renderer)
        if ext.width > 0 and box.overlaps(ext):
            out.append(t)
    return out


def figure_size(fig) -> FigureSize:
    """The size of ``fig`` as :func:`glue_figure` saves it (tight bounding box, in inches) and the
    font size of its smallest text, in points (draws the figure)."""
    fig.canvas.draw()
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    pad = 2 * plt.rcParams["savefig.pad_inches"]
    sizes = [t.get_fontsize() for t in _texts(fig)]
    return FigureSize(box.width + pad, box.height + pad, min(sizes) if sizes else float("inf"))


def check_figure_size(fig, name: str = "figure") -> FigureSize:
    """Check that ``fig`` is drawn for the text column, and return its :class:`FigureSize`.

    Raises:
        ValueError: naming the figure, when it is wider than :data:`COLUMN_WIDTH_IN` inches (plus
            a quarter inch of tolerance for a legend's frame), its aspect is outside
            :data:`ASPECT_RANGE`, or its smallest text would be below :data:`MIN_LABEL_PX` px in a
            phone's column (:data:`PHONE_COLUMN_PX`; a text below :data:`MIN_FONT_PT` is named).
    """
    size = figure_size(fig)
    problems = []
    if size.width_in > COLUMN_WIDTH_IN + 0.25:
        problems.append(f"{size.width_in:.2f} in wide, more than the column's {COLUMN_WIDTH_IN} in "
                        "(two panels a row at most; put the rest in another row)")
    lo, hi = ASPECT_RANGE
    if not lo <= size.aspect <= hi:
        problems.append(f"aspect {size.aspect:.2f} (width/height) outside [{lo}, {hi}]")
    if size.label_px(PHONE_COLUMN_PX) < MIN_LABEL_PX - 1e-9:
        small = sorted({repr(t.get_text()[:30]) for t in _texts(fig) if t.get_fontsize() < MIN_FONT_PT})[:5]
        problems.append(f"its smallest text ({size.min_font_pt:g} pt) would be "
                        f"{size.label_px(PHONE_COLUMN_PX):.1f} px on a phone, below {MIN_LABEL_PX:g} px"
                        + (f" (smaller than {MIN_FONT_PT:g} pt: {', '.join(small)})" if small else ""))
    if problems:
        raise ValueError(f"figure {name!r} is not drawn for the text column: " + "; ".join(problems))
    return size


def _png(fig, size: FigureSize) -> bytes:
    """``fig`` as a PNG at :data:`PNG_DPI`, reduced to 256 colours (no dithering: line art keeps
    its edges; about a third of matplotlib's bytes), with its dpi and smallest font recorded."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight", facecolor="white")
    image = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    image = image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    info = PngInfo()
    info.add_text(PNG_FONT_KEY, f"{size.min_font_pt:g}")
    out = io.BytesIO()
    image.save(out, format="png", optimize=True, dpi=(PNG_DPI, PNG_DPI), pnginfo=info)
    return out.getvalue()


class GluedFigure:
    """A figure's two formats for myst-nb's glue: ``image/png`` for the web (with its display
    size, half its pixels, in the metadata) and ``application/pdf`` (vector) for LaTeX.

    Args:
        fig: a matplotlib figure (left open).
        size: its :class:`FigureSize` (default: measured by :func:`figure_size`).
    """

    def __init__(self, fig, size: FigureSize | None = None):
        size = figure_size(fig) if size is None else size
        self.png = _png(fig, size)
        pdf = io.BytesIO()
        fig.savefig(pdf, format="pdf", bbox_inches="tight", facecolor="white", dpi=300)  # rasters inside: 300 dpi
        self.pdf = pdf.getvalue()
        self.width_px, self.height_px = Image.open(io.BytesIO(self.png)).size

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = {"image/png": base64.b64encode(self.png).decode("ascii"),
                "application/pdf": base64.b64encode(self.pdf).decode("ascii"),
                "text/plain": f"<figure {self.width_px}x{self.height_px} px>"}
        meta = {"image/png": {"width": self.width_px // 2, "height": self.height_px // 2}}
        return data, meta


def glue_figure(name: str, fig) -> None:
    """Glue ``fig`` under ``name`` for a ``{glue:figure}`` directive, then close it.

    The figure is checked first: its labels (:func:`~.figure_labels.check_figure`) and its size
    for the column (:func:`check_figure_size`); a figure that fails stops the chapter with a
    ``ValueError`` naming it. It is glued as a :class:`GluedFigure` (PNG for the web, PDF for
    LaTeX). Under the pipeline (:func:`under_pipeline`) the figure is only glued: the built page
    shows it once, where ``{glue:figure}`` places it. In any other IPython kernel (Jupyter,
    papermill run by hand) it is also displayed below the cell, so that a chapter run
    interactively shows its plots. Closing the figure keeps the inline backend from showing it
    again at the end of the cell.
    """
    readable_ticks(fig)
    check_figure(fig, name)
    size = check_figure_size(fig, name)
    ip = get_ipython()
    if ip is not None:  # the kernel renders figures as PNG at twice the dpi, shown at their size,
        # and as PDF (vector), which the printed book (the LaTeX build) takes instead of the PNG
        from matplotlib_inline.backend_inline import set_matplotlib_formats  # optional: kernels only

        set_matplotlib_formats("retina", "pdf")
        if not under_pipeline():
            display(fig, metadata={"infonce_book": {"figure": name, "titles": figure_titles(fig)}})
    glue(name, GluedFigure(fig, size), display=False)
    plt.close(fig)


def figure_titles(fig) -> list[str]:
    """The non-empty titles of a figure (its suptitle, then each axes' titles), as drawn.

    A PNG does not keep its text; :func:`glue_figure` puts these into the metadata of the figure
    it displays in an interactive kernel, so that a notebook run can be checked to have drawn
    the titles of its parameters."""
    titles = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) is not None else []
    for ax in fig.axes:
        titles += [ax.get_title(loc) for loc in ("left", "center", "right")]
    return [t for t in titles if t]


def _plain(key: str, value):
    """``value`` as a plain Python bool/int/float/str (NumPy scalars unwrapped), else TypeError."""
    if isinstance(value, np.generic):
        value = value.item()
    if type(value) in (bool, int, float, str):
        return value
    raise TypeError(f"glue_all: the value of {key!r} must be a plain int, float, bool or str (myst-nb "
                    f"formats only those in {{glue:text}}), got {type(value).__name__}: {value!r}")


def glue_all(values: dict, prefix: str = "") -> None:
    """Glue every entry of ``values`` under the name ``prefix + key``, hidden (``display=False``).

    One line in a chapter cell replaces a loop of ``glue`` calls: runners and ledger functions
    return plain dictionaries, the page glues them with ``glue_all(summary, "c4_")`` and the prose
    refers to ``{glue:text}`c4_slope:.2f```.

    Args:
        values: ``{key: value}`` with ``str`` keys and plain ``int``, ``float``, ``bool`` or
            ``str`` values. NumPy scalars are unwrapped to the equal Python value (myst-nb cannot
            apply a format spec to a NumPy scalar); anything else (arrays, tensors, lists) is an
            error, since ``{glue:text}`` could not format it.
        prefix: prepended to every key (a page uses its own, e.g. ``"c4_"``); default ``""``.

    Returns nothing, so that a call ending a cell displays nothing.

    Raises:
        TypeError: ``prefix`` is not a string, ``values`` is not a mapping, a key is not a
            string, or a value is not a plain scalar (the message names the key).

    Examples:
        >>> glue_all({"slope": np.float64(-1.0), "k_max": 1024}, "c0_")  # doctest: +SKIP
        (glues c0_slope = -1.0 and c0_k_max = 1024 for {glue:text} in the prose)
    """
    if not isinstance(prefix, str):
        raise TypeError(f"glue_all: prefix must be a str, got {type(prefix).__name__}")
    if not hasattr(values, "items"):
        raise TypeError(f"glue_all: values must be a dict of name -> value, got {type(values).__name__}")
    glued = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise TypeError(f"glue_all: every key must be a str, got {key!r}")
        glued[prefix + key] = _plain(key, value)
    for name, value in glued.items():
        glue(name, value, display=False)


def as_math(**named) -> Math:
    """Display sympy expressions as typeset equations: ``as_math(c_1=expr, c_2=expr)``.

    Returns an ``IPython.display.Math`` object (one aligned line per name), so that chapters
    show mathematics rather than strings. Names like ``c_1`` or ``c_1^dec`` are typeset as given;
    a name ending in ``_dec`` gets the superscript dec, and a name containing ``&`` carries its own
    relation (e.g. ``"x &\\le"``; otherwise ``&=``).
    """
    lines = []
    for name, expr in named.items():
        if name.endswith("_dec"):
            name = name[: -len("_dec")] + r"^{\mathrm{dec}}"
        relation = " " if "&" in name else " &= "  # a name may carry its own relation, e.g. "x &\\le"
        lines.append(name + relation + sp.latex(expr))
    return Math(r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}")
