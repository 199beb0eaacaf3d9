"""Chapter 3's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from ...experiment.style import COLUMN_WIDTH_IN, legend_below
from .runners import gap_summary

__all__ = ["embedding_label", "fig_gap_vs_tau", "fig_kl_vs_tau", "fig_idea"]


def fig_gap_vs_tau(table):
    """Gap of the embeddings trained at each tau over several training sets: in nats (left) and
    divided by the loss's range ``B_k`` (right); means over sets with 95% t-intervals, the single
    sets as dots (table from :func:`~.runners.gap_across_taus`)."""
    summary = gap_summary(table)
    fig, axes = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 3.4), layout="constrained")
    for ax, col, lo, hi, lab in ((axes[0], "gap", "gap_low", "gap_high", "gap (nats)"),
                                 (axes[1], "gap_over_range", "ratio_low", "ratio_high", r"gap / $B_k$")):
        ax.plot(table["tau"], table[col], ".", color="0.55", ms=5, label="one training set")
        ax.errorbar(summary["tau"], summary[col], yerr=[summary[col] - summary[lo], summary[hi] - summary[col]],
                    fmt="o-", capsize=3, color="C0", label="mean, 95% interval")
        ax.set_xscale("log")
        ax.set_xlabel(r"temperature $\tau$")
        ax.set_ylabel(lab)
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=2)
    return fig


def fig_kl_vs_tau(table):
    """``E_x KL(Q_tau(x, .) || pi)`` against tau per embedding, with the uniform bound (table
    from :func:`~.runners.kl_sweep`)."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.8), layout="constrained")
    for (name, t), marker, ls in zip(table.groupby("embedding", sort=False), "osD^vPX*", (":", "-.", (0, (1, 1)), ":")):
        eb = ax.errorbar(t["tau"], t["kl"], yerr=[t["kl"] - t["kl_low"], t["kl_high"] - t["kl"]], fmt=marker,
                         ms=5, capsize=2, label=embedding_label(name))
        if t["closed_form"].notna().all():
            ax.plot(t["tau"], t["closed_form"], ls=ls, color=eb[0].get_color(), lw=1)
    b = table.drop_duplicates("tau").sort_values("tau")
    ax.plot(b["tau"], b["bound"], "k-", lw=2, label=r"bound $\min(1/(2\tau^2), 2/\tau)$")
    ax.plot(b["tau"], b["sharp"], "k--", lw=1.5, label=r"exact supremum $\Psi(1/\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"$\mathrm{KL}(Q_\tau \,\|\, \pi)$ (nats)")
    legend_below(fig, ncol=2)
    return fig


def embedding_label(name: str) -> str:
    """An embedding's name with its spheres and spaces in mathematics (``"identity on S^15"`` ->
    ``"identity on $S^{15}$"``; ``"vmf"`` -> ``"vMF"``)."""
    name = re.sub(r"\b([SR])\^\{?(\w+)\}?", r"$\1^{\2}$", str(name))
    return re.sub(r"\bvmf\b", "vMF", name.replace("$R^{", r"$\mathbb{R}^{"))


def fig_idea(taus=(2.0, 0.5, 0.2)):
    """The chapter's idea in one picture (a diagram, not a measurement): on the sphere ``S^2``
    with the identity embedding, the density of the softmax search ``Q_tau(x, .)`` with respect
    to the data ``pi``, as a function of the cosine ``t = <x, y>`` (uniform on [-1, 1] under
    ``pi``): ``e^{t/tau} / Z(1/tau)`` with ``Z(b) = sinh(b)/b``. Each curve is labelled with its
    ``KL(Q_tau || pi) = b coth(b) - 1 - log(sinh(b)/b)``, ``b = 1/tau``, and with the bound
    ``min(1/(2 tau^2), 2/tau)`` of Theorem c3-thm-kl, computed here in closed form.

    Args:
        taus: the temperatures drawn (each > 0).
    Raises:
        ValueError: a temperature not positive.
    """
    if not all(tau > 0 for tau in taus):
        raise ValueError(f"fig_idea: every temperature must be > 0, got {taus}")
    colours = sns.color_palette("colorblind")
    styles = ("-", "--", "-.", ":")
    markers = ("o", "s", "^", "D")
    t = np.linspace(-1, 1, 201)
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 5.0), layout="constrained")
    ax.axhline(1.0, color="k", lw=1.5)
    ax.text(-0.98, 1.15, r"data $\pi$ (density 1)", fontsize=11)
    for i, tau in enumerate(taus):
        b = 1.0 / tau
        log_z = np.log(np.sinh(b) / b)
        density = np.exp(b * t - log_z)
        kl = b / np.tanh(b) - 1 - log_z
        bound = min(0.5 * b**2, 2 * b)
        ax.plot(t, density, styles[i % 4], marker=markers[i % 4], markevery=25, ms=5, color=colours[i], lw=2,
                label=rf"$\tau = {tau:g}$: KL $= {kl:.2f}$ (bound ${bound:.2f}$)")
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ticks = [10.0**e for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)]
    ax.set_yticks(ticks, [f"{v:g}" for v in ticks])  # 0.001, ..., 1, 10: not powers written 10^e
    ax.set_ylim(lo, hi)
    ax.set_xlim(-1, 1)
    ax.set_xlabel("similarity $t = \\langle x, y\\rangle$ of a database item $y$\nto the query $x$")
    ax.set_ylabel(r"$\mathrm{d}Q_\tau(x, \cdot)/\mathrm{d}\pi$ at $y$")
    ax.set_title("a lower temperature sharpens the search:\n"
                 + r"$Q_\tau(x, \mathrm{d}y) \propto e^{\langle x, y\rangle/\tau}\pi(\mathrm{d}y)$")
    legend_below(fig, ncol=1)
    return fig

