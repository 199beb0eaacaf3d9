"""Chapter 6, the figures: each ``fig_*`` draws one figure of the page from a runner's table
(:mod:`.runners`) and returns the matplotlib figure (the page glues it)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
from matplotlib.lines import Line2D

from ...datasets import digits
from ...experiment.style import (
    COLUMN_WIDTH_IN,
    LINESTYLES,
    MARKERS,
    PALETTE,
    legend_below,
    legend_in,
    palette,
    panel_grid,
)
from ...theory.stats import Estimate

__all__ = ["fig_training", "fig_trends", "fig_rate", "fig_search", "fig_kl", "fig_view", "fig_idea"]


def fig_training(trained: pd.DataFrame, *, title: str = ""):
    """The stopping rule's monitor: training risk (solid) and held-out risk (dashed) of every run
    against the steps, one panel per (tau, k)."""
    groups = list(trained.groupby(["tau", "k"]))
    n_runs = max(len(sub) for _, sub in groups)
    fig, axes, _ = panel_grid(len(groups), panel_height=2.4, extra_height=0.6 + 0.3 * (n_runs > 2))
    for j, (ax, ((tau, k), sub)) in enumerate(zip(axes, groups)):
        for i, (_, r) in enumerate(sub.iterrows()):
            every = max(1, len(r.curve_step) // 5)
            ax.plot(r.curve_step, r.curve_train, "-", marker=MARKERS[i % 10], markevery=every, ms=4,
                    color=f"C{i}", lw=1)
            ax.plot(r.curve_step, r.curve_heldout, "--", marker=MARKERS[i % 10], markevery=every, ms=4,
                    mfc="white", color=f"C{i}", lw=1)
        ax.set_title(rf"$\tau = {tau:g}$, $k = {k}$")
        if j >= len(groups) - 2:
            ax.set_xlabel("step")
        if j % 2 == 0:
            ax.set_ylabel("InfoNCE (nats)")
    handles = [Line2D([], [], color="k", ls="-", lw=1, label="training risk"),
               Line2D([], [], color="k", ls="--", lw=1, label="held-out risk")]
    handles += [Line2D([], [], color=f"C{i}", marker=MARKERS[i % 10], ms=5, lw=1.5, label=f"run {i + 1}")
                for i in range(n_runs)]
    legend_below(fig, handles, [h.get_label() for h in handles], ncol=min(4, len(handles)))
    if title:
        fig.suptitle(title)
    return fig


def fig_trends(table: pd.DataFrame, margin: float, *, title: str = ""):
    """Gap (95% t-intervals over seeds) and top-1 retrieval against the training k, per tau; and the
    paired change of the gap between the two largest k with its 90% interval inside the margin."""
    fig, axes, rest = panel_grid(3, panel_height=2.9)
    ks = sorted(table.k.unique())
    for i, (tau, sub) in enumerate(table.groupby("tau")):
        for ax, col in zip(axes[:2], ["gap", "top1"]):
            est = [Estimate.from_samples(sub[sub.k == k][col].to_numpy(), t=True) for k in ks]
            m = np.array([e.mean for e in est])
            ax.errorbar(ks, m, yerr=[m - [e.ci_low for e in est], [e.ci_high for e in est] - m],
                        fmt=MARKERS[i % 10], ls=LINESTYLES[i % 10], color=f"C{i}", ms=5, capsize=3,
                        label=rf"$\tau$ = {tau:g}")
        a, b = (sub[sub.k == k].set_index("seed").gap for k in ks[-2:])
        d = Estimate.from_samples((b - a).dropna().to_numpy(), 0.9, t=True)
        axes[2].errorbar([i], [d.mean], yerr=[[d.mean - d.ci_low], [d.ci_high - d.mean]], fmt=MARKERS[i % 10],
                         color=f"C{i}", ms=6, capsize=4)
    axes[0].axhline(0.0, color="k", lw=0.8)
    axes[1].axhline(float(table.chance.iloc[0]), color="k", ls=":", label="chance")
    for ax, lab in zip(axes[:2], ["gap (nats)", "top-1 retrieval"]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("training negatives $k$")
        ax.set_ylabel(lab)
    axes[0].set_title("held-out $-$ training")
    axes[1].set_title("held-out images")
    axes[2].axhspan(-margin, margin, color="0.85", label=rf"margin $\pm\varepsilon_{{\mathrm{{eq}}}}$ = $\pm${margin:g}")
    axes[2].axhline(0.0, color="k", lw=0.8)
    taus = sorted(table.tau.unique())
    axes[2].set_xticks(range(len(taus)), [rf"$\tau$ = {t:g}" for t in taus])
    axes[2].set_xlim(-0.7, len(taus) - 0.3)
    axes[2].set_ylabel("change of the gap (nats)")
    axes[2].set_title(f"gap at $k = {ks[-1]}$ $-$ at $k = {ks[-2]}$")
    h1, l1 = axes[1].get_legend_handles_labels()
    h2, l2 = axes[2].get_legend_handles_labels()
    legend_in(rest[0], h1 + h2, l1 + l2)
    if title:
        fig.suptitle(title)
    return fig


def fig_rate(rates: list, *, title: str = ""):
    """``|L_k - log k - L_inf|`` on the learned embedding against k (95% bootstrap intervals), with
    the plug-in prediction ``|c1/k + c2/k^2|`` (line) and ``|c1|/k`` (dotted); one colour per tau."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.8), layout="constrained")
    curves, low, high = [], [], []
    for i, rate in enumerate(rates):
        tau, k = float(rate.tau.iloc[0]), rate.k.to_numpy(float)
        sign = np.sign(rate.c1.iloc[0]) or 1.0
        y, lo, hi = sign * rate.bias, sign * rate.bias_low, sign * rate.bias_high
        lo_c, hi_c = np.minimum(lo, hi), np.maximum(lo, hi)
        low.append(float(np.min(lo_c)))
        high.append(float(np.max(hi_c)))
        ax.errorbar(k, y, yerr=[np.clip(y - lo_c, 0, None), np.clip(hi_c - y, 0, None)], fmt=MARKERS[i], ms=5,
                    capsize=2, color=f"C{i}", label=rf"measured, $\tau = {tau:g}$")
        c1, c2 = rate.c1.iloc[0], rate.c2.iloc[0]
        kk = np.geomspace(k.min(), k.max(), 200)
        curves.append((kk, sign * (c1 / kk + c2 / kk**2), abs(c1) / kk, f"C{i}", i == 0))
    # the predictions are drawn only inside the range of the measurements (at small k the plug-in
    # two-term expansion leaves its range of validity and would dive off the plot)
    lowest, highest = min(low), max(high)  # padded by a factor (the axis is logarithmic away from 0)
    bottom = lowest / 2 if lowest > 0 else 1.5 * lowest - 1e-4
    top = 1.5 * highest if highest > 0 else highest / 2 + 1e-4
    for kk, two_term, one_term, colour, first in curves:
        for yy, ls, label in ((two_term, "-", r"prediction $c_1/k + c_2/k^2$ (plug-in)"),
                              (one_term, ":", r"first term $|c_1|/k$")):
            ax.plot(kk, np.where((yy >= bottom) & (yy <= top), yy, np.nan), ls, color=colour, lw=1,
                    label=label if first else None)
    ax.set_xscale("log", base=2)
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_ylim(bottom, top)
    ax.set_xlabel("negatives $k$")
    ax.set_ylabel(r"$\pm(L_k - \log k - L_\infty)$ (nats)")
    legend_below(fig, ncol=2)
    if title:
        ax.set_title(title)
    return fig


