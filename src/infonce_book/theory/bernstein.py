"""Bernstein-type certificates: bounds whose price is the spread of a loss, not its range.

A loss ``l`` of InfoNCE lies in an interval of width about ``4 beta`` (book, Lemma
``c5-lem-range``), but on trained embeddings its standard deviation is below one nat. A bound
that rescales the loss to ``[0, 1]`` by its range (Hoeffding, the PAC-Bayes-kl bound) pays the
range; a Bernstein-type bound pays the spread. This module holds the arithmetic:

* :func:`psi_tilde`: ``(-log(1 - u) - u) / u^2``, the factor of the un-expected Bernstein
  inequality (book, Lemma ``c5-lem-unexpected-bernstein``; Fan, Grama & Liu 2015; Mhammedi,
  Grunwald & Guedj 2019): for ``X <= b`` and ``0 < eta < 1/b``,
  ``E exp(eta (E X - X) - psi_tilde(eta b) eta^2 X^2) <= 1``.
* :func:`unexpected_bernstein_bound`: the resulting bound on a mean (or, with a relative entropy
  in ``complexity``, the PAC-Bayes bound of Theorem ``c5-thm-pac-bernstein``), and
  :func:`best_unexpected_bernstein`, its minimum over a grid of ``eta`` fixed in advance.
* :func:`empirical_bernstein_upper`: the empirical Bernstein bound of Maurer & Pontil (2009,
  Theorem 4) for the mean of ``N`` i.i.d. variables with a known range (used for the Monte Carlo
  step of a certificate).
* :func:`quadratic_range`: the range of ``X + gamma X^2`` for ``X`` in an interval.

All in the units of the loss (nats).
"""

from __future__ import annotations

import math

import numpy as np

from ..utils.validation import check_k, check_scalar

__all__ = ["psi_tilde", "unexpected_bernstein_bound", "best_unexpected_bernstein", "empirical_bernstein_upper",
           "quadratic_range", "ETAS"]

#: A grid of ``eta`` values (in units of 1/nat), fixed before any data: 0.02 * 1.25^j, j = 0..15
#: (0.02 to 0.57). A bound minimised over it pays ``log 16`` in its confidence term.
ETAS = tuple(0.02 * 1.25**j for j in range(16))


def psi_tilde(u: float) -> float:
    """``(-log(1 - u) - u) / u^2`` for ``0 <= u < 1`` (``1/2`` at ``u = 0``), accurate for small u.

    It increases from 1/2 to infinity on ``[0, 1)``; ``psi_tilde(u) = 1/2 + u/3 + u^2/4 + ...``.

    Raises:
        ValueError: u outside ``[0, 1)``.

    Examples:
        >>> psi_tilde(0.0)
        0.5
        >>> round(psi_tilde(0.5), 6)  # (log 2 - 1/2) / (1/4)
        0.772589
    """
    u = check_scalar(u, "u", ge=0, lt=1)
    if u < 1e-3:  # the series: sum_{j >= 2} u^(j-2) / j, to rounding
        return sum(u ** (j - 2) / j for j in range(2, 12))
    return (-math.log1p(-u) - u) / (u * u)


def unexpected_bernstein_bound(mean: float, mean_square: float, *, b: float, n: int, complexity: float,
                               eta: float) -> float:
    """``mean + eta psi_tilde(eta b) mean_square + complexity / (eta n)``: an upper bound on ``E X``.

    For i.i.d. ``X_1..X_n <= b`` with empirical mean ``mean`` and empirical second moment
    ``mean_square`` (about 0, not centred), with probability at least ``1 - delta`` this bounds
    ``E X`` when ``complexity = log(1/delta)``; for a randomised predictor (``mean`` and
    ``mean_square`` averaged over a posterior ``rho``), ``complexity = KL(rho || prior) +
    log(1/delta)`` gives the PAC-Bayes form, valid for every posterior at once (book, Theorem
    ``c5-thm-pac-bernstein``). A grid of ``G`` values of ``eta`` (or of priors, or of shifts of X)
    fixed in advance is paid for by ``log G`` in ``complexity``.

    Args:
        mean: empirical mean of X. mean_square: empirical mean of ``X^2`` (>= mean^2).
        b: an almost-sure upper bound on X, > 0. n: number of examples >= 1.
        complexity: >= 0, in nats. eta: in ``(0, 1/b)``.
    Returns:
        The bound, in the units of X.
    Raises:
        ValueError: an argument outside its range (eta b must be < 1).
    Source: book, Lemma ``c5-lem-unexpected-bernstein``; Mhammedi, Grunwald & Guedj (2019),
        "PAC-Bayes un-expected Bernstein inequality", NeurIPS.

    Examples:
        >>> round(unexpected_bernstein_bound(0.0, 1.0, b=2.0, n=1000, complexity=3.0, eta=0.1), 4)
        0.0879
    """
    mean = check_scalar(mean, "mean")
    mean_square = check_scalar(mean_square, "mean_square", ge=0)
    b = check_scalar(b, "b", gt=0)
    n = check_k(n, "n")
    complexity = check_scalar(complexity, "complexity", ge=0)
    eta = check_scalar(eta, "eta", gt=0)
    if eta * b >= 1.0:
        raise ValueError(f"eta * b must be < 1 (the inequality needs eta < 1/b), got eta={eta!r}, b={b!r}")
    return mean + eta * psi_tilde(eta * b) * mean_square + complexity / (eta * n)


