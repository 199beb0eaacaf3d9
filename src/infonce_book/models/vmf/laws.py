"""The vMF model's weights on Gauss--Jacobi nodes, for the exact Laplace/Frullani quadrature of
:mod:`infonce_book.theory.exact` (book, Chapter 1, eq. ``c1-eq-frullani``), checked against the
closed-form moments before they are trusted.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...theory.exact import N_NODES, DiscreteLaws, ein, exp1_from_log
from .core import VmfCore
from .special_functions import mean_resultant_length

# Relative agreement that the vMF laws on the quadrature nodes must reach with the closed forms
# (the first two moments of W/mu under the data and the positive-pair laws, and the mean cosine of
# a positive) before the quadrature is trusted; well-resolved cases reach about 1e-13.
RESOLUTION_TOLERANCE = 1e-8


class SimilarityLaws(DiscreteLaws):
    """The vMF model's weights ``V = e^{beta s} / mu`` (in units of their mean, so nothing
    overflows) on Gauss--Jacobi nodes for ``s = <x, y>``; for dim 3 the negative weight's
    transform in closed form (``Ein`` and ``E1``).

    Raises ValueError when the nodes cannot resolve the laws (a large kappa or beta in a high
    dimension puts the mass of ``e^{kappa s}`` or ``e^{beta s}`` where the nodes are sparse): the
    node averages of ``V`` and ``V^2`` (negative and positive) and of the positive's cosine are
    compared with their closed forms (``E V^j = Z(j beta) / Z(beta)^j``,
    ``E V+^j = Z(kappa + j beta) / (Z(kappa) Z(beta)^j)``, ``A_p(kappa)``).
    """

    def __init__(self, model: VmfCore, beta: float, n_nodes: int = N_NODES, closed_form: bool = True) -> None:
        p = model.dim
        alpha = (p - 3.0) / 2.0
        nodes, weights = special.roots_jacobi(n_nodes, alpha, alpha)
        log_tilt = model.kappa * nodes
        wp = weights * np.exp(log_tilt - log_tilt.max())
        log_mu = float(model.log_partition(beta))
        log_V = beta * nodes - log_mu
        super().__init__(np.exp(log_V), weights / weights.sum(), wp / wp.sum(), beta, mu=1.0, log_W=log_V)
        self.model, self.s, self.log_mu = model, nodes, log_mu
        self.closed_form = closed_form and p == 3
        self.w_max, self.log_w_min = math.exp(beta - log_mu), -beta - log_mu
        lz = lambda b: float(model.log_partition(b))  # noqa: E731
        kap = model.kappa
        log_v2 = 2.0 * log_V
        # (name, log of the node average, log of the closed form): the first and second moments
        # of V under both laws, and the positive's mean cosine (shifted to be positive).
        checks = [
            ("E[W/mu] (negatives)", special.logsumexp(log_V, b=self.w_neg), 0.0),
            ("E[(W/mu)^2] (negatives)", special.logsumexp(log_v2, b=self.w_neg), lz(2.0 * beta) - 2.0 * log_mu),
            ("E[W+/mu] (positive)", special.logsumexp(log_V, b=self.w_pos), lz(kap + beta) - lz(kap) - log_mu),
            ("E[(W+/mu)^2] (positive)", special.logsumexp(log_v2, b=self.w_pos),
             lz(kap + 2.0 * beta) - lz(kap) - 2.0 * log_mu),
            ("1 + E<x, x+> (positive)", math.log(1.0 + float(self.w_pos @ nodes)),
             math.log(1.0 + float(mean_resultant_length(p, kap)))),
        ]
        for name, log_nodes, log_closed in checks:
            err = abs(float(log_nodes) - log_closed)  # relative error, to first order
            if not err <= RESOLUTION_TOLERANCE:
                raise ValueError(
                    f"the exact quadrature does not resolve the vMF model at dim={p}, kappa={kap:g}, "
                    f"tau={1.0 / beta:g} with {n_nodes} Gauss--Jacobi nodes: their {name} is "
                    f"exp({float(log_nodes):.10g}) against the closed form exp({log_closed:.10g}) (relative "
                    f"error {err:.2g} > {RESOLUTION_TOLERANCE:g}); use a larger tau or a smaller kappa here, "
                    f"or Monte Carlo (infonce_book.theory.estimators.monte_carlo_bias)")

    def laplace_neg_minus_one(self, t: np.ndarray) -> np.ndarray:
        if not self.closed_form:
            return super().laplace_neg_minus_one(t)
        t = np.asarray(t, dtype=np.float64)
        b, lm = self.beta, self.log_mu
        return -(ein(t * math.exp(b - lm)) - ein(t * math.exp(-b - lm))) / (2.0 * b)

    def _log_laplace_neg_large_log_t(self, log_t: np.ndarray) -> np.ndarray:
        if not self.closed_form:
            return super()._log_laplace_neg_large_log_t(log_t)
        b, lm = self.beta, self.log_mu
        with np.errstate(divide="ignore"):
            return np.log(exp1_from_log(log_t - b - lm) - exp1_from_log(log_t + b - lm)) - math.log(2.0 * b)
