"""Chapter 3, the temperature: bounds on ``KL(Q^phi_tau(x, .) || pi)`` over all embeddings into the
unit ball (Theorems ``c3-thm-kl`` and ``c3-thm-kl-sharp``) and the two-point laws that attain them.
"""

from __future__ import annotations

import math

import numpy as np

from ...utils.validation import check_scalar, check_tau


def kl_softmax_bound(tau) -> float:
    """Uniform bound on ``KL(Q^phi_tau(x, .) || pi)`` for every embedding into the sphere and every x:
    ``min(1/(2 tau^2), 2/tau)`` nats (book, Theorem ``c3-thm-kl``). Pinsker then gives
    ``TV <= 1/(2 tau)``."""
    beta = 1.0 / check_tau(tau)
    return float(min(beta * beta / 2.0, 2.0 * beta))


def kl_softmax_sharp_bound(tau) -> float:
    """The exact supremum of ``KL(Q^phi_tau(x, .) || pi)`` over all embeddings into the unit ball,
    all data and all x (book, Theorem ``c3-thm-kl-sharp``):

    ``Psi(beta) = y - 1 - log y``, ``y = 2 beta / (1 - e^{-2 beta}) = beta (1 + coth beta)``,

    attained by a law of the similarity on ``{-1, 1}``; ``Psi <= min(beta^2/2, 2 beta)`` and
    ``Psi = 2 beta - 1 - log(2 beta) + O(beta e^{-2 beta})`` as tau -> 0.

    Examples:
        >>> round(kl_softmax_sharp_bound(1.0), 5)
        0.47447
    """
    beta = 1.0 / check_tau(tau)
    y = 2.0 * beta / -math.expm1(-2.0 * beta)
    return float(y - 1.0 - math.log(y)) if beta > 1e-4 else float(beta * beta / 2.0 - beta**4 / 36.0)


def antipodal_kl(tau) -> float:
    """``KL(Q || pi)`` when the similarity is +-1 with probability 1/2 each (two antipodal
    clusters): ``beta tanh(beta) - log cosh(beta)``; it equals ``beta^2/2 + O(beta^4)``, so the
    bound ``beta^2/2`` is tight as tau -> infinity."""
    beta = 1.0 / check_tau(tau)
    log_cosh = beta + math.log1p(math.exp(-2.0 * beta)) - math.log(2.0)
    return float(beta * math.tanh(beta) - log_cosh)


def two_point_kl(tau, q: float) -> float:
    """``KL(Q_tau || pi)`` when the similarity is ``+1`` with probability ``q`` and ``-1`` otherwise
    under pi (log space; book, Theorem ``c3-thm-kl-sharp``). ``q = 1/2``: :func:`antipodal_kl`."""
    beta = 1.0 / check_tau(tau)
    q = check_scalar(q, "q")
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be a probability in (0, 1), got q={q!r}")
    lz = float(np.logaddexp(math.log(q) + beta, math.log1p(-q) - beta))
    theta = math.exp(math.log(q) + beta - lz)
    return float(beta * (2.0 * theta - 1.0) - lz)
