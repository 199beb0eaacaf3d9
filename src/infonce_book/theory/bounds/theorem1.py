"""Theorem 1 (book, Theorem ``c5-thm-main``), term by term: the range of the loss (Lemma
``c5-lem-range``), the complexity, confidence and search-bias terms, and their sum.
"""

from __future__ import annotations

import math

from ...losses import VARIANTS
from ...utils.validation import check_choice, check_k, check_scalar, check_tau


def loss_range(k, tau, *, variant: str = "standard") -> float:
    """Width ``B`` of the range of ``l_k`` over similarity vectors in ``[-1, 1]^{k+1}`` (nats).

    Standard: ``l_k`` lies in ``[log(1 + k e^{-2 beta}), log(1 + k e^{2 beta})]``, a width below
    ``4 beta`` for every k; decoupled: in ``[log k - 2 beta, log k + 2 beta]``, width ``4 beta``.
    Source: book, Lemma ``c5-lem-range``.
    """
    check_choice(variant, "variant", VARIANTS)
    k = check_k(k)
    beta = 1.0 / check_tau(tau)
    if variant == "decoupled":
        return 4.0 * beta
    # log(1 + k e^{2b}) - log(1 + k e^{-2b}), in a form that does not overflow
    hi = 2.0 * beta + math.log(k) + math.log1p(math.exp(-2.0 * beta) / k)
    lo = math.log1p(k * math.exp(-2.0 * beta))
    return float(hi - lo)


def theorem1_terms(*, train_risk: float, k: int, n: int, tau: float, delta: float, rademacher: float,
                   search_constant: float | None = None, search_bias: float | None = None,
                   variant: str = "standard") -> dict:
    """The terms of Theorem 1 (book, Theorem ``c5-thm-main``), each by name, in nats.

    With probability at least ``1 - delta`` over the n training tuples, for every embedding of the
    class, ``E H(M_k, Q_k) - log k <= bound`` where ``bound`` is the sum of

    * ``empirical_risk``: ``L_hat_{n,k}(phi) - log k`` (``train_risk`` minus log k),
    * ``complexity``: ``2 R_n`` (``rademacher`` is an upper bound of the expected Rademacher
      complexity ``R_n`` of the loss class, e.g. from ``rademacher_covering_bound``),
    * ``confidence``: ``B sqrt(log(1/delta) / (2n))`` with ``B = loss_range(k, tau)`` (< 4 beta),
    * ``search_bias``: ``C / k`` with ``C = search_constant`` (``search_bias_constant``), or the
      value ``search_bias`` itself (an upper bound on ``E H(M_k, Q_k) - L_k`` valid for every
      embedding, e.g. ``search_bias_bounds(...)["best"]``; give at most one of the two); NaN when
      neither is given (then ``bound`` is a bound on ``L_k(phi) - log k`` only, and ``bound_on``
      says so).

    Returns a dict with those keys plus ``range_B``, ``bound`` and ``bound_on``.
    """
    k, n = check_k(k), check_k(n, "n")
    tau = check_tau(tau)
    check_choice(variant, "variant", VARIANTS)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise TypeError(f"delta must be a number in (0, 1) (the failure probability), got {delta!r}")
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got delta={delta!r}")
    train_risk = check_scalar(train_risk, "train_risk")
    rademacher = check_scalar(rademacher, "rademacher", ge=0)
    B = loss_range(k, tau, variant=variant)
    terms = {"empirical_risk": float(train_risk - math.log(k)), "complexity": 2.0 * rademacher,
             "confidence": B * math.sqrt(math.log(1.0 / delta) / (2.0 * n)), "range_B": B}
    if search_constant is not None and search_bias is not None:
        raise ValueError("give search_constant (C, the term is C/k) or search_bias (the term itself), not both")
    if search_bias is not None:
        terms["search_bias"] = check_scalar(search_bias, "search_bias", ge=0)
        terms["bound"] = terms["empirical_risk"] + terms["complexity"] + terms["confidence"] + terms["search_bias"]
        terms["bound_on"] = "E H(M_k, Q_k) - log k"
    elif search_constant is None:
        terms["search_bias"] = float("nan")
        terms["bound"] = terms["empirical_risk"] + terms["complexity"] + terms["confidence"]
        terms["bound_on"] = "L_k - log k"
    else:
        terms["search_bias"] = check_scalar(search_constant, "search_constant", ge=0) / k
        terms["bound"] = terms["empirical_risk"] + terms["complexity"] + terms["confidence"] + terms["search_bias"]
        terms["bound_on"] = "E H(M_k, Q_k) - log k"
    return terms
