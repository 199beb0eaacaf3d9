"""Chapter 2's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ...experiment.style import COLUMN_WIDTH_IN, legend_below, panel_grid

__all__ = ["fig_gaussian", "fig_k_gap", "fig_retrieval_accuracy", "fig_search_vs_risk", "fig_idea"]


def fig_search_vs_risk(tables: dict):
    """Both sides of Theorem c2-thm-search against k, one panel per model (``{name: table}``, tables
    from :func:`~.runners.exact_curve`)."""
    fig, axes, _ = panel_grid(len(tables), panel_height=3.0, extra_height=0.5, sharey=True)
    for ax, (name, t) in zip(axes, tables.items()):
        ax.plot(t["k"], t["search_ce"], "o-", ms=3, label=r"$\mathbb{E}[H(\hat M_k, \hat Q_k)] - \log k$")
        ax.plot(t["k"], t["risk"], "s--", ms=3, label=r"$L_k - \log k$")
        ax.axhline(t["limit"].iloc[0], color="grey", lw=1, ls=":", label=r"$L_\infty$")
        ax.set_xscale("log")
        ax.set_xlabel("database size $k$")
        ax.set_title(name)
    axes[0].set_ylabel("nats")
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=2)
    return fig


def fig_k_gap(tables: dict):
    """``k (E[H] - L_k)`` against k with the limits ``d1`` (dashed), one line per model."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 3.6), layout="constrained")
    for (name, t), marker, ls in zip(tables.items(), "osD^v", ("-", "-.", ":", "-", "-.")):
        line, = ax.plot(t["k"], t["k_gap"], marker + ls, ms=5, label=name)
        ax.axhline(t["d1"].iloc[0], color=line.get_color(), ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("database size / negatives $k$")
    ax.set_ylabel(r"$k\,(\mathbb{E}[H(\hat M_k,\hat Q_k)] - L_k)$ (nats)")
    ax.legend()
    return fig


def fig_retrieval_accuracy(table):
    """Top-1 and top-5 retrieval of the positive among k unseen items, ideal vs softmax search
    (table from :func:`~.runners.retrieval`)."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.4), layout="constrained")
    for (search, style) in (("ideal", "-"), ("softmax", "--")):
        t = table[table.search == search]
        ax.errorbar(t["k"], t["top1"], yerr=[t["top1"] - t["top1_low"], t["top1_high"] - t["top1"]],
                    fmt="o" + style, ms=5, capsize=2, label=f"top-1, {search} search")
        ax.plot(t["k"], t["top5"], "s" + style, ms=5, alpha=0.7, label=f"top-5, {search} search")
    ideal = table[table.search == "ideal"]
    ax.plot(ideal["k"], ideal["top1_exact"], "k:", lw=1.5, label="top-1, ideal, exact")
    ax.set_xscale("log")
    ax.set_xlabel("number of unseen items $k$")
    ax.set_ylabel("retrieval accuracy")
    legend_below(fig, ncol=2)
    return fig


def fig_gaussian(table: pd.DataFrame, *, title: str = ""):
    """``|k (E H - L_k)|`` of the Gaussian model against k, with the model-specific and the
    uniform constants of Theorem ``c2-thm-search`` and the limit ``|d1|`` (table from
    :func:`~.runners.gaussian_gap`)."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.2), layout="constrained")
    ax.plot(table["k"], table["k_gap"].abs(), "ko-", ms=4, label=r"exact $|k\,(\mathbb{E}H - L_k)|$")
    ax.axhline(abs(table["d1"].iloc[0]), color="grey", ls=":", label=r"$|d_1|$")
    ax.axhline(table["model_constant"].iloc[0], color="C0", ls="--", label=r"bound, model moments")
    ax.axhline(table["uniform_constant"].iloc[0], color="C1", ls="-.", lw=2, label=r"bound, uniform $C_H(\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("database size / negatives $k$")
    ax.set_ylabel("nats")
    if title:
        ax.set_title(title)
    legend_below(fig, ncol=2)
    return fig


def fig_idea(kappa: float = 4.0, tau: float = 0.5, k: int = 8):
    """The chapter's idea in one picture (a diagram, not a measurement): a query ``x`` and an
    unseen database of ``k`` items on the circle (left), and the two searches over it (right):
    the idealised search ``M_k(x, x_j)`` proportional to ``m(x, x_j) = e^{kappa <x, x_j>}`` (the
    positive-pair density of a vMF model) beside the softmax search ``Q_k(x, x_j)``
    proportional to ``e^{<x, x_j>/tau}``; items sorted by angle to the query. The title gives
    their cross-entropy ``H(M_k, Q_k)`` in nats, computed from the drawn database.

    Args:
        kappa: the concentration of the positives (> 0).
        tau: the temperature of the softmax search (> 0).
        k: the database size (>= 2); the items are spread at angles from 0.3 to 2.9 radians from
            the query, alternately on either side, so that they stay apart.
    Raises:
        ValueError: ``kappa`` or ``tau`` not positive, or ``k`` below 2.
    """
    if not kappa > 0 or not tau > 0 or k < 2:
        raise ValueError(f"fig_idea: need kappa > 0, tau > 0 and k >= 2, got {kappa}, {tau}, {k}")
    colours = sns.color_palette("colorblind")
    angles = np.linspace(0.3, 2.9, k) * (-1.0) ** np.arange(k)  # nearest to the query first
    cosines = np.cos(angles)
    ideal = np.exp(kappa * (cosines - 1))
    ideal /= ideal.sum()
    soft = np.exp((cosines - 1) / tau)
    soft /= soft.sum()
    cross_entropy = float(-(ideal * np.log(soft)).sum())
    fig, (left, right) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 3.9), layout="constrained",
                                      gridspec_kw={"width_ratios": [1, 1.5]})
    theta = np.linspace(0, 2 * np.pi, 361)
    left.plot(np.cos(theta), np.sin(theta), color="0.75", lw=1)
    left.plot(0, 1, "o", color=colours[0], ms=10)
    left.annotate(r"query $x$", (0, 1), xytext=(-1.25, 1.2), fontsize=11)
    for j, a in enumerate(angles, start=1):
        px, py = np.sin(a), np.cos(a)  # angle a from the query at the top
        left.plot(px, py, "D", color="0.4", ms=6)
        left.annotate(f"$x_{{{j}}}$", (px, py), xytext=(1.2 * px - 0.08, 1.2 * py - 0.06), fontsize=11)
    left.set_aspect("equal")
    left.set_xlim(-1.35, 1.35)
    left.set_ylim(-1.35, 1.45)
    left.axis("off")
    left.set_title("an unseen database\n" + r"$x_1, \dots, x_k \sim \pi$")
    j = np.arange(1, k + 1)
    right.bar(j - 0.2, ideal, 0.4, color=colours[1], hatch="//", edgecolor="white",
              label=r"idealised $\hat M_k \propto m(x, x_j)$")
    right.bar(j + 0.2, soft, 0.4, color=colours[0], label=r"softmax $\hat Q_k \propto e^{\beta s(x, x_j)}$")
    right.set_xticks(j, [f"$x_{{{i}}}$" for i in j])
    right.set_xlabel(r"database item (nearest to $x$ first)")
    right.set_ylabel("probability")
    right.legend(loc="upper right", frameon=True)
    right.set_title(rf"$\kappa = {kappa:g}$, $\tau = {tau:g}$:" + "\n"
                    + rf"$H(\hat M_k, \hat Q_k) = {cross_entropy:.2f}$ nats")
    right.set_ylim(0, max(ideal.max(), soft.max()) * 1.6)
    return fig

