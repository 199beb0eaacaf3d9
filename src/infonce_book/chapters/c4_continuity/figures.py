"""Chapter 4's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from ...experiment.style import COLUMN_WIDTH_IN, PALETTE, legend_below, legend_in, panel_grid
from ...theory.stats import Estimate, normal_quantile

__all__ = ["fig_continuity_ratios", "fig_dimension_sweep", "fig_idea", "fig_lipschitz_vs_k", "fig_rademacher_sweeps",
           "fig_temperature_sweep"]


_KIND_STYLE = {"average": ("C0", "o", "average form"), "max": ("C1", "s", "max form"),
               "dv": ("C2", "^", "Donsker-Varadhan form"), "embedding": ("C3", "D", r"embedding form ($\Lambda_\star$)")}
#: The line style of each form (greyscale: marker and line style tell the forms apart).
_KIND_LS = {"average": "-", "max": "--", "dv": ":", "embedding": "-."}

#: The models and inputs as the page names them.
_NAMES = {"gaussian": "Gaussian", "vmf": "vMF", "student_t": "Student $t$", "sphere": "sphere"}


def _name(code: str) -> str:
    """A model's or input law's name for a reader (``"student_t"`` -> ``"Student $t$"``)."""
    return _NAMES.get(str(code), str(code).replace("_", " "))


def fig_continuity_ratios(table, tau: float):
    """Mean ratio bound/actual change against k (log-log), one panel per (model, perturbation), at
    temperature ``tau`` (in the titles).

    Args: table from :func:`~.runners.perturbations`.
    """
    models = list(dict.fromkeys(table.model))
    perts = list(dict.fromkeys(table.perturbation))
    cells = [(m, q) for m in models for q in perts]
    fig, axes, _ = panel_grid(len(cells), panel_height=2.5, extra_height=0.4, sharex=True)
    for i, (ax, (model, pert)) in enumerate(zip(axes, cells)):
        sub = table[(table.model == model) & (table.perturbation == pert)].sort_values("k")
        for kind in ("average", "max", "dv"):
            color, marker, label = _KIND_STYLE[kind]
            ax.loglog(sub.k, sub[f"ratio_{kind}_mean"], marker=marker, ls=_KIND_LS[kind], color=color, ms=5,
                      label=label)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_title(rf"{_name(model)}, {_name(pert)}, $\tau = {tau:g}$")
        if i >= len(cells) - 2:
            ax.set_xlabel("negatives $k$")
        if i % 2 == 0:
            ax.set_ylabel("bound / change")
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=3)
    return fig


def fig_lipschitz_vs_k(table, tau: float):
    """``E Lambda`` (average, max and embedding forms) against k, measured (95% CI) and predicted
    (lines; average and max forms), at temperature ``tau`` (in the titles).

    Args: table from :func:`~.runners.lipschitz_constants`.
    """
    data = list(dict.fromkeys(table.data))
    fig, axes, _ = panel_grid(len(data), panel_height=3.0, extra_height=0.8, sharey=True)
    for ax, name in zip(axes, data):
        for kind in ("average", "max", "embedding"):
            color, marker, label = _KIND_STYLE[kind]
            sub = table[(table.data == name) & (table.kind == kind)].sort_values("k")
            ax.errorbar(sub.k, sub["mean"], yerr=normal_quantile(0.95) * sub.se, fmt=marker, color=color, ms=5,
                        capsize=3, label=f"{label}: measured")
            if sub.predicted.notna().any():
                ax.plot(sub.k, sub.predicted, ls=_KIND_LS[kind], color=color, lw=1.2, label=f"{label}: predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("negatives $k$")
        ax.set_title(rf"{_name(name)} inputs, $\tau = {tau:g}$")
    axes[0].set_ylabel(r"$\mathbb{E}\,\Lambda(z)$ (nats per unit of $\theta$)")
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=2)
    return fig


def fig_rademacher_sweeps(table, tau: float, n_fit: tuple | None = None):
    """The estimated Rademacher complexity (95% CI), the covering bounds (average, max and
    embedding constants) and the vector-contraction bound against n, k and d, at ``tau``.

    Args: table from :func:`~.runners.rademacher_estimates`; ``n_fit``: optional ``(slope, intercept)`` of
    log R_n on log n (:func:`~infonce_book.theory.stats.fit_loglog_line`), drawn as a line.
    """
    fig, axes, rest = panel_grid(3, panel_height=2.9)
    for ax, (sweep, xlabel) in zip(axes, [("n", "tuples $n$"), ("k", "negatives $k$"), ("d", "dimension $d$")]):
        sub = table[table.sweep == sweep].sort_values(sweep if sweep != "d" else "dim")
        x = sub["dim"] if sweep == "d" else sub[sweep]
        ax.errorbar(x, sub.value, yerr=[sub.value - sub.ci_low, sub.ci_high - sub.value], fmt="o", color="k",
                    ms=5, capsize=3, label=r"$\hat R_n$ (lower estimate)")
        ax.plot(x, sub.bound_avg, "--", marker="o", mfc="none", color="C0", label="covering, average form")
        ax.plot(x, sub.bound_max, ":", marker="s", mfc="none", color="C1", lw=2, label="covering, max form")
        ax.plot(x, sub.bound_embedding, "-.", marker="^", mfc="none", color="C2", label="covering, embedding form")
        ax.plot(x, sub.bound_vector, "-", marker="D", mfc="none", color="C4", label="vector contraction")
        if sweep == "n" and n_fit is not None:
            xs = np.array([x.min(), x.max()], dtype=float)
            slope, intercept = n_fit
            ax.plot(xs, np.exp(intercept) * xs ** slope.mean, "-", color="C3", lw=1,
                    label=f"fit: slope {slope.mean:.2f}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title(rf"against ${sweep}$, $\tau = {tau:g}$")
        ax.set_ylabel("nats")
    legend_in(rest[0], *axes[0].get_legend_handles_labels())
    return fig


def _loss(s: np.ndarray, beta: float) -> float:
    """The standard InfoNCE loss of one similarity vector ``s = (s_0, s_1, ..., s_k)``."""
    z = beta * s
    return float(-z[0] + z.max() + np.log(np.exp(z - z.max()).sum()))


def fig_idea(k: int = 12, beta: float = 1.0, eps: float = 0.05, seed: int = 0):
    """The chapter's idea in one picture: the loss sees the negatives through their softmax weights.

    Left: an anchor, its positive and ``k`` negatives on the unit circle (marker area proportional
    to the softmax weight ``p_j`` at inverse temperature ``beta``), the negative of largest weight
    moved by ``eps`` in similarity. Right: the exact change of the loss and the average and max forms
    of Proposition 4.1 for that sparse move and for a dense one (every negative up by ``eps``, the
    positive down), in units of ``beta * eps``. Deterministic (``seed`` places the negatives).

    Raises:
        ValueError: ``k < 2``, ``beta <= 0`` or ``eps`` outside (0, 0.5].
    """
    if int(k) != k or k < 2:
        raise ValueError(f"fig_idea: k must be an integer >= 2, got {k!r}")
    if not beta > 0:
        raise ValueError(f"fig_idea: beta must be > 0, got {beta!r}")
    if not 0 < eps <= 0.5:
        raise ValueError(f"fig_idea: eps must be in (0, 0.5], got {eps!r}")
    rng = np.random.default_rng(seed)
    spread = np.linspace(1.0, 2 * np.pi - 1.0, k) + rng.uniform(-0.12, 0.12, k)
    angles = np.concatenate([[0.5], spread])  # the positive, then the negatives
    s = np.cos(angles)  # similarities to the anchor at angle 0
    p = np.exp(beta * s) / np.exp(beta * s).sum()
    top = 1 + int(np.argmax(s[1:]))
    sparse = s.copy()
    sparse[top] = s[top] + eps if s[top] + eps <= 1 else s[top] - eps  # stay in [-1, 1]
    dense = np.clip(s + eps, -1, 1)
    dense[0] = s[0] - eps
    avg = lambda h: abs(h[0]) + np.exp(2 * beta) / (k + 1) * np.abs(h[1:]).sum()  # noqa: E731
    mx = lambda h: abs(h[0]) + np.abs(h[1:]).max()  # noqa: E731
    colors = sns.color_palette(PALETTE)
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(COLUMN_WIDTH_IN, 5.8), layout="constrained",
                                 gridspec_kw={"height_ratios": [1, 1.1]})
    t = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(t), np.sin(t), color="0.7", lw=1)
    ax.scatter([1], [0], s=90, marker="*", color="k", zorder=3)
    ax.annotate(r"anchor $\mathbf{u}$", (1, 0), xytext=(1.12, -0.12))
    ax.scatter([np.cos(angles[0])], [np.sin(angles[0])], s=2400 * p[0], color=colors[2], marker="s", zorder=3)
    ax.annotate(r"positive $\mathbf{v}_0$", (np.cos(angles[0]), np.sin(angles[0])), xytext=(1.15, 0.45))
    ax.scatter(np.cos(angles[1:]), np.sin(angles[1:]), s=2400 * p[1:], color=colors[0], zorder=3,
               label="negatives $\\mathbf{v}_j$\n(area $\\propto p_j$)")
    a0 = angles[top]
    a1 = a0 - 0.3 * np.sign(np.sin(a0))  # towards the anchor
    ax.annotate("", xy=(1.18 * np.cos(a1), 1.18 * np.sin(a1)), xytext=(1.18 * np.cos(a0), 1.18 * np.sin(a0)),
                arrowprops={"arrowstyle": "->", "color": colors[3], "lw": 1.5})
    ax.annotate("one negative moves", (1.2 * np.cos(a0), 1.2 * np.sin(a0)), color=colors[3],
                xytext=(0.95, 1.05))
    ax.set_aspect("equal")
    ax.set_xlim(-1.4, 3.3)
    ax.set_ylim(-1.3, 1.3)
    ax.axis("off")
    ax.legend(loc="center left", frameon=False, bbox_to_anchor=(0.62, 0.2), handletextpad=0.3)
    ax.set_title(rf"$k = {k}$ negatives, $\beta = {beta:g}$")
    groups = [("sparse: one negative", sparse), ("dense: every similarity", dense)]
    width = 0.26
    for i, (name, style, hatch) in enumerate([("actual change", colors[2], ""),
                                               ("average form", colors[0], "//"),
                                               ("max form", colors[1], "..")]):
        vals = []
        for _, s_new in groups:
            h = s_new - s
            vals.append({"actual change": abs(_loss(s_new, beta) - _loss(s, beta)) / beta,
                         "average form": avg(h), "max form": mx(h)}[name] / eps)
        bars = bx.bar(np.arange(2) + (i - 1) * width, vals, width, color=style, hatch=hatch,
                      edgecolor="k", lw=0.5, label=name)
        bx.bar_label(bars, fmt="%.2g", padding=2)
    bx.set_yscale("log")
    bx.set_ylim(top=4 * bx.get_ylim()[1])
    bx.set_xticks(range(2), [g for g, _ in groups])
    bx.set_ylabel(r"$|\ell(s') - \ell(s)|$ and bounds" + "\n" + r"(units of $\beta\varepsilon$)")
    bx.legend(loc="upper left", ncols=3, handlelength=1.2, columnspacing=1.0)
    bx.set_title("what each form charges for the move")
    return fig


_LAWS = {"gaussian": ("o", "Gaussian inputs"), "student_t": ("s", r"Student-$t$ inputs"),
         "vmf": ("^", r"sphere $S^2$ (vMF)")}
_CLASSES = {"frobenius": ("o", r"$\|W\|_F \leq b$ (fixed budget)"),
            "normalised": ("s", r"$\|A - I\|_F \leq r$ (no fixed budget)")}
_BOUNDS = {"frobenius": "dimension-free bound", "normalised": "vector-contraction bound"}


def fig_temperature_sweep(table):
    """Left: the mean gap of trained embeddings (95% Student-t intervals over seeds) against
    ``beta = 1/tau``, one marker per input law; right: twice the complexity term (the bound on the
    expected gap) against ``beta``. Log-log axes. Args: table from
    :func:`~.side_claims.temperature_sweep`."""
    colours = sns.color_palette(PALETTE, len(_LAWS))
    fig, axes = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 3.8), layout="constrained")
    for colour, (name, (marker, label)) in zip(colours, _LAWS.items()):
        sub = table[table.data == name]
        if not len(sub):
            continue
        betas = sorted(sub.beta.unique())
        ests = [Estimate.from_samples(sub[sub.beta == b].gap.to_numpy(), t=True) for b in betas]
        mean = np.array([e.mean for e in ests])
        low, high = np.array([e.ci_low for e in ests]), np.array([e.ci_high for e in ests])
        axes[0].errorbar(betas, mean, yerr=[mean - low, high - mean], fmt=marker + "-", color=colour, ms=5,
                         capsize=3, label=label)
        bound = [2.0 * float(sub[sub.beta == b].complexity.iloc[0]) for b in betas]
        axes[1].plot(betas, bound, marker + "--", color=colour, ms=5, label=label)
    axes[0].set_yscale("symlog", linthresh=1e-3)
    axes[0].set_ylabel(r"$L_k(\hat\phi) - \hat L_{n,k}(\hat\phi)$ (nats)")
    axes[0].set_title("measured gap")
    axes[1].set_yscale("log")
    axes[1].set_ylabel(r"$2 \times$ complexity term (nats)")
    axes[1].set_title("bound on the expected gap")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(betas, [f"{b:g}" for b in betas])
        ax.set_xlabel(r"$\beta = 1/\tau$")
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=2)
    return fig


def fig_dimension_sweep(table):
    """Left: the estimated Rademacher complexity (lower estimates, 95% intervals) and the bounds
    (the dimension-free bound for the fixed budget; the vector-contraction bound for the class
    without one) against d; right: the mean gap of trained embeddings (95% intervals over seeds).
    Args: table from :func:`~.side_claims.dimension_sweep`."""
    colours = sns.color_palette(PALETTE, len(_CLASSES))
    fig, axes = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 4.4), layout="constrained")
    for colour, (cls, (marker, label)) in zip(colours, _CLASSES.items()):
        sub = table[table.cls == cls].sort_values("dim")
        axes[0].errorbar(sub.dim, sub.value, yerr=[sub.value - sub.ci_low, sub.ci_high - sub.value],
                         fmt=marker + "-", color=colour, ms=5, capsize=3, label=r"$\hat R_n$, " + label)
        axes[0].plot(sub.dim, sub.bound, marker + "--", color=colour, ms=4, mfc="none", label=_BOUNDS[cls])
        axes[1].errorbar(sub.dim, sub.gap_mean, yerr=[sub.gap_mean - sub.gap_low, sub.gap_high - sub.gap_mean],
                         fmt=marker + "-", color=colour, ms=5, capsize=3, label=label)
    dims = sorted(table.dim.unique())
    handles, labels = axes[0].get_legend_handles_labels()
    axes[0].set_yscale("log")
    axes[0].set_ylabel("nats")
    axes[0].set_title(r"complexity $\hat R_n$ and bounds")
    axes[1].set_ylabel(r"$L_k(\hat\phi) - \hat L_{n,k}(\hat\phi)$ (nats)")
    axes[1].set_title("measured gap")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [f"{d:g}" for d in dims])
        ax.set_xlabel(r"dimension $d$")
    legend_below(fig, handles, labels, ncol=1)
    return fig
