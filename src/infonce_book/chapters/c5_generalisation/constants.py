"""Chapter 5's constants of the models: the search constant and the density-ratio moments of the
vMF and the Gaussian model (the inputs of the search-bias bounds of claim C6), the smallest n at
which the covering bound falls below a target, and the numbers the exercises ask for."""

from __future__ import annotations

import math

import numpy as np

from ...theory.bounds import (
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    loss_range,
    max_negative_weight,
    rademacher_covering_bound,
    search_bias_bounds,
    search_bias_constant,
    vector_contraction_bound,
)

__all__ = ["sharp_informative_n", "search_bias_glue", "oracle_values", "vmf_search_constant", "vmf_ratio_moments", "gaussian_ratio_moments", "smallest_n_below",
           "exercise_numbers"]


def vmf_search_constant(model, tau: float) -> float:
    """``C_H(tau)`` of Corollary ``c5-cor-search-constant`` for the vMF ``model``:
    ``m = e^{kappa s}/Z(kappa)`` has ``m_min = e^{-kappa}/Z(kappa)``, ``E_pi m^2 = Z(2 kappa)/Z(kappa)^2``
    under every x."""
    kappa = model.kappa
    log_z1, log_z2 = model.log_partition(kappa), model.log_partition(2 * kappa)
    second = math.exp(log_z2 - 2 * log_z1)
    return search_bias_constant(tau, sd_m=math.sqrt(max(second - 1.0, 0.0)), second_moment_m=second,
                                m_min=math.exp(-kappa - log_z1))


def oracle_values(model, headlines: list) -> dict:
    """``{tau: E H(M_hat_k, Q_hat_k) - log k}`` of the identity embedding of the vMF ``model``,
    exactly (Laplace method), at the k and tau of each headline cell: the oracle baseline (the
    identity is the best embedding of the class at these cells: the trained ones come within
    ``p_eff / n`` of it and no closer, record ``C6-trained-vs-oracle-*``)."""
    return {float(h["tau"]): float(model.search_cross_entropy(h["k"], h["tau"]).mean) for h in headlines}


def vmf_ratio_moments(model) -> dict:
    """Moments of ``m = e^{kappa s}/Z(kappa)`` under ``pi`` for the vMF ``model`` (the same for
    every anchor): ``E_pi m^j = Z(j kappa)/Z(kappa)^j``. Returns the keyword arguments of
    :func:`~infonce_book.theory.bounds.search_bias_bounds` (``e_m2, var_m, sd_M_m, e_m_mminus1_sq,
    mu4``). Source: book, Proposition ``c5-prop-search-bias``."""
    lz = lambda b: float(model.log_partition(b))  # noqa: E731
    e = {j: math.exp(lz(j * model.kappa) - j * lz(model.kappa)) for j in (2, 3, 4)}
    return {"e_m2": e[2], "var_m": e[2] - 1.0, "sd_M_m": math.sqrt(max(e[3] - e[2] ** 2, 0.0)),
            "e_m_mminus1_sq": e[3] - 2.0 * e[2] + 1.0, "mu4": e[4] - 4.0 * e[3] + 6.0 * e[2] - 3.0}


def gaussian_ratio_moments(model) -> dict:
    """``E_x E_pi m(x, .)^2 = (1 - rho^2)^(-dim)`` for the Gaussian ``model`` (sympy:
    :func:`~infonce_book.theory.symbolic.gaussian_ratio_second_moment`); the keyword arguments of
    :func:`~infonce_book.theory.bounds.search_bias_bounds` (second-moment form only)."""
    return {"e_m2": (1.0 - model.rho**2) ** (-model.dim)}


def smallest_n_below(lipschitz: float, radius: float, n_params: int, target: float) -> int:
    """Smallest n with ``2 * rademacher_covering_bound(lipschitz, radius, n_params, n) < target``
    (the bound decreases in n; bisection over integers)."""
    def term(n):
        return 2.0 * rademacher_covering_bound(lipschitz, radius, n_params, int(n))

    hi = 1
    while term(hi) >= target:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if term(mid) >= target else (lo, mid)
    return int(hi)



