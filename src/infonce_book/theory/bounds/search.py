"""The search bias ``E H(M_hat_k, Q_hat_k) - L_k``: the constant ``B_S`` of the self-normalised
average (Lemma ``c2-lem-snis``), the uniform constants ``C_H(tau)`` of Theorem ``c2-thm-search``
(under a second moment of the density ratio, or a lower bound of it; Corollary
``c5-cor-search-constant``), and the bounds of Proposition ``c5-prop-search-bias``.
"""

from __future__ import annotations

import math

import numpy as np

from ...utils.validation import check_k, check_scalar, check_tau, exp_or_raise


def snis_bias_constant(*, var_m: float, var_mf: float, cov_mf: float, mean_f: float) -> float:
    """``B_S`` of Lemma ``c2-lem-snis``: ``k |E I_hat_k - I| <= B_S`` for every k >= 1, with

    ``B_S = min( sqrt(2 Var(m) (Var(m f) + Var(m))), |Cov_M(m, f)| + (1 + |I|) Var(m) )``

    for a self-normalised average of ``f`` (values in [-1, 1]) with weights ``m`` (``E m = 1``,
    ``E m^2 < inf``) under the sampling law, ``I`` the target mean of f; ``B_S <= 2 E m^2 - 3/2``.

    Args:
        var_m: ``Var(m) = E m^2 - 1 >= 0``. var_mf: ``Var(m f) >= 0``. cov_mf: ``Cov_M(m, f)``
            under the target ``M = m P``. mean_f: ``I`` in [-1, 1].
    Source: book, Chapter 2, Lemma ``c2-lem-snis``.
    """
    var_m, var_mf = check_scalar(var_m, "var_m", ge=0), check_scalar(var_mf, "var_mf", ge=0)
    cov_mf, mean_f = check_scalar(cov_mf, "cov_mf"), check_scalar(mean_f, "mean_f")
    if abs(mean_f) > 1.0 + 1e-12:
        raise ValueError(f"mean_f must lie in [-1, 1] (the mean of f with values in [-1, 1]), got {mean_f!r}")
    return float(min(math.sqrt(2.0 * var_m * (var_mf + var_m)), abs(cov_mf) + (1.0 + abs(mean_f)) * var_m))


def search_bias_constant_l2(tau, *, second_moment) -> float:
    """Uniform constant ``C_H(tau)`` of Theorem ``c2-thm-search`` under a second moment only:

    ``|E H(M_hat_k, Q_hat_k) - L_k| <= C_H(tau) / k`` with
    ``C_H(tau) = beta (2 R_bar - 3/2) + e^{2 beta}``, ``beta = 1/tau``,

    for every embedding into the closed unit ball and every k >= 1, where
    ``R_bar = E_x E_pi m(x, .)^2 = 1 + chi^2(law of (x, x+) || pi x pi)`` (``second_moment``,
    >= 1). No lower bound on the density ratio ``m`` is needed (compare
    :func:`search_bias_constant`, which assumes one).

    Examples:
        >>> round(search_bias_constant_l2(0.5, second_moment=1.0), 4)  # positives independent
        55.5982

    Raises:
        ValueError: tau not in (0, inf); second_moment not a finite number >= 1.
        OverflowError: e^{2 beta} exceeds float64.
    Source: book, Chapter 2, Lemma ``c2-lem-snis`` and Theorem ``c2-thm-search``.
    """
    beta = 1.0 / check_tau(tau)
    r_bar = check_scalar(second_moment, "second_moment")
    if not r_bar >= 1.0:
        raise ValueError(f"second_moment must be >= 1 (E_pi m^2 >= (E_pi m)^2 = 1), got second_moment={r_bar!r}")
    return float(beta * (2.0 * r_bar - 1.5) + float(exp_or_raise(2.0 * beta, "e^(2 beta)", tau)))


def search_bias_constant(tau, *, sd_m: float, second_moment_m: float, m_min: float) -> float:
    """Uniform constant ``C`` with ``|E H(M_k, Q_k) - L_k| <= C / k`` for every embedding into the
    sphere (book, Corollary ``c5-cor-search-constant``, from Theorem ``c2-thm-search``):

    ``C_H(tau) = 2 beta sd_pi(m) sqrt(E_pi m^2) / m_min + e^{2 beta}``,

    where ``m = dM(x, .)/dpi`` (here assumed to have the same law under pi for every x, as in the
    vMF model), ``sd_m`` its standard deviation under pi, ``second_moment_m = E_pi m^2`` and
    ``m_min > 0`` a lower bound of m.
    """
    tau = check_tau(tau)
    beta = 1.0 / tau
    sd_m, second = check_scalar(sd_m, "sd_m", ge=0), check_scalar(second_moment_m, "second_moment_m", ge=0)
    m_min = check_scalar(m_min, "m_min", ge=0)
    if m_min == 0.0:
        raise ValueError("m_min must be > 0: the C2 bound needs the density ratio m bounded below, got m_min=0.0")
    out = 2.0 * beta * sd_m * math.sqrt(second) / m_min + float(exp_or_raise(2.0 * beta, "e^(2 beta)", tau))
    if not math.isfinite(out):
        raise OverflowError(f"C_H(tau) overflows float64 at tau={tau!r}")
    return float(out)