def best_unexpected_bernstein(mean: float, mean_square: float, *, b: float, n: int, complexity: float,
                              etas: tuple[float, ...] = ETAS) -> tuple[float, float]:
    """The smallest :func:`unexpected_bernstein_bound` over the ``etas`` with ``eta b < 1``.

    The grid's size must be included in ``complexity`` (``+ log(len(etas))``) by the caller
    when ``eta`` is chosen after seeing the data.

    Returns:
        ``(bound, eta)``.
    Raises:
        ValueError: no eta of the grid has ``eta b < 1``.
    """
    b = check_scalar(b, "b", gt=0)
    best = None
    for eta in etas:
        if eta * b >= 1.0:
            continue
        value = unexpected_bernstein_bound(mean, mean_square, b=b, n=n, complexity=complexity, eta=eta)
        if best is None or value < best[0]:
            best = (value, float(eta))
    if best is None:
        raise ValueError(f"no eta of the grid satisfies eta * b < 1 (b={b!r}, smallest eta {min(etas)!r})")
    return best


def empirical_bernstein_upper(mean: float, variance: float, n: int, *, value_range: float, delta: float) -> float:
    """Maurer & Pontil's empirical Bernstein bound on ``E Y`` for i.i.d. ``Y_1..Y_n`` in an interval
    of width ``value_range``: with probability at least ``1 - delta``,

    ``E Y <= mean + sqrt(2 variance log(2/delta) / n) + 7 value_range log(2/delta) / (3 (n - 1))``,

    with ``variance`` the unbiased sample variance.

    Args:
        mean, variance: the sample mean and unbiased sample variance (>= 0). n: >= 2.
        value_range: width of an interval holding every ``Y``, > 0. delta: in (0, 1).
    Source: Maurer & Pontil (2009), "Empirical Bernstein bounds and sample-variance penalization",
        COLT, Theorem 4 (stated there for [0, 1]; rescaled).

    Examples:
        >>> round(empirical_bernstein_upper(0.0, 1.0, 10_000, value_range=10.0, delta=0.01), 4)
        0.0449
    """
    mean = check_scalar(mean, "mean")
    variance = check_scalar(variance, "variance", ge=0)
    n = check_scalar(n, "n", ge=2, integer=True, why="a sample variance needs two values")
    value_range = check_scalar(value_range, "value_range", gt=0)
    delta = check_scalar(delta, "delta", gt=0, lt=1)
    log_term = math.log(2.0 / delta)
    return mean + math.sqrt(2.0 * variance * log_term / n) + 7.0 * value_range * log_term / (3.0 * (n - 1))


def quadratic_range(low: float, high: float, gamma: float) -> tuple[float, float]:
    """``(min, max)`` of ``x + gamma x^2`` over ``x`` in ``[low, high]``, for ``gamma >= 0``.

    Examples:
        >>> quadratic_range(-3.0, 1.0, 0.5)  # the minimum -1/(4 gamma) at x = -1/(2 gamma) = -1
        (-0.5, 1.5)
    """
    low, high = check_scalar(low, "low"), check_scalar(high, "high")
    gamma = check_scalar(gamma, "gamma", ge=0)
    if low > high:
        raise ValueError(f"low must be <= high, got low={low!r}, high={high!r}")
    ends = [low + gamma * low * low, high + gamma * high * high]
    inside = [] if gamma == 0 else [x for x in (-0.5 / gamma,) if low <= x <= high]
    values = ends + [x + gamma * x * x for x in inside]
    return float(np.min(values)), float(np.max(values))
