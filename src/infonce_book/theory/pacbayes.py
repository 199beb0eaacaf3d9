"""PAC-Bayes certificates for losses with a bounded range (book, Theorem ``c5-thm-pac-bayes``).

For a loss rescaled to ``[0, 1]``, a prior ``P`` fixed before the data and any posterior ``Q``,
Maurer's PAC-Bayes-kl bound (Maurer 2004, "A note on the PAC Bayesian theorem"; Seeger 2002 for
0-1 losses) says that with probability at least ``1 - delta`` over n i.i.d. examples, for every
``Q`` at once,

    kl(L_hat(Q) || L(Q)) <= (KL(Q || P) + log(xi(n) / delta)) / n,
    xi(n) = sum_{j=0}^n C(n, j) (j/n)^j (1 - j/n)^(n-j)   (sqrt(n) <= xi(n) <= 2 sqrt(n)),

where ``kl`` is the relative entropy of two Bernoulli laws. Inverting ``kl`` bounds the risk
``L(Q)``. When ``L_hat(Q)`` is itself estimated by ``M`` i.i.d. Monte Carlo draws with mean
``S``, the Chernoff bound in kl form (Hoeffding 1963; Langford & Caruana 2001) adds
``L_hat(Q) <= kl^{-1}(S, log(1/delta') / M)`` with probability ``1 - delta'``.

Functions: :func:`kl_bernoulli`, :func:`kl_inverse_upper`, :func:`log_xi`,
:func:`gaussian_kl_isotropic`, :func:`pac_bayes_kl_certificate`. All in nats.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from ..utils.validation import check_k, check_scalar

__all__ = ["kl_bernoulli", "kl_inverse_upper", "log_xi", "gaussian_kl_isotropic", "pac_bayes_kl_certificate"]


def _check_unit(x: float, name: str) -> float:
    x = check_scalar(x, name, ge=0)
    if x > 1.0:
        raise ValueError(f"{name} must lie in [0, 1] (a probability or a rescaled risk), got {name}={x!r}")
    return x


def kl_bernoulli(q: float, p: float) -> float:
    """``kl(q || p) = q log(q/p) + (1-q) log((1-q)/(1-p))``, the relative entropy of Bernoulli(q)
    to Bernoulli(p), in nats (``0 log 0 = 0``; ``inf`` when ``p`` is 0 or 1 and ``q != p``).

    Args:
        q, p: numbers in [0, 1].
    Raises:
        ValueError: q or p outside [0, 1].

    Examples:
        >>> round(kl_bernoulli(0.5, 0.25), 6)
        0.143841
        >>> kl_bernoulli(0.0, 0.5) == math.log(2)
        True
    """
    q, p = _check_unit(q, "q"), _check_unit(p, "p")
    h = p - q
    if q in (0.0, 1.0) or p in (0.0, 1.0) or abs(h) >= 0.01 * min(q, 1.0 - q):
        out = 0.0
        if q > 0.0:
            out += math.inf if p == 0.0 else q * math.log(q / p)
        if q < 1.0:
            out += math.inf if p == 1.0 else (1.0 - q) * (math.log1p(-q) - math.log1p(-p))
        return out
    # p close to q: kl = q phi(h/q) + (1-q) phi(-h/(1-q)) with phi(x) = x - log(1 + x) >= 0 (series):
    # the two first-order terms cancel exactly, so small differences p - q keep their accuracy.
    return q * _x_minus_log1p(h / q) + (1.0 - q) * _x_minus_log1p(-h / (1.0 - q))


def _x_minus_log1p(x: float) -> float:
    """``x - log(1 + x)`` for ``x > -1``, accurate to rounding also for small ``|x|`` (series)."""
    if abs(x) < 0.01:
        # sum_{j >= 2} (-1)^j x^j / j, 12 terms: truncation below 1e-24 relative
        return sum((-1) ** j * x**j / j for j in range(2, 14))
    return x - math.log1p(x)


def kl_inverse_upper(q: float, c: float, *, tol: float = 1e-12) -> float:
    """``kl^{-1}(q, c) = sup{p in [q, 1] : kl(q || p) <= c}``, the upper inverse of the Bernoulli kl.

    ``kl(q || .)`` is continuous and increasing on ``[q, 1]``; bisection keeps
    ``kl(q || lo) <= c < kl(q || hi)`` and returns ``hi`` (an upper end, within ``tol`` of the
    inverse: conservative). Exact edge cases: ``q = 1`` gives 1 and ``c = 0`` gives ``q``; for
    ``q < 1``, ``kl(q || p) -> inf`` as ``p -> 1``, so the result is below 1 up to ``tol`` (or
    rounding, for a huge ``c``). Increasing in both arguments.

    Args:
        q: in [0, 1]. c: >= 0. tol: bracket width > 0.
    Returns:
        a float in [q, 1].
    Raises:
        ValueError: q outside [0, 1], c negative or not finite.

    Examples:
        >>> round(kl_inverse_upper(0.0, math.log(2)), 9)  # kl(0 || p) = -log(1 - p)
        0.5
        >>> kl_inverse_upper(0.3, 0.0)
        0.3
    """
    q = _check_unit(q, "q")
    c = check_scalar(c, "c", ge=0)
    tol = check_scalar(tol, "tol", gt=0)
    if q >= 1.0:
        return 1.0
    if c == 0.0:
        return q
    lo, hi = q, 1.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if kl_bernoulli(q, mid) <= c:
            lo = mid
        else:
            hi = mid
    return hi


def log_xi(n: int) -> float:
    """``log xi(n)`` with ``xi(n) = sum_{j=0}^n C(n, j) (j/n)^j (1 - j/n)^(n-j)`` (Maurer 2004), in
    log space; ``sqrt(n) <= xi(n) <= 2 sqrt(n)``.

    Args:
        n: an integer >= 1.

    Examples:
        >>> round(math.exp(log_xi(1)), 12)  # two terms, each 1
        2.0
    """
    n = check_k(n, "n")
    j = np.arange(n + 1, dtype=np.float64)
    log_binom = special.gammaln(n + 1) - special.gammaln(j + 1) - special.gammaln(n - j + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(j > 0, j * np.log(j / n), 0.0)
        b = np.where(j < n, (n - j) * np.log((n - j) / n), 0.0)
    return float(special.logsumexp(log_binom + a + b))


def gaussian_kl_isotropic(mean_q: ArrayLike, mean_p: ArrayLike, s_q: float, s_p: float) -> float:
    """``KL(N(mean_q, s_q^2 I_P) || N(mean_p, s_p^2 I_P))`` in nats:
    ``(1/2) [P (r - 1 - log r) + |mean_q - mean_p|^2 / s_p^2]`` with ``r = s_q^2 / s_p^2``.

    Args:
        mean_q, mean_p: arrays of the same shape (P entries). s_q, s_p: scales > 0.

    Examples:
        >>> gaussian_kl_isotropic([1.0, 0.0], [0.0, 0.0], 1.0, 1.0)
        0.5
    """
    mq, mp = np.asarray(mean_q, dtype=np.float64).ravel(), np.asarray(mean_p, dtype=np.float64).ravel()
    if mq.shape != mp.shape or mq.size == 0:
        raise ValueError(f"mean_q and mean_p must have the same (non-empty) shape, got {mq.shape} and {mp.shape}")
    if not (np.all(np.isfinite(mq)) and np.all(np.isfinite(mp))):
        raise ValueError("mean_q and mean_p must be finite")
    s_q, s_p = check_scalar(s_q, "s_q", gt=0), check_scalar(s_p, "s_p", gt=0)
    r = (s_q / s_p) ** 2
    return float(0.5 * (mq.size * (r - 1.0 - math.log(r)) + np.sum((mq - mp) ** 2) / s_p**2))


def pac_bayes_kl_certificate(mc_mean: float, m_draws: int, kl_qp: float, n: int, *, delta: float,
                             delta_mc: float, n_priors: int = 1) -> dict:
    """Upper bound on the ``[0, 1]``-rescaled risk ``L(Q)`` of a randomised predictor ``Q``.

    With ``mc_mean`` the mean of ``m_draws`` i.i.d. rescaled losses ``l(theta_l; z_{i_l})``
    (``theta_l ~ Q``, ``i_l`` uniform on the n training examples, drawn after ``Q`` was chosen),
    ``kl_qp = KL(Q || P_g)`` for the prior ``P_g`` of a grid of ``n_priors`` priors fixed before the
    data, then with probability at least ``1 - delta - delta_mc``

    ``L(Q) <= kl^{-1}(kl^{-1}(mc_mean, log(1/delta_mc)/m_draws), (kl_qp + log(n_priors xi(n)/delta))/n)``.

    Args:
        mc_mean: in [0, 1]. m_draws: >= 1. kl_qp: >= 0. n: training examples >= 1.
        delta, delta_mc: confidence levels in (0, 1). n_priors: size of the prior grid (>= 1).
    Returns:
        dict with ``empirical_upper`` (the Monte Carlo upper bound on ``L_hat(Q)``), ``rhs`` (the
        PAC-Bayes-kl right side) and ``risk_upper`` (the bound on ``L(Q)``), all in [0, 1].
    Source: book, Theorem ``c5-thm-pac-bayes``.
    """
    mc_mean = _check_unit(mc_mean, "mc_mean")
    m_draws, n, n_priors = check_k(m_draws, "m_draws"), check_k(n, "n"), check_k(n_priors, "n_priors")
    kl_qp = check_scalar(kl_qp, "kl_qp", ge=0)
    for name, d in (("delta", delta), ("delta_mc", delta_mc)):
        if not 0.0 < check_scalar(d, name, gt=0) < 1.0:
            raise ValueError(f"{name} must be in (0, 1), got {name}={d!r}")
    empirical_upper = kl_inverse_upper(mc_mean, math.log(1.0 / delta_mc) / m_draws)
    rhs = (kl_qp + log_xi(n) + math.log(n_priors / delta)) / n
    return {"empirical_upper": empirical_upper, "rhs": rhs, "risk_upper": kl_inverse_upper(empirical_upper, rhs)}
