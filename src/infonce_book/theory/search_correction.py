"""The search cross-entropy as the decoupled risk plus an exact, linear correction (book,
Proposition ``c5-prop-search-exact``), and the sharpest search bias that holds for every
similarity function (its Corollary ``c5-cor-sharp-bias``).

Fix a query ``x`` and let ``m = m(x, .)`` be the density ratio of the positive's law to ``pi``.
For a database of ``k`` i.i.d. draws from ``pi``, the idealised search puts weight
``m_j / sum_i m_i`` on item ``j``; averaged over databases it is the law ``w_k pi`` with density

    w_k(v) = k v E[1 / (v + S_{k-1})],   S_{k-1} = m_2 + ... + m_k,   (w_1 = 1),

evaluated at ``v = m(y)``. Then, for every similarity ``s(x, .)`` with values in ``[-1, 1]``,

    E H(M_hat_k, Q_hat_k) - L_k^dec = beta E_x int s(x, y) (m(x, y) - w_k(m(x, y))) pi(dy),

and the supremum over all such ``s`` is ``b*_k = beta E_x int |m - w_k(m)| d pi`` (twice the total
variation between ``M(x, .)`` and the mean idealised search), attained by ``s = sign(m - w_k(m))``.

Here the law of ``m`` under ``pi`` is a discrete one (values ``m_i`` with probabilities ``p_i``:
quadrature nodes of a continuous law, or the exact law of a finite model), the same for every
query (as in the vMF model). ``1/S = int_0^inf e^{-uS} du`` turns ``w_k - m`` into a
one-dimensional integral of a smooth function, computed as a difference directly (so the small
correction is not a difference of two large numbers), as in
:func:`infonce_book.theory.exact.snis_bias`.

Functions: :func:`ideal_search_excess` (``w_k(m_i) - m_i``), :func:`search_correction`,
:func:`sharp_search_bias`. In nats where a temperature enters.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate

from ..utils.validation import check_k, check_tau
from .exact import log_laplace_discrete

__all__ = ["ideal_search_excess", "search_correction", "sharp_search_bias"]


def _check_law(m: ArrayLike, p: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    m, p = np.asarray(m, dtype=np.float64), np.asarray(p, dtype=np.float64)
    for name, a in (("m", m), ("p", p)):
        if a.ndim != 1 or a.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains NaN or infinite entries")
    if m.shape != p.shape:
        raise ValueError(f"m and p must have the same length; got m {m.shape}, p {p.shape}")
    if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"p must be a probability vector (entries >= 0 summing to 1), got sum {p.sum():.12g}")
    if np.any(m <= 0):
        raise ValueError(f"m must be > 0 (a density ratio), got min m={m.min():.6g}")
    if abs(p @ m - 1.0) > 1e-9:
        raise ValueError(f"m must have mean 1 under p (a density ratio), got E_p m = {p @ m:.12g}")
    return m, p


def ideal_search_excess(m: ArrayLike, p: ArrayLike, ks: ArrayLike) -> tuple[np.ndarray, float]:
    """``w_k(m_i) - m_i`` for every value ``m_i`` of the density ratio and every k, exactly.

    ``w_k(v) = k v E[1/(v + S_{k-1})]`` is the density, with respect to ``pi``, of the mean
    idealised search over a database of size k (module docstring). With ``u = t/k`` and
    ``1/S = int_0^inf e^{-uS} du``,
    ``w_k(v) - v = int_0^inf v (e^{-t v / k} L(t/k)^{k-1} - e^{-t}) dt``, ``L(u) = E_p e^{-u m}``.

    Args:
        m, p: the law of ``m`` under ``pi`` (values > 0, probabilities; ``E_p m = 1``).
        ks: integers >= 1.
    Returns:
        ``(excess, error)``: an array of shape ``(len(ks), len(m))`` and the quadrature's absolute
        error estimate. Row ``k`` satisfies ``p @ excess[k] = 0`` (both densities integrate to 1).
    Raises:
        ValueError: a law that is not one (shapes, negative or non-finite values, ``E_p m != 1``).
    Source: book, Proposition ``c5-prop-search-exact``.

    Examples:
        >>> m, p = np.array([0.5, 1.5]), np.array([0.5, 0.5])
        >>> excess, _ = ideal_search_excess(m, p, [1, 2])
        >>> np.round(excess, 6).tolist()  # w_1 = 1; w_2(v) = 2v E[1/(v + m_2)]
        [[0.5, -0.5], [0.25, -0.25]]
    """
    m, p = _check_law(m, p)
    ks_arr = np.asarray([check_k(k, meaning="database size") for k in np.atleast_1d(ks)], dtype=np.float64)

    def integrand(z: float) -> np.ndarray:  # t = e^z, dt = t dz
        t = math.exp(z)
        u = t / ks_arr
        with np.errstate(invalid="ignore", divide="ignore"):
            rest = np.where(ks_arr > 1, (ks_arr - 1) * log_laplace_discrete(u, m, p), 0.0)  # L^0 = 1 always
        tilted = np.exp(-np.multiply.outer(u, m) + rest[:, None])  # (K, N)
        return (m * (tilted - math.exp(-t)) * t).ravel()

    z_hi = math.log(60.0 / min(1.0, m.min()))
    while np.max(np.abs(integrand(z_hi))) > 1e-22:
        z_hi += 1.0
    values, err = integrate.quad_vec(integrand, math.log(1e-20), z_hi, epsabs=1e-15, epsrel=1e-12, limit=2000)
    return values.reshape(len(ks_arr), len(m)), float(err)


def search_correction(m: ArrayLike, f: ArrayLike, p: ArrayLike, ks: ArrayLike, tau: float) -> np.ndarray:
    """``E H(M_hat_k, Q_hat_k) - L_k^dec = beta E_p[f (m - w_k(m))]`` for the similarity profile f.

    Args:
        m, p: the law of the density ratio under ``pi`` (as :func:`ideal_search_excess`).
        f: the similarity ``s(x, y)`` at each node, in ``[-1, 1]`` (a function of the node, as
            for an embedding whose similarity to the query is a function of ``m``).
        ks: integers >= 1. tau: temperature > 0.
    Returns:
        One value per k, in nats.
    Source: book, Proposition ``c5-prop-search-exact``.

    Examples:
        >>> m, p = np.array([0.5, 1.5]), np.array([0.5, 0.5])
        >>> round(float(search_correction(m, np.array([-1.0, 1.0]), p, [1], 1.0)[0]), 12)  # E_pi[s (m - 1)]
        0.5
    """
    beta = 1.0 / check_tau(tau)
    m, p = _check_law(m, p)
    f = np.asarray(f, dtype=np.float64)
    if f.shape != m.shape or not np.all(np.isfinite(f)) or np.any(np.abs(f) > 1.0 + 1e-12):
        raise ValueError(f"f must give a similarity in [-1, 1] at each of the {m.size} values of m")
    excess, _ = ideal_search_excess(m, p, ks)
    return -beta * (excess @ (p * f))


def sharp_search_bias(m: ArrayLike, p: ArrayLike, ks: ArrayLike, tau: float) -> np.ndarray:
    """``b*_k = beta E_p|m - w_k(m)|``: the largest ``E H(M_hat_k, Q_hat_k) - L_k^dec`` over every
    similarity function with values in ``[-1, 1]`` (attained by ``s = sign(m - w_k(m))``).

    It is at most ``2 beta`` (twice a total variation), and at most every moment form ``b_k`` of
    Proposition ``c5-prop-search-bias`` (each bounds the same supremum).

    Args:
        m, p: the law of the density ratio under ``pi`` (the same for every query).
        ks: integers >= 1. tau: temperature > 0.
    Returns:
        One value per k, in nats.
    Source: book, Corollary ``c5-cor-sharp-bias``.

    Examples:
        >>> m, p = np.array([0.5, 1.5]), np.array([0.5, 0.5])
        >>> round(float(sharp_search_bias(m, p, [1], 1.0)[0]), 12)  # E_pi |m - 1|
        0.5
    """
    beta = 1.0 / check_tau(tau)
    m, p = _check_law(m, p)
    excess, _ = ideal_search_excess(m, p, ks)
    return beta * (np.abs(excess) @ p)
