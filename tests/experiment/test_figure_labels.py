"""Figures speak mathematics: the label check that every glued figure passes."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from infonce_book.chapters.c6_digits import figures as c6
from infonce_book.experiment.figure_labels import bad_ticks, check_figure, figure_labels, raw_identifiers
from infonce_book.experiment.style import glue_figure, palette, readable_ticks, use_book_style


@pytest.mark.parametrize("label, found", [
    # the examples of labels a reader should not see
    ("vmf, sparse, tau = 1", ["vmf", "tau"]),
    ("student_t", ["student_t"]),
    ("embedding (Lambda_star)", ["Lambda_star"]),
    ("identity on S^15", ["S^15"]),
    ("confidence B_k sqrt(log(1/delta)/2n)", ["B_k", "sqrt", "delta"]),
    # and what they should read
    (r"vMF, sparse, $\tau = 1$", []),
    (r"embedding form ($\Lambda_\star$)", []),
    (r"identity on $S^{15}$", []),
    ("Student $t$ inputs", []),
    ("held-out risk", []),
])
def test_raw_identifiers_are_found_outside_mathematics(label, found):
    assert raw_identifiers(label) == found


def test_a_figure_with_a_code_name_is_refused_and_the_message_names_it():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], label="student_t")
    ax.legend()
    ax.set_title(r"$\tau = 0.5$")
    ax.set_xticks([1, 2], ["gaussian", "vMF"])  # a categorical axis: its tick labels are labels
    assert {"student_t", "gaussian", "vMF", r"$\tau = 0.5$"} <= set(figure_labels(fig))
    with pytest.raises(ValueError, match="'student_t'.*'gaussian'"):
        check_figure(fig, "fig")
    with pytest.raises(ValueError, match="student_t"):
        glue_figure("c0_fig", fig)  # every glued figure is checked
    plt.close(fig)


def test_log_ticks_of_a_short_range_read_as_plain_numbers():
    fig, ax = plt.subplots()
    ax.plot([1, 8], [0.6, 7])
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlim(1, 8)
    assert bad_ticks(fig)  # matplotlib's 2×10⁰ ... and −10⁰
    readable_ticks(fig)
    assert bad_ticks(fig) == []
    assert {"2", "5"} <= {t.get_text() for t in ax.get_xticklabels(minor=True)}
    assert {"1"} <= {t.get_text() for t in ax.get_xticklabels()}  # 1, not 10⁰
    plt.close(fig)


def test_palette_is_the_colour_blind_one_and_refuses_more_than_ten():
    import seaborn as sns

    assert palette(10) == sns.color_palette("colorblind", 10)
    with pytest.raises(ValueError, match="n must be between 1 and 10"):
        palette(11)


def test_chapter_6_figures_from_small_synthetic_tables_read_well():
    use_book_style()
    rng = np.random.default_rng(0)
    view = pd.DataFrame({"pc1": rng.normal(size=100), "pc2": rng.normal(size=100), "label": np.arange(100) % 10})
    fig = c6.fig_view(view)
    check_figure(fig, "view")
    leg = fig.legends[0]  # below the panel (the figure is drawn for the column: no legend beside it)
    assert leg.get_title().get_text() == "digit" and len(leg.get_texts()) == 10
    fig.canvas.draw()
    assert leg.get_window_extent().y1 < fig.axes[0].get_window_extent().y0  # the legend is off the data
    plt.close(fig)
    steps = np.arange(5.0)
    trained = pd.DataFrame([{"tau": t, "k": k, "curve_step": steps, "curve_train": 3 - steps / 5,
                             "curve_heldout": 3.1 - steps / 6} for t in (0.1, 0.5) for k in (4, 16) for _ in range(2)])
    fig = c6.fig_training(trained)
    check_figure(fig, "training")
    assert {"training risk", "held-out risk", "run 1", "run 2"} <= set(figure_labels(fig))  # the strip's legend
    plt.close(fig)
    k = np.array([2.0, 4, 8, 16, 32, 64])
    bias = 0.5 / k
    rate = pd.DataFrame({"tau": 0.5, "k": k, "bias": bias, "bias_low": bias * 0.9, "bias_high": bias * 1.1,
                         "c1": 0.5, "c2": -40.0})  # c2 so large that c1/k + c2/k^2 dives to -10 at k = 2
    fig = c6.fig_rate([rate])
    readable_ticks(fig)  # as glue_figure does
    check_figure(fig, "rate")
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    drawn = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()])
    drawn = drawn[np.isfinite(drawn)]
    assert lo > -1 and drawn.min() >= lo and drawn.max() <= hi  # the prediction is clipped to the plotted range
    plt.close(fig)
