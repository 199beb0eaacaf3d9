"""The book's figure style: one seaborn theme, and glueing figures into pages.

Each chapter draws its own figures (``chapters/<stem>.py``, functions named ``fig_*``) with
labelled axes and units ("nats"); this module only sets the common style.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns
from IPython import get_ipython
from myst_nb import glue

PALETTE = "colorblind"


def use_book_style() -> None:
    """Apply the book's plotting style (seaborn ``whitegrid``, colour-blind palette)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.figsize": (6.4, 4.0), "figure.dpi": 110, "savefig.bbox": "tight",
                         "axes.titlesize": "medium"})


def glue_figure(name: str, fig) -> None:
    """Glue ``fig`` under ``name`` for a ``{glue:figure}`` directive, and close it so that the
    notebook does not display it a second time at the end of the cell."""
    ip = get_ipython()
    if ip is not None:  # make sure the kernel renders figures as PNG (inline backend)
        from matplotlib_inline.backend_inline import set_matplotlib_formats  # optional: kernels only

        set_matplotlib_formats("png")
    glue(name, fig, display=False)
    plt.close(fig)
