"""Chapter 1's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ...theory.stats import normal_quantile

__all__ = ["fig_bias_vs_k", "fig_bounds_vs_k", "fig_c1_heatmap", "fig_in_batch", "fig_k_bias_by_variant"]


def fig_in_batch(exact: pd.DataFrame, mc: pd.DataFrame, *, title: str = ""):
    """``k (L_B - log k - L_inf)`` against the batch size for CLIP (``k = B - 1``) and NT-Xent
    (``k = 2B - 2``): exact (lines), Monte Carlo (points, 95% intervals), and the limits ``c1``.

    Args:
        exact, mc: tables from :func:`~.runners.in_batch_exact` and :func:`~.runners.in_batch_monte_carlo`.
    """
    fig, ax = plt.subplots()
    for form, name in (("clip", "CLIP, $k = B - 1$"), ("nt_xent", "NT-Xent, $k = 2B - 2$")):
        t = exact[exact.form == form]
        line, = ax.plot(t["B"], t["k_bias"], "-", label=f"{name}: exact")
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
    ax.legend(fontsize="small")
    return fig


def fig_bias_vs_k(exact, mc=None, *, title: str = ""):
    """Log-log plot of the exact bias against k with its first- and second-order predictions.

    Args:
        exact: table from :func:`~.runners.exact_curve` (one variant).
        mc: optional table from :func:`~.runners.monte_carlo` (intervals).
    """
    fig, ax = plt.subplots()
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
    fig, ax = plt.subplots()
    sns.lineplot(data=table, x="k", y="value", hue="curve", style="curve", markers=True, markevery=4, ax=ax)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel("nats")
    if title:
        ax.set_title(title)
    ax.legend(title=None, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def fig_k_bias_by_variant(table):
    """``k (L_k - log k - L_inf)`` against k for both variants, with the limits c1 (table from
    :func:`~.runners.exact_curve`)."""
    fig, ax = plt.subplots()
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
    fig, ax = plt.subplots()
    grid = table.pivot(index="kappa", columns="tau", values=value).sort_index(ascending=False)
    label = {"c1": "$c_1$", "c2": "$c_2$"}.get(value, value)
    sns.heatmap(grid, annot=True, fmt=".3g", cmap="viridis", ax=ax, cbar_kws={"label": f"{label} (nats)"})
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"concentration $\kappa$")
    if title:
        ax.set_title(title)
    return fig
