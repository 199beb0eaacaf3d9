"""The book's figure style, and glueing figures and values into pages.

Each chapter draws its own figures (``chapters/<stem>.py``, functions named ``fig_*``) with
labelled axes and units ("nats"); this module sets the common style and puts results into the
page:

* :func:`glue_figure` glues a figure for a ``{glue:figure}`` directive, at 220 dpi (PNG at twice
  the figure's 110 dpi, shown at its size), after :func:`readable_ticks` and after checking that
  its labels are mathematics and words, not code names
  (:func:`~infonce_book.experiment.figure_labels.check_figure`). Under the book's pipeline
  (``infonce-book run``/``build``) the figure appears once, where the page places it; in an
  interactive kernel (Jupyter, or papermill run by hand) it is also shown below the cell, so a
  student running a chapter sees its plots.
* :func:`glue_all` glues a whole dictionary of values in one call (``{glue:text}`` in the prose),
  so a chapter cell shows one line instead of a loop of ``glue(...)`` calls.
* :func:`as_math` shows sympy expressions (the symbolic checks of
  :mod:`infonce_book.theory.symbolic`) as typeset equations.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns
import sympy as sp
from IPython import get_ipython
from IPython.display import Math, display
from myst_nb import glue

from .figure_labels import check_figure
from .paths import PIPELINE_ENV

#: The book's one palette: seaborn's colour-blind-safe "colorblind" (ten colours, after Okabe and Ito).
PALETTE = "colorblind"
#: Markers that tell lines apart without colour, in the order of :data:`PALETTE`.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def use_book_style() -> None:
    """Apply the book's plotting style (seaborn ``whitegrid``, colour-blind palette), and show
    tables' text in full (pandas cuts cells at 50 characters by default, which cut the ledger's
    descriptions of what each record measures)."""
    pd.set_option("display.max_colwidth", None)
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.figsize": (6.4, 4.0), "figure.dpi": 110, "savefig.dpi": 220,
                         "savefig.bbox": "tight", "axes.titlesize": "medium", "legend.framealpha": 0.9})


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
    (``$10^{6}$``) from 1,000 on, so that one axis keeps one style."""
    def label(x, _pos=None) -> str:
        if x <= 0:
            return ""
        e = np.log10(x)
        if x >= 1000 and top >= 1e5 and abs(e - round(e)) < 1e-9:
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


def glue_figure(name: str, fig) -> None:
    """Glue ``fig`` under ``name`` for a ``{glue:figure}`` directive, then close it.

    Under the pipeline (:func:`under_pipeline`) the figure is only glued: the built page shows
    it once, where ``{glue:figure}`` places it. In any other IPython kernel (Jupyter, papermill
    run by hand) it is also displayed below the cell, so that a chapter run interactively shows
    its plots. Closing the figure keeps the inline backend from showing it again at the end of
    the cell.
    """
    readable_ticks(fig)
    check_figure(fig, name)
    ip = get_ipython()
    if ip is not None:  # the kernel renders figures as PNG at twice the dpi, shown at their size,
        # and as PDF (vector), which the printed book (the LaTeX build) takes instead of the PNG
        from matplotlib_inline.backend_inline import set_matplotlib_formats  # optional: kernels only

        set_matplotlib_formats("retina", "pdf")
        if not under_pipeline():
            display(fig, metadata={"infonce_book": {"figure": name, "titles": figure_titles(fig)}})
    glue(name, fig, display=False)
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
