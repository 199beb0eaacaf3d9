"""Chapter 2's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

__all__ = ["fig_gaussian", "fig_k_gap", "fig_retrieval_accuracy", "fig_search_vs_risk"]


def fig_search_vs_risk(tables: dict):
    """Both sides of Theorem c2-thm-search against k, one panel per model (``{name: table}``, tables
    from :func:`~.runners.exact_curve`)."""
    fig, axes = plt.subplots(1, len(tables), figsize=(6.4 * len(tables) / 1.4, 4.0), squeeze=False)
    for ax, (name, t) in zip(axes[0], tables.items()):
        ax.plot(t["k"], t["search_ce"], "o-", ms=3, label=r"$\mathbb{E}[H(\hat M_k, \hat Q_k)] - \log k$")
        ax.plot(t["k"], t["risk"], "s--", ms=3, label=r"$L_k - \log k$")
        ax.axhline(t["limit"].iloc[0], color="grey", lw=1, ls=":", label=r"$L_\infty$")
        ax.set_xscale("log")
        ax.set_xlabel("database size / negatives $k$")
        ax.set_ylabel("nats")
        ax.set_title(name)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def fig_k_gap(tables: dict):
    """``k (E[H] - L_k)`` against k with the limits ``d1`` (dashed), one line per model."""
    fig, ax = plt.subplots()
    for (name, t), marker in zip(tables.items(), "osD^v"):
        line, = ax.plot(t["k"], t["k_gap"], marker + "-", ms=4, label=name)
        ax.axhline(t["d1"].iloc[0], color=line.get_color(), ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("database size / negatives $k$")
    ax.set_ylabel(r"$k\,(\mathbb{E}[H(\hat M_k,\hat Q_k)] - L_k)$ (nats)")
    ax.legend()
    return fig


def fig_retrieval_accuracy(table):
    """Top-1 and top-5 retrieval of the positive among k unseen items, ideal vs softmax search
    (table from :func:`~.runners.retrieval`)."""
    fig, ax = plt.subplots()
    for (search, style) in (("ideal", "-"), ("softmax", "--")):
        t = table[table.search == search]
        ax.errorbar(t["k"], t["top1"], yerr=[t["top1"] - t["top1_low"], t["top1_high"] - t["top1"]],
                    fmt="o" + style, ms=3, capsize=2, label=f"top-1, {search} search")
        ax.plot(t["k"], t["top5"], "s" + style, ms=3, alpha=0.7, label=f"top-5, {search} search")
    ideal = table[table.search == "ideal"]
    ax.plot(ideal["k"], ideal["top1_exact"], "k:", lw=1.5, label="top-1, ideal, exact")
    ax.set_xscale("log")
    ax.set_xlabel("number of unseen items $k$")
    ax.set_ylabel("retrieval accuracy")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def fig_gaussian(table: pd.DataFrame, *, title: str = ""):
    """``|k (E H - L_k)|`` of the Gaussian model against k, with the model-specific and the
    uniform constants of Theorem ``c2-thm-search`` and the limit ``|d1|`` (table from
    :func:`~.runners.gaussian_gap`)."""
    fig, ax = plt.subplots()
    ax.plot(table["k"], table["k_gap"].abs(), "ko-", ms=3, label=r"exact $|k\,(\mathbb{E}H - L_k)|$")
    ax.axhline(abs(table["d1"].iloc[0]), color="grey", ls=":", label=r"$|d_1|$")
    ax.axhline(table["model_constant"].iloc[0], ls="--", label=r"bound, model moments")
    ax.axhline(table["uniform_constant"].iloc[0], ls="-.", label=r"bound, uniform $C_H(\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("database size / negatives $k$")
    ax.set_ylabel("nats")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