def exercise_numbers(model, tau_star: float, tau_other: float, k: int = 16, radius: float = 0.5,
                     n_params: int = 9) -> dict:
    """The numbers the exercises ask for (vMF class ``NormalisedLinear(dim, radius)``, L = 1/(1-r)):
    ``Lambda_avg`` and ``Lambda_star`` at both temperatures and the smallest n with ``2 R_n < 1``
    by the covering bound (:func:`smallest_n_below`); the three forms of the search bias at k = 4
    and 16 and ``tau_star``; the growth factor of the vector bound from k = 16 to k = 256."""
    L = 1.0 / (1.0 - radius)
    out = {}
    for name, tau in (("star", tau_star), ("other", tau_other)):
        ones = np.ones(1)
        args = (L * ones, L * ones, L * np.ones((1, k)), tau)
        lam_avg = float(loss_lipschitz_constant(*args, kind="average")[0])
        lam_star = float(embedding_lipschitz_constant(*args)[0])
        out.update({f"lam_avg_{name}": lam_avg, f"lam_star_{name}": lam_star,
                    f"n_avg_{name}": smallest_n_below(lam_avg, radius, n_params, 1.0),
                    f"n_star_{name}": smallest_n_below(lam_star, radius, n_params, 1.0)})
    moments = vmf_ratio_moments(model)
    for kk in (4, 16):
        b = search_bias_bounds(kk, tau_star, **moments)
        out.update({f"b2_{kk}": b["second_moment"], f"b3_{kk}": b["third_moment"], f"b4_{kk}": b["two_term"]})
    width = [3.0 + math.sqrt(kk * max_negative_weight(kk, tau_star)) for kk in (16, 256)]
    out["vector_ratio"] = width[1] / width[0]
    return out



def search_bias_glue(model, tau: float, ks=(4, 16)) -> dict:
    """The page's numbers on the search bias at ``tau``: the moment bound ``b_k`` and the sharp
    ``b*_k`` for each k of ``ks`` (keys ``bk_moments_<k>``, ``bk_sharp_<k>``), nats."""
    moments = vmf_ratio_moments(model)
    out = {}
    for k in ks:
        out[f"bk_moments_{k}"] = float(search_bias_bounds(int(k), tau, **moments)["best"])
        out[f"bk_sharp_{k}"] = float(model.sharp_search_bias([int(k)], tau)[0])
    return out


def sharp_informative_n(model, k: int, tau: float, *, risk: float, delta: float, radius: float = 0.5,
                        n_params: int = 9, n_max: int = 10**9) -> int | None:
    """The smallest n at which the sharp uniform bound of Theorem ``c5-thm-main`` on the vMF class
    ``NormalisedLinear(dim, radius)`` would fall below the uniform search (0), if the empirical risk
    minus ``log k`` stayed at ``risk`` (e.g. the measured population value at the largest n of
    the grid): bisection over n of
    ``risk + 2 min(covering with Lambda_star, vector contraction) + B_k sqrt(log(1/delta)/2n) + b*_k``.
    ``None`` when even ``n_max`` does not suffice. A projection, not a measurement."""
    L = 1.0 / (1.0 - radius)
    ones = np.ones(1)
    lam = float(embedding_lipschitz_constant(L * ones, L * ones, L * np.ones((1, k)), tau)[0])
    b_star = float(model.sharp_search_bias([k], tau)[0])

    def bound(n):
        r = min(rademacher_covering_bound(lam, radius, n_params, n),
                vector_contraction_bound(n, k, tau, radius=radius, dim_out=model.dim, post_lipschitz=L))
        return risk + 2.0 * r + loss_range(k, tau) * math.sqrt(math.log(1.0 / delta) / (2.0 * n)) + b_star

    if bound(n_max) >= 0.0:
        return None
    lo, hi = 1, n_max
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bound(mid) >= 0.0 else (lo, mid)
    return int(hi)
