"""Bounds of the book, as functions the chapters plot and the tests check.

C1 (book, Theorem ``c1-thm-rate``): for every embedding into the sphere, every anchor and every
k >= 1, with ``beta = 1/tau``, ``U = W+/mu``, ``V = W/mu`` and ``a = e^-beta / mu <= 1`` a lower
bound of ``T``:

    u1/k - (m2 + u2/k) / (2 a k)  <=  E[log T | x]  <=  log(1 + u1/k)  <=  u1/k   (standard)
         - m2 / (2 a k)           <=  E[log T | x]  <=  0                          (decoupled)

and, uniformly over embeddings, ``|L_k - log k - L_inf| <= C(tau)/k`` with
``C(tau) = max(e^{2 beta}, e^{4 beta} / 2)``.

The Lipschitz-of-log argument (Wang & Isola 2020, proof of Thm 1) bounds the same bias by
``e^beta E|S'/k - mu|`` with ``S' = W+ + sum_j W_j``, which is ``O(k^{-1/2})``.
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import check_choice, check_k, check_tau
from .losses import VARIANTS


def _ks(k) -> np.ndarray:
    return np.array([check_k(v) for v in np.atleast_1d(k)], dtype=np.float64)


def bias_bounds(k, *, u1: float, u2: float, m2: float, a: float, variant: str = "standard"):
    """Lower and upper bounds on ``E[log T | x] = L_k - log k - L_inf`` (given x).

    Args:
        k: int or array of ints >= 1.
        u1, u2: ``E[U]``, ``E[U^2]`` for ``U = W+/mu``; m2: ``Var(W)/mu^2``.
        a: a lower bound on ``T`` in (0, 1] (``e^-beta/mu`` always qualifies).
        variant: ``"standard"`` or ``"decoupled"``.
    Returns:
        ``(lower, upper)``: float64 arrays of k's shape, in nats.
    Source: book, Theorem ``c1-thm-rate`` (ii); sympy form
    :func:`infonce_book.symbolic.nonasymptotic_bias_bounds`.
    """
    check_choice(variant, "variant", VARIANTS)
    if not (0.0 < a <= 1.0):
        raise ValueError(f"a must be in (0, 1], got a={a!r}")
    kk = _ks(k)
    if variant == "standard":
        lower = u1 / kk - (m2 / kk + u2 / kk**2) / (2.0 * a)
        upper = np.log1p(u1 / kk)
    else:
        lower = -(m2 / kk) / (2.0 * a)
        upper = np.zeros_like(kk)
    return lower, upper


def uniform_bias_constant(tau) -> float:
    """``C(tau)`` of Theorem ``c1-thm-rate`` (iii): ``|L_k - log k - L_inf| <= C(tau)/k`` for
    every embedding into the sphere, every Markov kernel and every k >= 1 (both variants).

    ``C(tau) = max(e^{2 beta}, e^{4 beta} / 2)``, ``beta = 1/tau``; raises OverflowError where it
    exceeds the float64 range (tau below about 0.0056).
    Source: book, Theorem ``c1-thm-rate`` (iii); sympy: :func:`infonce_book.symbolic.uniform_bias_constant`.
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
    beta = 1.0 / check_tau(tau)
    kk = _ks(k)
    return math.exp(beta) * (sigma / np.sqrt(kk) + mean_w_pos / kk)


def kl_softmax_bound(tau) -> float:
    """Uniform bound on ``KL(Q^phi_tau(x, .) || pi)`` for every embedding into the sphere and every x:
    ``min(1/(2 tau^2), 2/tau)`` nats (book, Theorem ``c3-thm-kl``). Pinsker then gives
    ``TV <= 1/(2 tau)``."""
    beta = 1.0 / check_tau(tau)
    return float(min(beta * beta / 2.0, 2.0 * beta))


def antipodal_kl(tau) -> float:
    """``KL(Q || pi)`` when the similarity is +-1 with probability 1/2 each (two antipodal
    clusters): ``beta tanh(beta) - log cosh(beta)``; it equals ``beta^2/2 + O(beta^4)``, so the
    bound ``beta^2/2`` is tight as tau -> infinity."""
    beta = 1.0 / check_tau(tau)
    log_cosh = beta + math.log1p(math.exp(-2.0 * beta)) - math.log(2.0)
    return float(beta * math.tanh(beta) - log_cosh)
