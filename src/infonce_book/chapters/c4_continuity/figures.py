"""Chapter 4's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from ...experiment.style import PALETTE
from ...theory.stats import Estimate, normal_quantile

__all__ = ["fig_continuity_ratios", "fig_dimension_sweep", "fig_lipschitz_vs_k", "fig_rademacher_sweeps",
           "fig_temperature_sweep"]


_KIND_STYLE = {"average": ("C0", "o", "average (C4)"), "max": ("C1", "s", "max"), "dv": ("C2", "^", "Donsker-Varadhan"),
               "embedding": ("C3", "D", "embedding (Lambda_star)")}


def fig_continuity_ratios(table, tau: float):
    """Mean ratio bound/actual change against k (log-log), one panel per (model, perturbation), at
    temperature ``tau`` (in the titles).

    Args: table from :func:`~.runners.perturbations`.
    """
    models = list(dict.fromkeys(table.model))
    perts = list(dict.fromkeys(table.perturbation))
    fig, axes = plt.subplots(len(models), len(perts), figsize=(3.3 * len(perts), 2.9 * len(models)),
                             sharex=True, squeeze=False)
    for i, model in enumerate(models):
        for j, pert in enumerate(perts):
            ax = axes[i, j]
            sub = table[(table.model == model) & (table.perturbation == pert)].sort_values("k")
            for kind in ("average", "max", "dv"):
                color, marker, label = _KIND_STYLE[kind]
                ax.loglog(sub.k, sub[f"ratio_{kind}_mean"], marker=marker, color=color, ms=4, label=label)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_title(f"{model}, {pert}, tau = {tau:g}")
            if i == len(models) - 1:
                ax.set_xlabel("negatives $k$")
            if j == 0:
                ax.set_ylabel("bound / actual change")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def fig_lipschitz_vs_k(table, tau: float):
    """``E Lambda`` (average, max and embedding forms) against k, measured (95% CI) and predicted
    (lines; average and max forms), at temperature ``tau`` (in the titles).

    Args: table from :func:`~.runners.lipschitz_constants`.
    """
    data = list(dict.fromkeys(table.data))
    fig, axes = plt.subplots(1, len(data), figsize=(4.6 * len(data), 3.6), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], data):
        for kind in ("average", "max", "embedding"):
            color, marker, label = _KIND_STYLE[kind]
            sub = table[(table.data == name) & (table.kind == kind)].sort_values("k")
            ax.errorbar(sub.k, sub["mean"], yerr=normal_quantile(0.95) * sub.se, fmt=marker, color=color, ms=4,
                        capsize=3, label=f"{label}: measured")
            if sub.predicted.notna().any():
                ax.plot(sub.k, sub.predicted, "-", color=color, lw=1, label=f"{label}: predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("negatives $k$")
        ax.set_title(f"{name} inputs, tau = {tau:g}")
    axes[0, 0].set_ylabel(r"$\mathbb{E}\,\Lambda(z)$ (nats per unit of $\theta$)")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def fig_rademacher_sweeps(table, tau: float, n_fit: tuple | None = None):
    """The estimated Rademacher complexity (95% CI), the covering bounds (average, max and
    embedding constants) and the vector-contraction bound against n, k and d, at ``tau``.

    Args: table from :func:`~.runners.rademacher_estimates`; ``n_fit``: optional ``(slope, intercept)`` of
    log R_n on log n (:func:`~infonce_book.theory.stats.fit_loglog_line`), drawn as a line.
    """
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, (sweep, xlabel) in zip(axes, [("n", "tuples $n$"), ("k", "negatives $k$"), ("d", "dimension $d$")]):
        sub = table[table.sweep == sweep].sort_values(sweep if sweep != "d" else "dim")
        x = sub["dim"] if sweep == "d" else sub[sweep]
        ax.errorbar(x, sub.value, yerr=[sub.value - sub.ci_low, sub.ci_high - sub.value], fmt="o", color="k",
                    ms=4, capsize=3, label=r"$\hat R_n$ (lower estimate)")
        ax.plot(x, sub.bound_avg, "--", color="C0", label="covering, average form")
        ax.plot(x, sub.bound_max, ":", color="C1", lw=2, label="covering, max form")
        ax.plot(x, sub.bound_embedding, "-.", color="C2", label="covering, embedding form")
        ax.plot(x, sub.bound_vector, "-", color="C4", label="vector contraction")
        if sweep == "n" and n_fit is not None:
            xs = np.array([x.min(), x.max()], dtype=float)
            slope, intercept = n_fit
            ax.plot(xs, np.exp(intercept) * xs ** slope.mean, "-", color="C3", lw=1,
                    label=f"fit: slope {slope.mean:.2f}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title(f"against {sweep}, tau = {tau:g}")
    axes[0].set_ylabel("nats")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
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
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
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
    axes[0].set_ylabel(r"gap $L_k(\hat\phi) - \hat L_{n,k}(\hat\phi)$ (nats)")
    axes[0].set_title("measured gap (95% intervals over seeds)")
    axes[1].set_yscale("log")
    axes[1].set_ylabel(r"$2 \times$ complexity term (nats)")
    axes[1].set_title("the bound on the expected gap")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(betas, [f"{b:g}" for b in betas])
        ax.set_xlabel(r"inverse temperature $\beta = 1/\tau$")
    axes[0].legend(fontsize="small", loc="upper left")
    fig.tight_layout()
    return fig


def fig_dimension_sweep(table):
    """Left: the estimated Rademacher complexity (lower estimates, 95% intervals) and the bounds
    (the dimension-free bound for the fixed budget; the vector-contraction bound for the class
    without one) against d; right: the mean gap of trained embeddings (95% intervals over seeds).
    Args: table from :func:`~.side_claims.dimension_sweep`."""
    colours = sns.color_palette(PALETTE, len(_CLASSES))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for colour, (cls, (marker, label)) in zip(colours, _CLASSES.items()):
        sub = table[table.cls == cls].sort_values("dim")
        axes[0].errorbar(sub.dim, sub.value, yerr=[sub.value - sub.ci_low, sub.ci_high - sub.value],
                         fmt=marker + "-", color=colour, ms=5, capsize=3, label=r"$\hat R_n$, " + label)
        axes[0].plot(sub.dim, sub.bound, marker + "--", color=colour, ms=4, mfc="none", label=_BOUNDS[cls])
        axes[1].errorbar(sub.dim, sub.gap_mean, yerr=[sub.gap_mean - sub.gap_low, sub.gap_high - sub.gap_mean],
                         fmt=marker + "-", color=colour, ms=5, capsize=3, label=label)
    dims = sorted(table.dim.unique())
    axes[0].set_yscale("log")
    axes[0].set_ylabel("nats")
    axes[0].set_title(r"complexity $\hat R_n$ (lower estimates) and bounds")
    axes[1].set_ylabel(r"gap $L_k(\hat\phi) - \hat L_{n,k}(\hat\phi)$ (nats)")
    axes[1].set_title("measured gap (95% intervals over seeds)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [f"{d:g}" for d in dims])
        ax.set_xlabel(r"embedding dimension $d$ (data on $S^{d-1}$)")
    axes[0].legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
    axes[1].legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.3))
    fig.tight_layout()
    return fig
