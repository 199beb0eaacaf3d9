"""Chapter 4's figures of the two side claims: the gap and its bound against the temperature, and
the complexity and the gap against the dimension (from the tables of :mod:`.side_claims`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from ...experiment.style import PALETTE
from ...theory.stats import Estimate

__all__ = ["fig_dimension_sweep", "fig_temperature_sweep"]

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
