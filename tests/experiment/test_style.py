"""Glueing from chapter cells: glue_all glues a dict in one call (plain values only) and
glue_figure shows the figure in an interactive kernel but not under the pipeline."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import sympy as sp
from IPython.display import Math

from infonce_book.experiment import style
from infonce_book.experiment.paths import PIPELINE_ENV


@pytest.fixture
def glued(monkeypatch):
    calls = []
    monkeypatch.setattr(style, "glue", lambda name, value, display=True: calls.append((name, value, display)))
    return calls


def test_glue_all_glues_every_entry_hidden_under_the_prefix(glued):
    out = style.glue_all({"slope": -1.0, "k_max": 1024, "model": "vMF", "ok": True}, "c9_")
    assert out is None  # a call that ends a cell shows nothing
    assert glued == [("c9_slope", -1.0, False), ("c9_k_max", 1024, False), ("c9_model", "vMF", False),
                     ("c9_ok", True, False)]


def test_glue_all_unwraps_numpy_scalars_to_equal_python_values(glued):
    # myst-nb cannot apply a format spec to a NumPy scalar (myst-nb #615): glue_all passes the
    # plain Python value, equal to the NumPy one.
    style.glue_all({"x": np.float64(0.25), "n": np.int64(7), "b": np.bool_(False)})
    assert [(n, v, type(v)) for n, v, _ in glued] == [("x", 0.25, float), ("n", 7, int), ("b", False, bool)]


@pytest.mark.parametrize("values, message", [
    ({"arr": np.arange(3)}, "the value of 'arr' must be a plain int, float, bool or str"),
    ({"xs": [1.0, 2.0]}, "the value of 'xs' must be a plain"),
    ({"none": None}, "the value of 'none' must be a plain"),
    ({3: 1.0}, "every key must be a str"),
])
def test_glue_all_refuses_values_it_cannot_glue_naming_the_key(glued, values, message):
    with pytest.raises(TypeError, match=message):
        style.glue_all(values, "c9_")
    assert glued == []  # nothing is glued when one entry is bad


def test_glue_all_refuses_a_non_mapping_and_a_non_string_prefix(glued):
    with pytest.raises(TypeError, match="values must be a dict"):
        style.glue_all([("a", 1.0)], "c9_")
    with pytest.raises(TypeError, match="prefix must be a str"):
        style.glue_all({"a": 1.0}, None)


class _FakeShell:
    pass


@pytest.mark.parametrize("pipeline, shown", [(False, True), (True, False)])
def test_glue_figure_displays_interactively_but_not_under_the_pipeline(glued, monkeypatch, pipeline, shown):
    displayed = []
    monkeypatch.setattr(style, "get_ipython", lambda: _FakeShell())
    # glue_figure imports matplotlib_inline only inside a kernel (the GPU check's direct runner has none)
    import matplotlib_inline.backend_inline as inline

    monkeypatch.setattr(inline, "set_matplotlib_formats", lambda *a: None)
    if pipeline:
        monkeypatch.setenv(PIPELINE_ENV, "1")
    else:
        monkeypatch.delenv(PIPELINE_ENV, raising=False)
    displayed_meta = []
    monkeypatch.setattr(style, "display", lambda obj, metadata=None: (displayed.append(obj),
                                                                      displayed_meta.append(metadata)))
    style.use_book_style()  # a figure drawn for the column: glue_figure checks its size
    fig, ax = plt.subplots()
    ax.set_title(r"$\kappa=4$")
    fig.suptitle("vMF")
    style.glue_figure("c9-fig", fig)
    assert (displayed == [fig]) is shown
    if shown:  # the titles travel with the displayed PNG, which cannot show them to a test
        assert displayed_meta == [{"infonce_book": {"figure": "c9-fig", "titles": ["vMF", r"$\kappa=4$"]}}]
    assert [(n, type(v), d) for n, v, d in glued] == [("c9-fig", style.GluedFigure, False)]  # glued hidden
    # either way: {glue:figure} places it
    assert not plt.fignum_exists(fig.number)  # closed: the inline backend does not show it again


def test_the_book_style_shows_table_cells_in_full():
    import pandas as pd

    style.use_book_style()
    long = "bound over all pairs (a perturbation of every similarity of the tuple at once)"
    html = pd.DataFrame({"quantity": [long]})._repr_html_()
    assert long in html and "..." not in html


def test_as_math_typesets_one_aligned_line_per_name():
    b = sp.Symbol("beta")
    out = style.as_math(c_1=b / 2, c_2_dec=b**2, **{r"x &\le": 1})
    assert isinstance(out, Math)
    assert out.data == (r"\begin{aligned}c_1 &= \frac{\beta}{2} \\ c_2^{\mathrm{dec}} &= \beta^{2} \\ "
                        r"x &\le 1\end{aligned}")
