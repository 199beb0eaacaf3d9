"""Chapter 1's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ...experiment.style import COLUMN_WIDTH_IN, legend_below
from ...theory.stats import normal_quantile

__all__ = ["fig_bias_vs_k", "fig_bounds_vs_k", "fig_c1_heatmap", "fig_in_batch", "fig_k_bias_by_variant", "fig_idea"]


def fig_in_batch(exact: pd.DataFrame, mc: pd.DataFrame, *, title: str = ""):
    """``k (L_B - log k - L_inf)`` against the batch size for CLIP (``k = B - 1``) and NT-Xent
    (``k = 2B - 2``): exact (lines), Monte Carlo (points, 95% intervals), and the limits ``c1``.

    Args:
        exact, mc: tables from :func:`~.runners.in_batch_exact` and :func:`~.runners.in_batch_monte_carlo`.
    """
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.2), layout="constrained")
    for form, name in (("clip", "CLIP"), ("nt_xent", "NT-Xent")):
        t = exact[exact.form == form]
        line, = ax.plot(t["B"], t["k_bias"], "-" if form == "clip" else "-.", label=f"{name}: exact")
        ax.axhline(t["c1"].iloc[0], color=line.get_color(), ls="--", lw=1)
        m = mc[mc.form == form]
        half = normal_quantile(0.95) * m["cv_se"] * m["k"]
        ax.errorbar(m["B"], m["k"] * m["cv_mean"], yerr=half, fmt="o" if form == "clip" else "s", ms=4, capsize=3,
                    color=line.get_color(),
                    label=f"{name}: Monte Carlo")
    ax.set_xscale("log")
    ax.set_xlabel("batch size $B$")
    ax.set_ylabel(r"$k\,(L_B - \log k - L_\infty)$ (nats)")
    if title:
        ax.set_title(title)
    legend_below(fig, ncol=2)
    return fig


def fig_bias_vs_k(exact, mc=None, *, title: str = ""):
    """Log-log plot of the exact bias against k with its first- and second-order predictions.

    Args:
        exact: table from :func:`~.runners.exact_curve` (one variant).
        mc: optional table from :func:`~.runners.monte_carlo` (intervals).
    """
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 3.8), layout="constrained")
    every = max(1, len(exact) // 8)  # markers tell the three nearly equal curves apart
    ax.loglog(exact["k"], exact["bias"], "k-", lw=2, label="exact (quadrature)")
    ax.loglog(exact["k"], exact["first_order"], "--", marker="s", ms=5, mfc="none", markevery=every,
              label=r"$c_1/k$")
    ax.loglog(exact["k"], exact["second_order"], ":", lw=2, marker="^", ms=5, mfc="none",
              markevery=(every // 2, every), label=r"$c_1/k + c_2/k^2$")
    if mc is not None:
        yerr = np.vstack([mc["cv_mean"] - mc["cv_low"], mc["cv_high"] - mc["cv_mean"]])
        ax.errorbar(mc["k"], mc["cv_mean"], yerr=yerr, fmt="o", ms=4, capsize=3,
                    label="Monte Carlo, 95% CI")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel(r"$L_k - \log k - L_\infty$ (nats)")
    if title:
        ax.set_title(title)
    ax.legend()
    return fig


def fig_bounds_vs_k(table, *, title: str = ""):
    """Log-log plot of |bias| and the bounds (long table from :func:`~.runners.bounds_table`:
    ``k, curve, value``)."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.6), layout="constrained")
    sns.lineplot(data=table, x="k", y="value", hue="curve", style="curve", markers=True, markevery=4, ax=ax,
                 legend=True)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel("nats")
    if title:
        ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    ax.get_legend().remove()
    legend_below(fig, handles, labels, ncol=2)
    return fig


def fig_k_bias_by_variant(table):
    """``k (L_k - log k - L_inf)`` against k for both variants, with the limits c1 (table from
    :func:`~.runners.exact_curve`)."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 3.6), layout="constrained")
    sns.lineplot(data=table, x="k", y="k_bias", hue="variant", style="variant", markers=True, markevery=4, ax=ax)
    for _, row in table.drop_duplicates("variant").iterrows():
        ax.axhline(row["c1"], ls="--", lw=1, color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel(r"$k\,(L_k - \log k - L_\infty)$ (nats)")
    ax.legend(title=None)
    return fig


def fig_c1_heatmap(table, value: str = "c1", *, title: str = ""):
    """Heatmap of ``c1`` over (tau, kappa) (table from :func:`~.runners.c1_sweep`)."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 3.8), layout="constrained")
    grid = table.pivot(index="kappa", columns="tau", values=value).sort_index(ascending=False)
    label = {"c1": "$c_1$", "c2": "$c_2$"}.get(value, value)
    sns.heatmap(grid, annot=True, fmt=".3g", cmap="viridis", ax=ax,
                annot_kws={"fontsize": 11}, cbar_kws={"label": f"{label} (nats)"})
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"concentration $\kappa$")
    if title:
        ax.set_title(title)
    return fig


