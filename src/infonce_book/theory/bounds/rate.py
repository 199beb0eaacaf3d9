"""Chapter 1, the bounds on the bias ``L_k - log k - L_inf`` (book, Theorem ``c1-thm-rate``).

For every embedding into the sphere, every anchor and every k >= 1, with ``beta = 1/tau``,
``U = W+/mu``, ``V = W/mu`` and ``a = e^-beta / mu <= 1`` a lower bound of ``T``:

    u1/k - (v2 + u2/k) / (2 a k)  <=  E[log T | x]  <=  log(1 + u1/k)  <=  u1/k   (standard)
         - v2 / (2 a k)           <=  E[log T | x]  <=  0                          (decoupled)

and, uniformly over embeddings, ``|L_k - log k - L_inf| <= C(tau)/k`` with
``C(tau) = max(e^{2 beta}, e^{4 beta} / 2)``.

The Lipschitz-of-log argument (Wang & Isola 2020, proof of Thm 1) bounds the same bias by
``e^beta E|S'/k - mu|`` with ``S' = W+ + sum_j W_j``, which is ``O(k^{-1/2})``.
"""

from __future__ import annotations

import math

import numpy as np

from ...losses import VARIANTS
from ...utils.validation import check_choice, check_k, check_scalar, check_tau, exp_or_raise


def _ks(k) -> np.ndarray:
    ks = np.atleast_1d(k)
    if ks.size == 0:
        raise ValueError("k must hold at least one number of negatives (an integer >= 1), got an empty array")
    return np.array([check_k(v) for v in ks], dtype=np.float64)


def bias_bounds(k, *, u1: float, u2: float, v2: float, a: float, variant: str = "standard"):
    """Lower and upper bounds on ``E[log T | x] = L_k - log k - L_inf`` (given x).

    Args:
        k: int or array of ints >= 1.
        u1, u2: ``E[U]``, ``E[U^2]`` for ``U = W+/mu``; v2: ``Var(W)/mu^2``.
        a: a lower bound on ``T`` in (0, 1] (``e^-beta/mu`` always qualifies).
        variant: ``"standard"`` or ``"decoupled"``.
    Returns:
        ``(lower, upper)``: float64 arrays of k's shape, in nats.
    Source: book, Theorem ``c1-thm-rate`` (ii); sympy form
    :func:`infonce_book.theory.symbolic.nonasymptotic_bias_bounds`.
    """
    check_choice(variant, "variant", VARIANTS)
    a = check_scalar(a, "a", gt=0)
    if not a <= 1.0:
        raise ValueError(f"a must be in (0, 1] (a lower bound on T), got a={a!r}")
    u1, u2, v2 = check_scalar(u1, "u1", ge=0), check_scalar(u2, "u2", ge=0), check_scalar(v2, "v2", ge=0)
    if u2 < u1 * u1 * (1.0 - 1e-12):
        raise ValueError(f"u2 = E[U^2] must be >= u1^2 = E[U]^2 (moments of one law), got u1={u1!r}, u2={u2!r}")
    kk = _ks(k)
    if variant == "standard":
        lower = u1 / kk - (v2 / kk + u2 / kk**2) / (2.0 * a)
        upper = np.log1p(u1 / kk)
    else:
        lower = -(v2 / kk) / (2.0 * a)
        upper = np.zeros_like(kk)
    return lower, upper


def uniform_bias_constant(tau) -> float:
    """``C(tau)`` of Theorem ``c1-thm-rate`` (iii): ``|L_k - log k - L_inf| <= C(tau)/k`` for
    every embedding into the sphere, every Markov kernel and every k >= 1 (both variants).

    ``C(tau) = max(e^{2 beta}, e^{4 beta} / 2)``, ``beta = 1/tau``; raises OverflowError where it
    exceeds the float64 range (tau below about 0.0056).
    Source: book, Theorem ``c1-thm-rate`` (iii); sympy: :func:`infonce_book.theory.symbolic.uniform_bias_constant`.
    """
    beta = 1.0 / check_tau(tau)
    log_c = max(2.0 * beta, 4.0 * beta - math.log(2.0))
    if log_c > 709.0:
        raise OverflowError(f"C(tau) = exp({log_c:.1f}) overflows float64 at tau={tau!r}")
    return float(math.exp(log_c))


def lipschitz_log_bound(k, *, tau: float, sigma: float, mean_w_pos: float) -> np.ndarray:
    """The ``O(k^{-1/2})`` bound from the Lipschitz continuity of log (Wang & Isola 2020's argument).

    Both ``S'/k`` and ``mu`` are at least ``e^-beta``, and log is ``e^beta``-Lipschitz on
    ``[e^-beta, inf)``, so
    ``|E log(S'/k) - log mu| <= e^beta (E|S/k - mu| + E W+/k) <= e^beta (sigma/sqrt(k) + E W+ / k)``.

    Args:
        k: int or array of ints >= 1. tau: temperature. sigma: sd of a negative weight W given x
            (``sinh(1/tau)`` is the worst case over embeddings). mean_w_pos: ``E[W+ | x]``
            (``e^{1/tau}`` is the worst case).
    Returns:
        float64 array of k's shape, in nats.
    """
    tau = check_tau(tau)
    beta = 1.0 / tau
    sigma, mean_w_pos = check_scalar(sigma, "sigma", ge=0), check_scalar(mean_w_pos, "mean_w_pos", ge=0)
    kk = _ks(k)
    factor = float(exp_or_raise(beta, "the Lipschitz constant e^beta of log", tau))
    out = factor * (sigma / np.sqrt(kk) + mean_w_pos / kk)
    if not np.all(np.isfinite(out)):
        raise OverflowError(f"the Lipschitz-of-log bound overflows float64 at tau={tau!r}")
    return out