def fig_search(rates: dict, *, title: str = ""):
    """The learned softmax search over k unseen held-out items: top-1 retrieval of the positive
    (left) and the retrieval cross-entropy ``L_k - log k`` with its limit ``L_inf`` (right, dashed),
    95% bootstrap intervals over images; one colour per training tau."""
    fig, axes = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 3.6), layout="constrained")
    for i, (tau, rate) in enumerate(rates.items()):
        for ax, col in zip(axes, ["top1", "xent"]):
            ax.errorbar(rate.k, rate[col], yerr=[rate[col] - rate[f"{col}_low"], rate[f"{col}_high"] - rate[col]],
                        fmt=MARKERS[i % 10], ls=LINESTYLES[i % 10], ms=5, capsize=2, color=f"C{i}",
                        label=rf"trained at $\tau$ = {tau:g}")
        axes[1].axhline(float(rate.linf.iloc[0]), color=f"C{i}", ls="--", lw=1)
    for ax, lab in zip(axes, ["top-1 retrieval", r"$L_k - \log k$ (nats)"]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("database size $k$")
        ax.set_ylabel(lab)
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=2)
    if title:
        fig.suptitle(title)
    return fig


def fig_kl(kls: dict, *, title: str = ""):
    """``KL(Q_tau(x, .) || pi)`` of learned embeddings' softmax searches against tau (95% bootstrap
    intervals), with the bound ``min(1/(2 tau^2), 2/tau)``. ``kls``: {training tau: table}."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.4), layout="constrained")
    for i, (tau_train, kl) in enumerate(kls.items()):
        ax.errorbar(kl.tau, kl.kl, yerr=[kl.kl - kl.kl_low, kl.kl_high - kl.kl], fmt=MARKERS[i % 10],
                    ls=LINESTYLES[(i + 1) % 10], ms=5, capsize=2, color=f"C{i}",
                    label=rf"trained at $\tau$ = {tau_train:g}")
    b = next(iter(kls.values()))
    ax.plot(b.tau, b.bound, "k-", lw=2, label=r"bound $\min(1/(2\tau^2), 2/\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"temperature $\tau$ of the search")
    ax.set_ylabel(r"$\mathrm{KL}(Q_\tau \,\|\, \pi)$ (nats)")
    legend_below(fig, ncol=2)
    if title:
        ax.set_title(title)
    return fig


def fig_view(view, *, title: str = ""):
    """Scatter of the 2-D PCA view of held-out digits' embeddings (the table of
    :func:`~.runners.view`), coloured by class."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 5.0), layout="constrained")
    digits = sorted(view.label.unique())
    sns.scatterplot(data=view, x="pc1", y="pc2", hue="label", style="label", palette=palette(len(digits)),
                    markers=list(MARKERS[: len(digits)]), s=22, ax=ax, legend="full")
    handles, labels = ax.get_legend_handles_labels()
    ax.get_legend().remove()
    legend_below(fig, handles, labels, ncol=5, title="digit", markerscale=1.5, columnspacing=1.2)
    ax.set_xlabel("first principal component")
    ax.set_ylabel("second principal component")
    if title:
        ax.set_title(title)
    return fig


