"""Chapter 1, in-batch negatives (CLIP, NT-Xent): the bias of NT-Xent, whose ``k = 2B - 2``
negatives come in ``B - 1`` i.i.d. pairs of views (book, Propositions ``c1-prop-clip`` and
``c1-prop-ntxent``).

The pair enters through its mean, whose central moments involve ``gamma = Cov(V, V' | x)``
(:data:`gamma_pair`) and ``lambda_3 = E[(V - 1)^2 (V' - 1) | x]`` (:data:`delta_pair`), and the
expansion of :func:`~infonce_book.theory.symbolic.rate.log_expansion` with ``block = 2``.
"""

from __future__ import annotations

import sympy as sp

from ._symbols import beta, kappa, v2, v3
from .rate import log_expansion

gamma_pair = sp.Symbol("gamma", real=True)  # Cov(V, V' | x): the two views of one other pair
delta_pair = sp.Symbol("lambda_3", real=True)  # E[(V - 1)^2 (V' - 1) | x], printed lambda_3


def ntxent_bias_coefficients(order: int = 2) -> tuple[sp.Expr, ...]:
    """``c_1^NT`` and ``c_2^NT`` of NT-Xent's bias, ``k = 2B - 2`` negatives in ``B - 1`` i.i.d.
    pairs of views (book, Proposition ``c1-prop-ntxent``).

    The pair enters through its mean ``Q = (V + V')/2 - 1``, whose central moments are
    ``(v2 + gamma)/2`` and ``(v3 + 3 delta)/4`` (``(V, V')`` exchangeable given the anchor), and
    :func:`log_expansion` with ``block = 2``. Returns expressions in ``u1, u2, v2, v3, gamma,
    delta``; with ``gamma = delta = 0`` they are InfoNCE's ``c_1, c_2``.
    """
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got order={order!r}")
    coeffs = log_expansion("standard", order, block=2)
    q = {v2: (v2 + gamma_pair) / 2, v3: (v3 + 3 * delta_pair) / 4}
    return tuple(sp.expand(c.xreplace(q)) for c in coeffs)


def pair_block_third_moment() -> sp.Expr:
    """``E Q^3 = (v3 + 3 delta)/4`` for ``Q = (a + b)/2`` with ``(a, b)`` exchangeable, centred,
    ``E a^3 = v3`` and ``E a^2 b = E a b^2 = delta``: returns the expanded ``E (a + b)^3 / 8`` with
    the moments substituted (sympy expands the cube; nothing is typed in but the moments)."""
    a_, b_ = sp.symbols("a b")
    cube = sp.Poly(sp.expand((a_ + b_) ** 3 / 8), a_, b_)
    moment = {(3, 0): v3, (0, 3): v3, (2, 1): delta_pair, (1, 2): delta_pair}
    return sp.expand(sum(c * moment[mon] for mon, c in zip(cube.monoms(), cube.coeffs())))


def vmf3_pair_moment() -> tuple[sp.Expr, sp.Expr, tuple[dict, dict]]:
    """``E[W W' | a]`` on ``S^2`` for the two views ``x_j``, ``x_j^+`` of another pair (book,
    Proposition ``c1-prop-ntxent``): with ``t = <a, x_j>`` uniform on [-1, 1],
    ``E[e^{beta <a, x_j^+>} | x_j] = Z(|kappa x_j + beta a|)/Z(kappa)`` and the substitution
    ``r^2 = kappa^2 + beta^2 + 2 kappa beta t``, the mean is
    ``(1/(2 kappa beta Z(kappa))) int_{|kappa-beta|}^{kappa+beta} e^{(r^2-kappa^2-beta^2)/(2kappa)} sinh r dr``.

    Returns ``(F, dF/dr - integrand, substitution residuals)``: an erfi antiderivative ``F`` of
    the integrand, and residuals that simplify to 0 (``e^{beta t}`` and ``dt = r dr/(kappa beta)``).
    """
    r = sp.Symbol("r", positive=True)
    tt = sp.Symbol("t", real=True)
    integrand = sp.exp((r**2 - kappa**2 - beta**2) / (2 * kappa)) * sp.sinh(r)
    F = (sp.exp(-(2 * kappa**2 + beta**2) / (2 * kappa)) * sp.sqrt(2 * sp.pi * kappa) / 4
         * (sp.erfi((r + kappa) / sp.sqrt(2 * kappa)) - sp.erfi((r - kappa) / sp.sqrt(2 * kappa))))
    resid = sp.simplify((sp.diff(F, r) - integrand).rewrite(sp.exp))
    rt = sp.sqrt(kappa**2 + beta**2 + 2 * kappa * beta * tt)
    subs1 = sp.simplify(sp.exp(beta * tt) - sp.exp((rt**2 - kappa**2 - beta**2) / (2 * kappa)))
    subs2 = sp.simplify(sp.diff(rt, tt) * rt - kappa * beta)
    return F, resid, (subs1, subs2)