def fig_idea(k: int = 8, *, seed: int = 3):
    """The chapter's idea in one picture (a diagram, not a measurement).

    Left: one InfoNCE tuple on the circle, an anchor ``x``, its positive ``x^+`` and ``k``
    negatives (drawn uniformly away from the anchor, fixed ``seed``, so that the points stay
    apart). Right: why the bias is of order ``1/k``:
    ``T_k`` (the normalised denominator) has mean close to 1 and spread ``k^{-1/2}``; the
    linear part of ``log t`` averages out, and what remains is the quadratic gap between
    ``log t`` and its tangent ``t - 1``, of order ``Var T_k``, i.e. ``1/k``. The two densities are
    schematic (normal, variance ``1/k``).

    Args:
        k: the number of negatives drawn (>= 1).
        seed: the seed of the negatives' angles.
    Raises:
        ValueError: ``k`` below 1.
    """
    if k < 1:
        raise ValueError(f"fig_idea: k must be at least 1, got {k}")
    colours = sns.color_palette("colorblind")
    fig, (left, right) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 3.7), layout="constrained",
                                      gridspec_kw={"width_ratios": [1, 1.3]})
    theta = np.linspace(0, 2 * np.pi, 361)
    left.plot(np.cos(theta), np.sin(theta), color="0.75", lw=1)
    angles = np.pi / 2 + np.random.default_rng(seed).uniform(0.6, 2 * np.pi - 0.6, k)  # away from x
    points = [(np.pi / 2, colours[0], "o", r"anchor $x$"), (np.pi / 2 - 0.45, colours[1], "s", r"positive $x^+$")]
    points += [(a, "0.45", "x", r"negatives $x_1, \dots, x_k$" if i == 0 else None) for i, a in enumerate(angles)]
    for angle, colour, marker, label in points:
        left.plot([0, np.cos(angle)], [0, np.sin(angle)], color=colour, lw=0.8, alpha=0.7)
        left.plot(np.cos(angle), np.sin(angle), marker, color=colour, ms=8, mew=2, label=label)
    left.annotate(r"$x$", (0, 1), xytext=(-0.3, 1.12), fontsize=12)
    left.annotate(r"$x^+$", (np.cos(1.12), np.sin(1.12)), xytext=(0.5, 1.02), fontsize=12)
    left.set_aspect("equal")
    left.set_xlim(-1.25, 1.25)
    left.set_ylim(-1.25, 1.4)
    left.axis("off")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, frameon=False, handletextpad=0.3,
                borderaxespad=0.0)
    left.set_title("pick $x^+$ among the\n$k + 1$ candidates")
    t = np.linspace(0.25, 2.0, 400)
    right.plot(t, np.log(t), color="k", lw=2)
    right.plot(t, t - 1, "--", color=colours[2], lw=1.5)
    right.fill_between(t, np.log(t), t - 1, color=colours[2], alpha=0.15)
    right.text(1.55, 0.2, r"$\log t$", fontsize=12)
    right.text(0.28, 0.82, r"tangent $t - 1$", fontsize=11, color=colours[2])
    right.text(0.28, 0.42, "gap $\\approx (t - 1)^2/2$,\nmean $\\propto \\mathrm{Var}\\,T_k$",
               fontsize=11, color=colours[2])
    density = right.twinx()
    for kk, colour, style in ((4, colours[4], "-"), (32, colours[0], "-.")):
        sd = kk ** -0.5
        pdf = np.exp(-0.5 * ((t - 1) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
        density.plot(t, pdf, style, color=colour, lw=1.5)
        density.fill_between(t, pdf, color=colour, alpha=0.12)
        density.text(1 + 1.3 * sd + 0.03, pdf.max() * 0.6, f"$k = {kk}$", color=colour, fontsize=11)
    density.set_ylim(0, 6.5)
    density.set_yticks([])
    density.grid(False)
    right.set_ylim(-1.6, 1.1)
    right.set_xlabel(r"$t$")
    right.set_ylabel(r"$\log t$ (nats)")
    right.set_title("$T_k$ concentrates at 1,\nso $\\mathbb{E}\\log T_k = O(1/k)$")
    return fig

