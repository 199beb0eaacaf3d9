"""Chapter 5's figures: the bounds against n (claim C6), the terms of the sharp bound, and the
generalisation gap of ERM against n (claim C7). Each takes a summary table of :mod:`~.tables` and
returns a matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.lines import Line2D

from ...experiment.style import COLUMN_WIDTH_IN, LINESTYLES, MARKERS, PALETTE, legend_below, legend_in, panel_grid
from ...theory.stats import normal_quantile

__all__ = ["fig_bounds_vs_n", "fig_certificates_vs_k", "fig_gap_vs_k", "fig_theorem1_terms", "fig_gap_vs_n",
           "fig_direct_slack", "fig_idea"]


#: The lines of :func:`fig_bounds_vs_n`: (column, label, marker, line style, colour). Each has
#: its own marker and line style, so that the five read apart in greyscale (the captions name
#: them by marker).
_BOUND_LINES = (("sharp_bound", "sharp uniform bound", "o", "-", "C0"),
                ("pb_bound", "PAC-Bayes-kl (randomised)", "v", (0, (3, 1, 1, 1, 1, 1)), "C4"),
                ("bern_bound", "PAC-Bayes-Bernstein (randomised)", "^", (0, (1, 1)), "C2"),
                ("det_bound", "derandomised (trained embedding)", "D", (0, (6, 2)), "C1"),
                ("ho_bound", "hold-out (trained on half)", "s", "--", "C5"))


#: The models as the page names them.
_MODEL_NAMES = {"vmf": "vMF", "gaussian": "Gaussian", "student_t": "Student $t$"}


def fig_bounds_vs_n(summary, model: str = "vmf"):
    """The bounds and certificates against n with the baselines a reader would use: the uniform
    search (0), the oracle (the identity) and the range cap ``2 beta``; one panel per k (columns)
    and tau (rows); log n axis, nats. The old bound (tens to hundreds of nats) is left to the
    table.

    Args: table from :func:`~.tables.bound_summary`.
    """
    sub = summary[summary.model == model]
    taus, ks = sorted(sub.tau.unique()), sorted(sub.k.unique())
    cells = [(tau, k) for tau in taus for k in ks
             if (sub[np.isclose(sub.tau, tau) & (sub.k == k)].n.nunique() >= 2)]
    fig, axes, _ = panel_grid(max(len(cells), 1), panel_height=2.7, extra_height=1.4, sharex=True)
    for i, (ax, (tau, k)) in enumerate(zip(axes, cells)):
        cell = sub[np.isclose(sub.tau, tau) & (sub.k == k)].sort_values("n")
        for col, label, marker, ls, colour in _BOUND_LINES:
            if col in cell and cell[col].notna().any():
                ax.plot(cell.n, cell[col], marker=marker, ls=ls, color=colour, ms=5, mfc="white", mew=1.5,
                        label=label)
        ax.plot(cell.n, cell.search_ce, "kx:", ms=6, lw=1.5, label=r"measured $\mathbb{E}H - \log k$")
        ax.plot(cell.n, cell.oracle_measured, color="0.3", ls="-.", lw=1, label="oracle (the identity)")
        ax.axhline(0.0, color="k", lw=1.2, label="uniform search")
        ax.axhline(2.0 / tau, color="0.5", ls="--", lw=1, label=r"range cap $2\beta$")
        ax.set_xscale("log", base=2)
        ax.set_ylim(min(-0.6, float(cell.oracle_measured.min()) - 0.1), 2.0 / tau + 0.3)
        ax.set_title(rf"$k = {int(k)}$, $\tau = {tau:g}$")
        if i >= len(cells) - 2:
            ax.set_xlabel(r"training tuples $n$")
        if i % 2 == 0:
            ax.set_ylabel("nats")
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=2)
    return fig


def fig_certificates_vs_k(summary, n: int, tau: float, model: str = "vmf"):
    """At one (n, tau): left, the slack (certificate minus the measured value of the embedding it
    certifies) of each certificate against k, with ``b*_k``; right, the variances of
    ``l_k - log k`` and ``l^dec - log k`` against k. Log k axes, nats.

    Args: table from :func:`~.tables.bound_summary`.
    """
    sub = summary[(summary.model == model) & (summary.n == n) & np.isclose(summary.tau, tau)].sort_values("k")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 4.6), layout="constrained")
    for col, label, marker, ls, colour in _BOUND_LINES[1:]:
        slack = f"{col.split('_')[0]}_slack"
        if slack in sub and sub[slack].notna().any():
            ax1.plot(sub.k, sub[slack], marker=marker, ls=ls, color=colour, ms=5, mfc="white", mew=1.5, label=label)
    ax1.plot(sub.k, sub.bias_sharp, "k:", marker="x", label=r"$b^\star_k$ (sharp search bias)")
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel(r"negatives $k$")
    ax1.set_ylabel("slack (nats)")
    ax1.set_ylim(bottom=0)
    ax1.set_title("certificate $-$ measured,\n" + rf"$n = {n:,}$, $\tau = {tau:g}$")
    ax2.plot(sub.k, sub.var_std, "o-", color="C0", label=r"$\mathrm{Var}(\ell_k - \log k)$")
    ax2.plot(sub.k, sub.var_dec, "s--", color="C3", label=r"$\mathrm{Var}(\ell^{\mathrm{dec}}_k - \log k)$")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel(r"negatives $k$")
    ax2.set_ylabel(r"nats$^2$")
    ax2.set_title("the spread\nof the loss")
    handles, labels = ax1.get_legend_handles_labels()
    handles2, labels2 = ax2.get_legend_handles_labels()
    legend_below(fig, handles + handles2, labels + labels2, ncol=2)
    return fig


def fig_gap_vs_k(table, margin: float, p_eff: float = 5.0):
    """``n`` times the gap of exact ERM against k, one line per seed (grey) and the mean with a
    95% interval over seeds (black), with the prediction ``p_eff`` and the band that the declared
    margin allows around the mean at the smallest k.

    Args: table from :func:`~.gap_sweep.gap_k_sweep`.
    """
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.2), layout="constrained")
    for _, sub in table.groupby("seed"):
        sub = sub.sort_values("k")
        ax.plot(sub.k, sub.n_gap_cv, color="0.75", lw=0.8)
    g = table.groupby("k").n_gap_cv
    mean, se = g.mean(), g.std() / np.sqrt(g.count())
    q = normal_quantile(0.95)
    ax.errorbar(mean.index, mean, yerr=q * se, fmt="ko-", capsize=3, label="mean over seeds (95% interval)")
    ax.axhline(p_eff, color="C0", ls="--", label=rf"prediction $p_{{\mathrm{{eff}}}} = {p_eff:g}$")
    ks = np.array(sorted(table.k.unique()), dtype=float)
    drift = margin * np.log2(ks / ks[0])
    ax.fill_between(ks, mean.iloc[0] - drift, mean.iloc[0] + drift, color="C2", alpha=0.15,
                    label="allowed by the margin")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(r"negatives $k$")
    ax.set_ylabel(r"$n \times$ gap of ERM")
    ax.set_title(rf"exact ERM, $n = {int(table.n.iloc[0]):,}$, nested negatives")
    handles, labels = ax.get_legend_handles_labels()
    legend_below(fig, [Line2D([], [], color="0.75", lw=0.8)] + handles, ["one seed"] + labels, ncol=2)
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
    fig, axes, rest = panel_grid(len(ks), panel_height=3.0, extra_height=0.0 if len(ks) % 2 else 1.5, sharey=True)
    for ax, k in zip(axes, ks):
        cell = sub[sub.k == k].sort_values("n")
        pos = np.arange(len(cell))
        bottom, neg = np.zeros(len(cell)), np.zeros(len(cell))
        for i, term in enumerate(terms):
            vals = cell[term].fillna(0.0).to_numpy()
            base = np.where(vals >= 0, bottom, neg)
            ax.bar(pos, vals, bottom=base, color=f"C{i}", hatch=("", "//", "..", "xx")[i], edgecolor="white",
                   label=term.replace("sharp_", "").replace("_", " "))
            bottom, neg = np.where(vals >= 0, bottom + vals, bottom), np.where(vals < 0, neg + vals, neg)
        ax.plot(pos, cell.sharp_bound, "D", color="k", mfc="white", ms=6, label="bound (sum of the terms)")
        ax.plot(pos, cell.search_ce, "ko-", ms=4, label=r"measured $\mathbb{E}H - \log k$")
        ax.axhline(2.0 / tau, color="0.4", ls="--", lw=1, label=r"range cap $2\beta$")
        ax.axhline(0.0, color="k", lw=1.2, label="uniform search")
        ax.set_xticks(pos, [str(int(v)) for v in cell.n])
        ax.set_xlabel("training tuples $n$")
        ax.set_title(rf"{_MODEL_NAMES.get(model, model)}, $k = {int(k)}$, $\tau = {tau:g}$")
    for ax in axes[::2]:
        ax.set_ylabel("nats")
    handles, labels = axes[0].get_legend_handles_labels()
    if rest:
        legend_in(rest[0], handles, labels)
    else:
        legend_below(fig, handles, labels, ncol=2)
    return fig


def fig_gap_vs_n(summary, tau_star: float, p_eff: float = 5.0, sphere: str = "vmf"):
    """The generalisation gap of ERM against n (vMF model, rows named ``sphere``), with the
    p_eff/n prediction.

    Args: table from :func:`~.tables.gap_summary`.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 4.8), layout="constrained")
    vmf = summary[summary.model == sphere]
    q = normal_quantile(0.95)
    for i, ((tau, k), sub) in enumerate(vmf.groupby(["tau", "k"])):
        sub = sub.sort_values("n")
        label = rf"$\tau = {tau:g}$, $k = {k}$"
        marker = "osD^v"[i % 5]
        ls = ("-", "-.", ":", "-", "-.")[i % 5]
        ax1.errorbar(sub.n, sub.gap_cv, yerr=q * sub.gap_cv_se, fmt=marker + ls, color=f"C{i}", ms=5, capsize=3,
                     label=label)
        ax2.errorbar(sub.n, sub.n_gap_cv, yerr=q * sub.n_gap_cv_se, fmt=marker + ls, color=f"C{i}", ms=5, capsize=3,
                     label=label)
    ns = np.array([vmf.n.min(), vmf.n.max()], dtype=float)
    ax1.plot(ns, p_eff / ns, "k--", label=rf"${p_eff:g}/n$ (prediction at $\tau = {tau_star:g}$)")
    ax1.plot(ns, p_eff / ns[0] * np.sqrt(ns[0] / ns), "k:", label=r"slope $-1/2$ (reference)")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("training tuples $n$")
    ax1.set_ylabel(r"$\mathbb{E}[\mathrm{gap}]$ (nats)")
    ax2.axhline(p_eff, color="k", ls="--")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("training tuples $n$")
    ax2.set_ylabel(r"$n \times \mathbb{E}[\mathrm{gap}]$")
    handles, labels = ax1.get_legend_handles_labels()
    legend_below(fig, handles, labels, ncol=2)
    return fig