def search_bias_bounds(k, tau, *, e_m2: float, var_m: float | None = None, sd_M_m: float | None = None,
                       e_m_mminus1_sq: float | None = None, mu4: float | None = None) -> dict:
    """Upper bounds on ``E H(M_k, Q_k) - L_k`` valid for every embedding into the closed unit ball.

    The inputs are moments of the density ratio ``m = m(x, .) = dM(x, .)/dpi`` under ``pi`` (their
    averages over the anchor x where a form is linear in them): ``e_m2 = E_pi m^2``,
    ``var_m = Var_pi m``, ``sd_M_m`` the standard deviation of m under ``M(x, .)``
    (``sqrt(E_pi m^3 - (E_pi m^2)^2)``), ``e_m_mminus1_sq = E_pi[m (m - 1)^2]``,
    ``mu4 = E_pi (m - 1)^4``. With ``beta = 1/tau``:

    * ``second_moment``: ``2 beta E_pi m^2 / k``;
    * ``third_moment``: ``(beta/k) (Var_pi m + sqrt(sd_M(m)^2 + Var_pi(m)^2))`` (NaN without
      ``var_m`` and ``sd_M_m``);
    * ``two_term``: ``beta [sd_M(m)/k + 2 E_pi[m (m-1)^2]/k^2
      + 2 sqrt(Var_pi m (mu4 + 3 (k-1) Var_pi(m)^2)) / k^2]`` (NaN without all four moments);
    * ``cap``: ``2 beta``; ``best``: the smallest of the available ones (each is valid, so is the
      minimum; no union bound, they are deterministic).

    Args:
        k: database size >= 1. tau: temperature. e_m2: >= 1 (since E_pi m = 1).
        var_m, sd_M_m, e_m_mminus1_sq, mu4: >= 0 or None.
    Returns:
        dict of floats (nats) with the keys above.
    Raises:
        ValueError: e_m2 < 1, a negative moment, only some of the moments a form needs.
    Source: book, Proposition ``c5-prop-search-bias``.

    Examples:
        >>> b = search_bias_bounds(16, 0.5, e_m2=2.0746)
        >>> round(b["second_moment"], 4), b["best"] == b["second_moment"]
        (0.5187, True)
    """
    k = check_k(k, meaning="database size")
    beta = 1.0 / check_tau(tau)
    e_m2 = check_scalar(e_m2, "e_m2", ge=0)
    if e_m2 < 1.0 - 1e-12:
        raise ValueError(f"e_m2 = E_pi m^2 must be >= 1 (m is a density ratio, E_pi m = 1), got e_m2={e_m2!r}")
    given = {name: (None if v is None else check_scalar(v, name, ge=0)) for name, v in
             (("var_m", var_m), ("sd_M_m", sd_M_m), ("e_m_mminus1_sq", e_m_mminus1_sq), ("mu4", mu4))}
    out = {"second_moment": 2.0 * beta * e_m2 / k, "third_moment": float("nan"), "two_term": float("nan"),
           "cap": 2.0 * beta}
    v, s = given["var_m"], given["sd_M_m"]
    if (v is None) != (s is None):
        raise ValueError("the third-moment form needs both var_m and sd_M_m; got only one of them")
    if v is not None:
        out["third_moment"] = beta * (v + math.sqrt(s * s + v * v)) / k
    e3, m4 = given["e_m_mminus1_sq"], given["mu4"]
    if (e3 is None) != (m4 is None) or (e3 is not None and v is None):
        raise ValueError("the two-term form needs var_m, sd_M_m, e_m_mminus1_sq and mu4 together")
    if e3 is not None:
        d2 = v / k
        d4 = (m4 + 3.0 * (k - 1) * v * v) / k**3
        out["two_term"] = beta * (s / k + 2.0 * e3 / k**2 + 2.0 * math.sqrt(d2 * d4))
    out["best"] = float(np.nanmin([out["second_moment"], out["third_moment"], out["two_term"], out["cap"]]))
    return out