def fig_idea(k: int = 7, tau: float = 0.1, seed: int = 0):
    """The chapter's idea in one picture: the digits task as a search. A query (an augmented
    digit), a database of ``k + 1`` items (another augmentation of the same image, the positive,
    planted among augmentations of ``k`` other images), and the softmax search's weights
    ``Q_k(x, x_j)`` at temperature ``tau`` with raw pixels, normalised, as the embedding (before any
    training). Deterministic in ``seed`` (its own generator; global random state untouched).

    Raises:
        ValueError: ``k`` not an integer in 1..12, or ``tau <= 0``.
    """
    if int(k) != k or not 1 <= k <= 12:
        raise ValueError(f"fig_idea: k must be an integer in 1..12, got {k!r}")
    if not tau > 0:
        raise ValueError(f"fig_idea: tau must be > 0, got {tau!r}")
    images, labels = digits.load_digits()
    gen = torch.Generator().manual_seed(seed)
    pick = torch.randperm(images.shape[0], generator=gen)
    anchor_image = pick[0]
    others = [int(i) for i in pick[1:] if labels[i] != labels[anchor_image]][:k]
    views = digits.augment(images[[int(anchor_image)] * 2 + others], gen)
    order = torch.randperm(k + 1, generator=gen)  # where the positive sits in the database
    database = views[1:][order]
    emb = torch.nn.functional.normalize(views.flatten(1), dim=1)
    q = torch.softmax(emb[1:][order] @ emb[0] / tau, 0).numpy()
    positive = int((order == 0).nonzero()[0, 0])
    colors = sns.color_palette(PALETTE)
    per_row = -(-(k + 1) // 2)  # the database in two rows
    fig = plt.figure(figsize=(COLUMN_WIDTH_IN, 4.6), layout="constrained")
    grid = fig.add_gridspec(3, per_row + 2, height_ratios=[1, 1, 1.5], width_ratios=[1.6, 0.6] + [1] * per_row)
    ax = fig.add_subplot(grid[0:2, 0])
    ax.imshow(views[0].numpy(), cmap="gray_r", vmin=0, vmax=1)
    ax.set_title(r"query $x$")
    ax.set_xticks([])
    ax.set_yticks([])
    arrow = fig.add_subplot(grid[0:2, 1])
    arrow.axis("off")
    arrow.text(0.5, 0.5, r"$\longrightarrow$", fontsize=20, ha="center", va="center", transform=arrow.transAxes)
    row = [fig.add_subplot(grid[j // per_row, 2 + j % per_row]) for j in range(k + 1)]
    for j, ax in enumerate(row):
        ax.imshow(database[j].numpy(), cmap="gray_r", vmin=0, vmax=1)
        ax.set_title(r"$x^+$" if j == positive else rf"$x^-_{{{j + 1 - (j > positive)}}}$",
                     color=colors[2] if j == positive else "k", fontsize=12, pad=2)
        ax.set_xticks([])
        ax.set_yticks([])
        if j == positive:  # the positive framed, so that it stands out without colour
            for side in ax.spines.values():
                side.set(visible=True, color=colors[2], lw=2.5)
    bx = fig.add_subplot(grid[2, :])
    bar_colors = [colors[2] if j == positive else colors[0] for j in range(k + 1)]
    bx.bar(range(k + 1), q, color=bar_colors, edgecolor="k", lw=0.5,
           hatch=["//" if j == positive else "" for j in range(k + 1)])
    bx.set_xlim(-0.5, k + 0.5)
    bx.set_xticks(range(k + 1), [r"$x^+$" if j == positive else rf"$x^-_{{{j + 1 - (j > positive)}}}$"
                                 for j in range(k + 1)])
    bx.set_ylabel(r"$\hat Q_k(x, \cdot)$")
    bx.set_title(rf"the search's weights (raw pixels, $\tau = {tau:g}$):" + "\nInfoNCE trains it to find $x^+$")
    return fig
