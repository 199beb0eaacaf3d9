"""Chapter 5's figures: the bounds against n (claim C6), the terms of the sharp bound, and the
generalisation gap of ERM against n (claim C7). Each takes a summary table of :mod:`~.tables` and
returns a matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ...theory.stats import normal_quantile

__all__ = ["fig_bounds_vs_n", "fig_theorem1_terms", "fig_gap_vs_n"]


def fig_bounds_vs_n(summary, model: str = "vmf"):
    """The old bound, the sharp bound, the PAC-Bayes certificate and the measured values against n
    (log x-axis, symlog y-axis, nats): one panel per k (columns) and tau (rows), with the trivial
    bound ``2 beta``.

    Args: table from :func:`~.tables.bound_summary`.
    """
    sub = summary[summary.model == model]
    taus, ks = sorted(sub.tau.unique()), sorted(sub.k.unique())
    fig, axes = plt.subplots(len(taus), len(ks), figsize=(3.6 * len(ks), 3.1 * len(taus)), squeeze=False,
                             sharex=True)
    for i, tau in enumerate(taus):
        for j, k in enumerate(ks):
            ax = axes[i, j]
            cell = sub[np.isclose(sub.tau, tau) & (sub.k == k)].sort_values("n")
            if not len(cell):
                ax.axis("off")
                continue
            ax.plot(cell.n, cell.old_bound, "s-", color="C3", ms=4, label="old constants")
            ax.plot(cell.n, cell.sharp_bound, "o-", color="C0", ms=4, label="sharp constants")
            if "pb_bound" in cell:
                ax.plot(cell.n, cell.pb_bound, "^-", color="C2", ms=4, label="PAC-Bayes (randomised)")
                ax.plot(cell.n, cell.pb_measured, "^:", color="C2", ms=3, alpha=0.7, label="measured (randomised)")
            ax.plot(cell.n, cell.search_ce, "ko:", ms=3, label="measured E H - log k")
            ax.axhline(2.0 / tau, color="0.4", ls="--", lw=1, label=r"trivial bound $2\beta$")
            ax.set_xscale("log", base=2)
            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_title(f"k = {int(k)}, tau = {tau:g}")
            if i == len(taus) - 1:
                ax.set_xlabel("training tuples $n$")
            if j == 0:
                ax.set_ylabel("nats")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def fig_theorem1_terms(summary, model: str = "vmf", tau: float | None = None):
    """The terms of the sharp bound (stacked, seed means) against n for each k, with the measured
    left-hand side, at one temperature (default: the smallest).

    Args: table from :func:`~.tables.bound_summary`.
    """
    terms = ["sharp_empirical_risk", "sharp_complexity", "sharp_confidence", "sharp_search_bias"]
    sub = summary[summary.model == model]
    tau = sub.tau.min() if tau is None else tau
    sub = sub[np.isclose(sub.tau, tau)]
    ks = sorted(sub.k.unique())
    fig, axes = plt.subplots(1, len(ks), figsize=(3.6 * len(ks), 3.3), squeeze=False, sharey=True)
    for ax, k in zip(axes[0], ks):
        cell = sub[sub.k == k].sort_values("n")
        pos = np.arange(len(cell))
        bottom, neg = np.zeros(len(cell)), np.zeros(len(cell))
        for i, term in enumerate(terms):
            vals = cell[term].fillna(0.0).to_numpy()
            base = np.where(vals >= 0, bottom, neg)
            ax.bar(pos, vals, bottom=base, color=f"C{i}", label=term.replace("sharp_", "").replace("_", " "))
            bottom, neg = np.where(vals >= 0, bottom + vals, bottom), np.where(vals < 0, neg + vals, neg)
        ax.plot(pos, cell.sharp_bound, "D", color="k", mfc="white", ms=6, label="bound (sum of the terms)")
        ax.plot(pos, cell.search_ce, "ko-", ms=4, label="measured E H - log k")
        ax.axhline(2.0 / tau, color="0.4", ls="--", lw=1, label=r"trivial bound $2\beta$")
        ax.set_xticks(pos, [str(int(v)) for v in cell.n])
        ax.set_xlabel("training tuples $n$")
        ax.set_title(f"{model}, k = {int(k)}, tau = {tau:g}")
    axes[0, 0].set_ylabel("nats")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def fig_gap_vs_n(summary, tau_star: float, p_eff: float = 5.0, sphere: str = "vmf"):
    """The generalisation gap of ERM against n (vMF model, rows named ``sphere``), with the
    p_eff/n prediction.

    Args: table from :func:`~.tables.gap_summary`.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    vmf = summary[summary.model == sphere]
    q = normal_quantile(0.95)
    for i, ((tau, k), sub) in enumerate(vmf.groupby(["tau", "k"])):
        sub = sub.sort_values("n")
        label = f"tau = {tau:g}, k = {k}"
        ax1.errorbar(sub.n, sub.gap_cv, yerr=q * sub.gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3, label=label)
        ax2.errorbar(sub.n, sub.n_gap_cv, yerr=q * sub.n_gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3,
                     label=label)
    ns = np.array([vmf.n.min(), vmf.n.max()], dtype=float)
    ax1.plot(ns, p_eff / ns, "k--", label=f"{p_eff:g}/n (prediction at tau = {tau_star:g})")
    ax1.plot(ns, p_eff / ns[0] * np.sqrt(ns[0] / ns), "k:", label=r"slope $-1/2$ (reference)")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("training tuples $n$")
    ax1.set_ylabel("E[gap] (nats)")
    ax1.legend(fontsize="x-small")
    ax2.axhline(p_eff, color="k", ls="--")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("training tuples $n$")
    ax2.set_ylabel(r"$n \times$ E[gap]")
    fig.tight_layout()
    return fig