def _circle(ax, centre, radius, **style):
    t = np.linspace(0, 2 * np.pi, 200)
    ax.plot(centre[0] + radius * np.cos(t), centre[1] + radius * np.sin(t), **style)


def fig_idea():
    """The chapter's idea in one picture (a diagram, no data): in the parameter plane, a uniform
    bound pays for the worst parameter of the class $\\Theta$ (left); a PAC-Bayes certificate pays
    for the relative entropy of a posterior around the trained parameters to a prior fixed in
    advance, and a curvature step carries it back to the trained parameters (right)."""
    colors = sns.color_palette(PALETTE)
    fig, axes = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 3.4), layout="constrained")
    trained, worst = np.array([0.28, 0.18]), np.array([-0.72, -0.69])
    for ax in axes:
        ax.fill(np.cos(np.linspace(0, 2 * np.pi, 200)), np.sin(np.linspace(0, 2 * np.pi, 200)),
                color="0.93", zorder=0)
        _circle(ax, (0, 0), 1.0, color="0.4", lw=1.2)
        ax.annotate(r"the class $\Theta$", (0.0, -1.0), xytext=(-0.45, -1.25))
        ax.scatter(*trained, marker="*", s=160, color="k", zorder=4)
        ax.annotate(r"$\hat\theta$", trained, xytext=(trained[0] + 0.08, trained[1] - 0.2))
        ax.set_aspect("equal")
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.4, 1.3)
        ax.set_xticks([])
        ax.set_yticks([])
    left, right = axes
    left.scatter(*worst, marker="X", s=90, color=colors[3], zorder=4)
    left.annotate("the worst\nparameter", worst, xytext=(-1.2, 0.4), color=colors[3],
                  arrowprops={"arrowstyle": "->", "color": colors[3]})
    left.set_title("uniform bound: pays for\n" + r"the worst $\theta \in \Theta$")
    for r in (0.3, 0.6, 0.9):
        _circle(right, (0, 0), r, color=colors[0], ls="--", lw=1)
    box = {"fc": "white", "ec": "none", "alpha": 0.85, "pad": 1.5}
    right.annotate("prior $\\mathcal{P}$, fixed\nin advance", (0.0, 0.9), xytext=(-1.2, -0.95), color=colors[0],
                   bbox=box)
    for r in (0.06, 0.12):
        _circle(right, trained, r, color=colors[2], lw=1.5)
    right.annotate(r"posterior $\varrho$", trained + 0.1, xytext=(0.0, 0.72),
                   color=colors[2], bbox=box, arrowprops={"arrowstyle": "->", "color": colors[2]})
    right.annotate("", xy=trained, xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": colors[1], "lw": 1.5})
    right.annotate("price\n" + r"$\mathrm{KL}(\varrho\,\Vert\,\mathcal{P})/n$", (0.1, 0.05), xytext=(-1.2, -0.1),
                   color=colors[1], bbox=box)
    right.set_title("PAC-Bayes: pays for\n" + r"$\varrho$'s distance to $\mathcal{P}$")
    return fig


def fig_direct_slack(slack, theorem1=None):
    """Top: where the slack of each direct certificate goes (stacked bars, nats; the table of
    :func:`~.tables.direct_slack_table`), each part with its own hatch. Bottom (when ``theorem1`` is
    given, the table of :func:`~.theorem1_n.theorem1_against_n`): the sharp uniform bound and its
    terms against n at the headline cell, with the uniform search's 0."""
    n_panels = 1 if theorem1 is None else 2
    fig, grid = plt.subplots(n_panels, 1, figsize=(COLUMN_WIDTH_IN, 4.0 * n_panels), squeeze=False,
                             layout="constrained")
    ax = grid[0, 0]
    parts = [p for p in slack.index if not p.startswith("total")]
    names = ("empirical minus measured", "variance term", "relative entropy", "confidence and grids",
             "Monte Carlo step", "derandomisation")
    short = dict(zip(parts, names))
    colors = sns.color_palette(PALETTE, len(parts))
    hatches = ("", "//", "..", "xx", "\\\\", "--")
    bottom = np.zeros(len(slack.columns))
    for i, p in enumerate(parts):
        v = slack.loc[p].to_numpy(float)
        ax.bar(range(len(slack.columns)), v, bottom=bottom, label=short[p], color=colors[i],
               hatch=hatches[i % len(hatches)], edgecolor="black", linewidth=0.5)
        bottom += v
    ax.set_xticks(range(len(slack.columns)), [c.replace(", ", ",\n") for c in slack.columns])
    ax.axhline(0, color="black", lw=0.8)
    ax.set_ylabel("nats")
    ax.set_title("slack of the direct certificates")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2, frameon=False)
    if theorem1 is not None:
        ax = grid[1, 0]
        t = theorem1.sort_values("n")
        series = (("bound", "sharp bound"), ("complexity", "complexity $2R_n$"), ("confidence", "confidence"),
                  ("empirical_risk", r"empirical risk $-\log k$"))
        for i, (col, label) in enumerate(series):
            ax.plot(t.n, t[col], marker=MARKERS[i], ls=LINESTYLES[i], color="black" if i == 0 else None,
                    label=label)
        ax.axhline(0, color="grey", lw=1.0, ls=":", label="uniform search")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("$n$")
        ax.set_ylabel(r"$\mathbb{E}H - \log k$ (nats)")
        ax.set_title("Theorem 1 against $n$")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    return fig
