"""Chapter 3's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt

from .runners import gap_summary

__all__ = ["embedding_label", "fig_gap_vs_tau", "fig_kl_vs_tau"]


def fig_gap_vs_tau(table):
    """Gap of the embeddings trained at each tau over several training sets: in nats (left) and
    divided by the loss's range ``B_k`` (right); means over sets with 95% t-intervals, the single
    sets as dots (table from :func:`~.runners.gap_across_taus`)."""
    summary = gap_summary(table)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col, lo, hi, lab in ((axes[0], "gap", "gap_low", "gap_high", "gap (nats)"),
                                 (axes[1], "gap_over_range", "ratio_low", "ratio_high", r"gap / $B_k$")):
        ax.plot(table["tau"], table[col], ".", color="0.6", ms=4, label="one training set")
        ax.errorbar(summary["tau"], summary[col], yerr=[summary[col] - summary[lo], summary[hi] - summary[col]],
                    fmt="o-", capsize=3, color="C0", label="mean, 95% interval")
        ax.set_xscale("log")
        ax.set_xlabel(r"temperature $\tau$")
        ax.set_ylabel(lab)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def fig_kl_vs_tau(table):
    """``E_x KL(Q_tau(x, .) || pi)`` against tau per embedding, with the uniform bound (table
    from :func:`~.runners.kl_sweep`)."""
    fig, ax = plt.subplots()
    for (name, t), marker in zip(table.groupby("embedding", sort=False), "osD^vPX*"):
        eb = ax.errorbar(t["tau"], t["kl"], yerr=[t["kl"] - t["kl_low"], t["kl_high"] - t["kl"]], fmt=marker,
                         ms=4, capsize=2, label=embedding_label(name))
        if t["closed_form"].notna().all():
            ax.plot(t["tau"], t["closed_form"], "-", color=eb[0].get_color(), lw=1)
    b = table.drop_duplicates("tau").sort_values("tau")
    ax.plot(b["tau"], b["bound"], "k-", lw=2, label=r"bound $\min(1/(2\tau^2), 2/\tau)$")
    ax.plot(b["tau"], b["sharp"], "k--", lw=1.5, label=r"exact supremum $\Psi(1/\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"$\mathrm{KL}(Q_\tau \,\|\, \pi)$ (nats)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def embedding_label(name: str) -> str:
    """An embedding's name with its spheres and spaces in mathematics (``"identity on S^15"`` ->
    ``"identity on $S^{15}$"``; ``"vmf"`` -> ``"vMF"``)."""
    name = re.sub(r"\b([SR])\^\{?(\w+)\}?", r"$\1^{\2}$", str(name))
    return re.sub(r"\bvmf\b", "vMF", name.replace("$R^{", r"$\mathbb{R}^{"))
