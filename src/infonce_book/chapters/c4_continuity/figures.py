"""Chapter 4's figures: each ``fig_*`` draws one figure of the page from a runner's table and
returns the matplotlib figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ...theory.stats import normal_quantile

__all__ = ["fig_continuity_ratios", "fig_lipschitz_vs_k", "fig_rademacher_sweeps"]


_KIND_STYLE = {"average": ("C0", "o", "average form"), "max": ("C1", "s", "max form"),
               "dv": ("C2", "^", "Donsker-Varadhan form"), "embedding": ("C3", "D", r"embedding form ($\Lambda_\star$)")}

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
            ax.set_title(rf"{_name(model)}, {_name(pert)}, $\tau = {tau:g}$")
            if i == len(models) - 1:
                ax.set_xlabel("negatives $k$")
            if j == 0:
                ax.set_ylabel("bound / actual change")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
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
        ax.set_title(rf"{_name(name)} inputs, $\tau = {tau:g}$")
    axes[0, 0].set_ylabel(r"$\mathbb{E}\,\Lambda(z)$ (nats per unit of $\theta$)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
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
    axes[0].set_ylabel("nats")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    return fig
