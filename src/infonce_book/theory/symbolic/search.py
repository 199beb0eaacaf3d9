"""Chapter 2, the similarity-search reading: the bias of the self-normalised average (Lemma
``c2-lem-snis``), the fully symbolic two-point model (Theorem ``c2-thm-search``, Proposition
``c2-prop-bayes``) and the moments of the Gaussian model's density ratio.

``I_f, s_N, s_D, s_ND`` are the target mean ``I`` and the (co)variances ``sigma_N^2``,
``sigma_D^2``, ``sigma_ND`` of numerator and denominator of Lemma ``c2-lem-snis``.
"""

from __future__ import annotations

import itertools

import sympy as sp

from ._symbols import beta, eps

I_f, s_N, s_D, s_ND = sp.symbols("I sigma_N^2 sigma_D^2 sigma_ND")


def snis_first_order():
    """First-order bias of the self-normalised average ``N/D`` (book, Lemma ``c2-lem-snis``).

    With ``N = I + a``, ``D = 1 + b``, ``E a = E b = 0``, ``Var a = sigma_N^2/k``,
    ``Var b = sigma_D^2/k``, ``Cov(a, b) = sigma_ND/k``: the expectation of the second-order
    Taylor polynomial of ``N/D`` is ``I + (I sigma_D^2 - sigma_ND)/k``. Returns the coefficient of
    ``1/k``; with ``sigma_D^2 = E m^2 - 1`` and ``sigma_ND = E[m^2 f] - I`` it equals
    ``-Cov_M(m, f)`` (checked in :func:`snis_constant_is_minus_covariance`).
    """
    a_, b_ = sp.symbols("a b")
    taylor = sp.series((I_f + a_) / (1 + b_), b_, 0, 3).removeO()
    taylor = sp.expand(taylor)
    # E over (a, b): replace monomials by their moments (terms of order three and more in (a, b)
    # are O(k^-2) and dropped).
    moments = {a_: 0, b_: 0, a_ * b_: s_ND * eps, b_**2: s_D * eps, a_**2: s_N * eps}
    expect = 0
    for term in sp.Add.make_args(taylor):
        coeff, mono = term.as_independent(a_, b_)
        deg = sp.Poly(mono, a_, b_).total_degree() if mono != 1 else 0
        if deg == 0:
            expect += term
        elif deg <= 2:
            expect += coeff * moments[mono]
    return sp.expand(sp.expand(expect).coeff(eps, 1))


def snis_constant_is_minus_covariance() -> bool:
    """``I sigma_D^2 - sigma_ND = -Cov_M(m, f)`` with ``E_M g = E_pi[m g]``: symbolic identity."""
    Em2, Em2f = sp.symbols("E_m2 E_m2f")  # E_pi[m^2] = E_M[m], E_pi[m^2 f] = E_M[m f]
    lhs = snis_first_order().subs({s_D: Em2 - 1, s_ND: Em2f - I_f})
    cov_M = Em2f - Em2 * I_f
    return sp.expand(lhs + cov_M) == 0


def snis_identities():
    """The two exact decompositions behind Lemma ``c2-lem-snis`` (no lower bound on the weights).

    With ``N = (1/k) sum m_j f_j``, ``D = (1/k) sum m_j``, ``I_hat = N/D`` and ``Y = N - I D``:
    ``I_hat - I = (N - I) + I_hat (1 - D)`` and
    ``I_hat - I = Y - Y (D - 1) + (I_hat - I)(D - 1)^2``; and the constant
    ``2 (R - 1)(2 R - 1) = (2 R - 3/2)^2 - 1/4``. Returns the three residuals (each simplifies to 0).
    """
    N_, D_, I_, R_ = sp.symbols("N D I R", real=True)
    J = N_ / D_
    Y = N_ - I_ * D_
    first = sp.simplify(J - I_ - ((N_ - I_) + J * (1 - D_)))
    second = sp.simplify(J - I_ - (Y - Y * (D_ - 1) + (J - I_) * (D_ - 1) ** 2))
    const = sp.expand(2 * (R_ - 1) * (2 * R_ - 1) - ((2 * R_ - sp.Rational(3, 2)) ** 2 - sp.Rational(1, 4)))
    return first, second, const


def two_point_model_search_check(k: int = 2):
    """A fully symbolic 2-point finite model: ``pi = (p, 1-p)``, ``M = [[a, 1-a], [b, 1-b]]``,
    cosines ``s = [[1, c], [c, 1]]``.

    Returns sympy expressions ``(E[H(M_hat_k, Q_hat_k)] - log k, L_k - log k, d1)`` in
    ``p, a, b, c, beta`` by enumerating every database (and, for ``L_k``, every positive), with
    ``d1 = sum_x pi(x) [beta Cov_{M(x,.)}(m, s) - u1(x)]`` the constant of Theorem ``c2-thm-search``.
    """
    p, a_, b_, c = sp.symbols("p a b c", positive=True)
    pi = [p, 1 - p]
    M = [[a_, 1 - a_], [b_, 1 - b_]]
    S = [[1, c], [c, 1]]
    m = [[M[x][y] / pi[y] for y in range(2)] for x in range(2)]
    W = [[sp.exp(beta * S[x][y]) for y in range(2)] for x in range(2)]
    H = 0
    Lk = 0
    for x in range(2):
        for db in itertools.product(range(2), repeat=k):
            prob = pi[x] * sp.Mul(*[pi[j] for j in db])
            zq = sum(W[x][j] for j in db)
            zm = sum(m[x][j] for j in db)
            H += prob * sum(-(m[x][j] / zm) * sp.log(W[x][j] / zq) for j in db)
            for y in range(2):
                Lk += prob * M[x][y] * (-beta * S[x][y] + sp.log(W[x][y] + zq))
    mu = [sum(pi[y] * W[x][y] for y in range(2)) for x in range(2)]
    d1 = 0
    for x in range(2):
        e_m = sum(M[x][y] * m[x][y] for y in range(2))
        e_s = sum(M[x][y] * S[x][y] for y in range(2))
        e_ms = sum(M[x][y] * m[x][y] * S[x][y] for y in range(2))
        u1_x = sum(M[x][y] * W[x][y] for y in range(2)) / mu[x]
        d1 += pi[x] * (beta * (e_ms - e_m * e_s) - u1_x)
    return H - sp.log(k), Lk - sp.log(k), d1


def two_point_posterior_check(k: int = 2):
    """Proposition ``c2-prop-bayes`` on the symbolic two-point model (:func:`two_point_model_search_check`):
    with the positive at a uniform position ``J`` among ``k + 1`` candidates, Bayes' formula
    ``P(J = j | x, c) = M(x, c_j) prod_{i != j} pi(c_i) / sum_l M(x, c_l) prod_{i != l} pi(c_i)``
    equals ``m(x, c_j) / sum_i m(x, c_i)`` for every query and every candidate list.

    Returns the list of residuals (one per query, candidate list and position), all 0 after
    simplification.
    """
    p, a_, b_ = sp.symbols("p a b", positive=True)
    pi = [p, 1 - p]
    M = [[a_, 1 - a_], [b_, 1 - b_]]
    m = [[M[x][y] / pi[y] for y in range(2)] for x in range(2)]
    out = []
    for x in range(2):
        for cand in itertools.product(range(2), repeat=k + 1):
            joint = [M[x][cand[j]] * sp.Mul(*[pi[cand[i]] for i in range(k + 1) if i != j]) for j in range(k + 1)]
            zm = sum(m[x][c] for c in cand)
            out += [sp.simplify(joint[j] / sum(joint) - m[x][cand[j]] / zm) for j in range(k + 1)]
    return out


def gaussian_density_ratio_moments():
    """Moments of the Gaussian model's density ratio, one coordinate at a time (book, Chapter 2).

    ``x+ = rho x + sqrt(1 - rho^2) xi``: per coordinate ``m = N(y; rho x, 1 - rho^2) / N(y; 0, 1)``.
    By ``int e^{-a y^2 + b y + c} dy = sqrt(pi/a) e^{b^2/(4a) + c}`` (``a > 0``):
    returns ``(a_2, E_pi m^2, E_x E_pi m^2)`` per coordinate as functions of ``rho`` and ``x``:
    ``a_2 = (1 + rho^2)/(2(1 - rho^2)) > 0``, ``E_pi m^2 = (1 - rho^4)^{-1/2} e^{rho^2 x^2/(1 + rho^2)}``,
    and its mean over ``x ~ N(0, 1)``, ``1/(1 - rho^2)`` (``E e^{g x^2} = (1 - 2g)^{-1/2}``).
    """
    y, x = sp.symbols("y x", real=True)
    r = sp.Symbol("rho", positive=True)
    s2 = 1 - r**2
    log_integrand = -(y - r * x) ** 2 / s2 - sp.log(2 * sp.pi * s2) + y**2 / 2 + sp.log(2 * sp.pi) / 2
    P = sp.Poly(sp.expand(log_integrand), y)
    a_, b_, c_ = -P.coeff_monomial(y**2), P.coeff_monomial(y), P.coeff_monomial(1)
    second = sp.simplify(sp.sqrt(sp.pi / a_) * sp.exp(b_**2 / (4 * a_) + c_))
    g = r**2 / (1 + r**2)
    mean_over_x = sp.simplify(sp.exp(-(r**2) * x**2 / (1 + r**2)) * second / sp.sqrt(1 - 2 * g))
    return sp.simplify(a_), second, sp.simplify(mean_over_x)


def gaussian_third_moment_threshold():
    """The Gaussian model's third moment of the density ratio, one coordinate at a time:
    ``E_pi m^3 = e^{3 rho^2 x^2/(1 + 2 rho^2)} / ((1 - rho^2) sqrt(1 + 2 rho^2))`` (the Gaussian
    integral with ``j = 3``), whose mean over ``x ~ N(0, 1)`` is finite iff
    ``3 rho^2/(1 + 2 rho^2) < 1/2``. Returns ``(E_pi m^3 - closed form, the positive root of
    3 rho^2/(1 + 2 rho^2) = 1/2)``: the residual simplifies to 0 and the root is 1/2.
    """
    y, x = sp.symbols("y x", real=True)
    r = sp.Symbol("rho", positive=True)
    s2 = 1 - r**2
    log_integrand = (-3 * (y - r * x) ** 2 / (2 * s2) - 3 * sp.log(2 * sp.pi * s2) / 2
                     + y**2 + sp.log(2 * sp.pi))
    P = sp.Poly(sp.expand(log_integrand), y)
    a_, b_, c_ = -P.coeff_monomial(y**2), P.coeff_monomial(y), P.coeff_monomial(1)
    third = sp.sqrt(sp.pi / a_) * sp.exp(b_**2 / (4 * a_) + c_)
    closed = sp.exp(3 * r**2 * x**2 / (1 + 2 * r**2)) / ((1 - r**2) * sp.sqrt(1 + 2 * r**2))
    root = sp.solve(sp.Eq(3 * r**2 / (1 + 2 * r**2), sp.Rational(1, 2)), r)
    return sp.simplify(third / closed - 1), root
