"""Chapter 5, generalisation: the range of the loss (Lemma ``c5-lem-range``), the algebra of the
one-sided search bias (Proposition ``c5-prop-search-bias``), the Gaussian model's second moment
of the density ratio, the exact search correction (Proposition ``c5-prop-search-exact``), the
un-expected Bernstein inequality (Lemma ``c5-lem-unexpected-bernstein``) and the curvature of the
normalised linear class (Lemma ``c5-lem-curvature``).
"""

from __future__ import annotations

import itertools

import sympy as sp

from ._symbols import beta, k


def loss_range_width():
    """Lemma ``c5-lem-range``: the width ``B_k = log((1 + k e^{2 beta}) / (1 + k e^{-2 beta}))``.

    Returns ``(width, limit, dwidth_dk)``: the width, its limit as ``k -> infinity`` (``4 beta``),
    and its derivative in k, ``(e^{2b} - e^{-2b}) / ((1 + k e^{2b})(1 + k e^{-2b})) > 0``.
    """
    width = sp.log((1 + k * sp.exp(2 * beta)) / (1 + k * sp.exp(-2 * beta)))
    limit = sp.limit(width, k, sp.oo)
    dwidth = sp.simplify(sp.diff(width, k))
    return width, sp.simplify(limit), dwidth


def snis_bias_identities():
    """The algebra behind the one-sided search bias (book, Proposition ``c5-prop-search-bias``).

    Returns a dict of expressions that simplify to 0:

    * ``"first"``: ``Y/D - [Y - Y (D - 1) + (Y/D)(D - 1)^2]``;
    * ``"second"``: ``(Y/D)(D - 1)^2 - [Y (D - 1)^2 - (Y/D)(D - 1)^3]``;
    * ``"third_moment_max"``: for ``f(I) = a sqrt(1 - I^2) + c (1 + I)`` (``a, c > 0``), ``f`` at
      ``I* = c / sqrt(a^2 + c^2)`` minus ``c + sqrt(a^2 + c^2)``; and ``"third_moment_stationary"``:
      ``f'(I*)``. (``f`` is concave on ``[-1, 1]``, so ``I*`` is its maximum.)
    * ``"mean_*"``: moments of the means of three i.i.d. pairs ``(a_i, y_i)`` with ``E a = E y = 0``,
      against ``E[ybar abar] = E[y a]/k``, ``E[ybar abar^2] = E[y a^2]/k^2``,
      ``E[abar^2] = E a^2/k`` and ``E[abar^4] = (E a^4 + 3 (k - 1) (E a^2)^2)/k^3``, ``k = 3``.
    """
    Y, D = sp.symbols("Y D", real=True)
    out = {"first": sp.simplify(Y / D - (Y - Y * (D - 1) + (Y / D) * (D - 1) ** 2)),
           "second": sp.simplify((Y / D) * (D - 1) ** 2 - (Y * (D - 1) ** 2 - (Y / D) * (D - 1) ** 3))}
    av, cv = sp.symbols("a c", positive=True)
    mean_s = sp.Symbol("I", real=True)
    f = av * sp.sqrt(1 - mean_s**2) + cv * (1 + mean_s)
    istar = cv / sp.sqrt(av**2 + cv**2)
    out["third_moment_max"] = sp.simplify(f.subs(mean_s, istar) - (cv + sp.sqrt(av**2 + cv**2)))
    out["third_moment_stationary"] = sp.simplify(sp.diff(f, mean_s).subs(mean_s, istar))
    n = 3
    A = sp.symbols(f"a0:{n}", real=True)
    Ys = sp.symbols(f"y0:{n}", real=True)
    abar, ybar = sum(A) / n, sum(Ys) / n

    def expect(expr):
        """E of a polynomial in i.i.d. pairs (a_i, y_i), E a = E y = 0: monomial -> M_{r,t}."""
        total = sp.Integer(0)
        for term in sp.Add.make_args(sp.expand(expr)):
            coeff, factors = term.as_coeff_mul()
            powers = dict(f_.as_base_exp() for f_ in factors)
            value = coeff
            for i in range(n):
                r_, t_ = powers.get(A[i], 0), powers.get(Ys[i], 0)
                if (r_, t_) in ((1, 0), (0, 1)):
                    value = sp.Integer(0)
                    break
                if (r_, t_) != (0, 0):
                    value *= sp.Symbol(f"M{r_}{t_}")
            total += value
        return sp.simplify(total)

    M11, M21, M20, M40 = (sp.Symbol(s_) for s_ in ("M11", "M21", "M20", "M40"))
    out["mean_ya"] = sp.simplify(expect(ybar * abar) - M11 / n)
    out["mean_ya2"] = sp.simplify(expect(ybar * abar**2) - M21 / n**2)
    out["mean_a2"] = sp.simplify(expect(abar**2) - M20 / n)
    out["mean_a4"] = sp.simplify(expect(abar**4) - (M40 + 3 * (n - 1) * M20**2) / n**3)
    return out


def gaussian_ratio_second_moment(rho=sp.Rational(4, 5)):
    """``E_x E_pi m(x, .)^2`` for the Gaussian model in one dimension (book, generalisation chapter):
    with ``m(x, y) = N(y; rho x, 1 - rho^2) / N(y; 0, 1)``, returns ``(conditional, outer)`` where
    ``conditional`` is ``E_pi m(x,.)^2`` divided by ``exp(rho^2 x^2/(1 + rho^2))/sqrt(1 - rho^4)``
    (simplifies to 1) and ``outer`` is ``E_x`` of that closed form times ``1 - rho^2`` (simplifies
    to 1). In ``R^p`` the coordinates are independent: ``E_x E_pi m^2 = (1 - rho^2)^(-p)``."""
    x, y = sp.symbols("x y", real=True)
    v = 1 - rho**2

    def pdf(z, mean, var):
        return sp.exp(-(z - mean) ** 2 / (2 * var)) / sp.sqrt(2 * sp.pi * var)

    m = pdf(y, rho * x, v) / pdf(y, 0, 1)
    cond = sp.integrate(sp.expand(sp.simplify(m**2 * pdf(y, 0, 1))), (y, -sp.oo, sp.oo))
    claim = sp.exp(rho**2 * x**2 / (1 + rho**2)) / sp.sqrt(1 - rho**4)
    outer = sp.integrate(sp.expand(claim * pdf(x, 0, 1)), (x, -sp.oo, sp.oo))
    return sp.simplify(cond / claim), sp.simplify(outer * v)


def search_correction_identities():
    """The algebra of the exact search correction (book, Proposition ``c5-prop-search-exact``),
    exactly, for a density ratio with two values ``m in {1 - a, 1 + a}`` (probabilities 1/2,
    ``0 < a < 1``) and ``k = 2, 3``: ``w_k(v) = k v E[1/(v + S_{k-1})]`` by enumeration.

    Returns a dict of expressions that simplify to 0: ``"mass_k<k>"``, ``E_pi w_k(m) - 1`` (the mean
    idealised search is a probability law), and ``"bias_k<k>"``, ``E[sum_j m_j s_j / sum_j m_j] -
    E_pi[s w_k(m)]`` for a similarity ``s`` taking the values ``s0, s1`` at the two points (the
    exchangeability step of the proof), with the left side by enumeration of the databases.
    """
    a, s0, s1 = sp.symbols("a s0 s1", real=True)
    vals = (1 - a, 1 + a)
    sims = (s0, s1)
    out = {}
    for kk in (2, 3):
        dbs = list(itertools.product(range(2), repeat=kk))
        weight = sp.Rational(1, 2**kk)

        def w(v, kk=kk):
            rest = list(itertools.product(range(2), repeat=kk - 1))
            return kk * v * sum(sp.Rational(1, 2 ** (kk - 1)) / (v + sum(vals[i] for i in r)) for r in rest)

        out[f"mass_k{kk}"] = sp.simplify(sum(w(v) for v in vals) / 2 - 1)
        lhs = sum(weight * sum(vals[i] * sims[i] for i in db) / sum(vals[i] for i in db) for db in dbs)
        rhs = sum(sims[j] * w(vals[j]) for j in range(2)) / 2
        out[f"bias_k{kk}"] = sp.simplify(lhs - rhs)
    return out


def unexpected_bernstein_identities():
    """The steps of the un-expected Bernstein inequality (book, Lemma ``c5-lem-unexpected-bernstein``).

    With ``psi(l) = -log(1 - l) - l`` and ``g(x) = log(1 + l x) - l x + psi(l) x^2`` for
    ``0 < l < 1``, ``x >= -1``, returns a dict of expressions that simplify to 0:

    * ``"g_at_minus_one"``: ``g(-1)``; ``"g_at_zero"``: ``g(0)``;
    * ``"g_prime"``: ``g'(x) - x (2 psi(l) - l^2/(1 + l x))`` (the factorisation of the proof);
    * ``"psi_series"``: ``psi(l) - sum_{j=2}^{7} l^j / j`` to order ``l^8`` (so ``psi(l) >= l^2/2``);
    * ``"exp_step"``: ``d/dy [e^y (1 - y)] + y e^y`` (so ``e^y (1 - y) <= 1``, with equality at 0).
    """
    lam, x, y = sp.symbols("lambda x y", real=True)
    psi = -sp.log(1 - lam) - lam
    g = sp.log(1 + lam * x) - lam * x + psi * x**2
    series = sp.series(psi, lam, 0, 8).removeO()
    return {"g_at_minus_one": sp.simplify(g.subs(x, -1)), "g_at_zero": sp.simplify(g.subs(x, 0)),
            "g_prime": sp.simplify(sp.diff(g, x) - x * (2 * psi - lam**2 / (1 + lam * x))),
            "psi_series": sp.simplify(series - sum(lam**j / j for j in range(2, 8))),
            "exp_step": sp.simplify(sp.diff(sp.exp(y) * (1 - y), y) + y * sp.exp(y))}


def normalisation_curvature():
    """The curvature of ``e(u) = v(u)/|v(u)|`` for ``v(u) = v0 + u w`` in the plane (book, Lemma
    ``c5-lem-curvature``). Returns a dict of expressions that simplify to 0:

    * ``"second_derivative"``: each coordinate of ``e''(0) - [-2 (n'/n) e'(0) - |e'(0)|^2 e(0)]``,
      with ``n = |v|`` and ``n' = <e, w>`` at ``u = 0``;
    * ``"split"``: ``|w|^2/n^2 - (a^2 + c^2)`` with ``a = n'/n``, ``c = |e'(0)|`` (an orthogonal
      decomposition of ``w/n``);
    * ``"max"``: ``max_{q in [0, r]} q (4 r - 3 q) - 4 r^2 / 3`` (``q = c^2``, ``r = rho^2``), and
      ``"argmax"``: ``q* - 2 r / 3``.
    """
    v1, v2, w1, w2, u = sp.symbols("v1 v2 w1 w2 u", real=True)
    vec = sp.Matrix([v1 + u * w1, v2 + u * w2])
    n = sp.sqrt(vec.dot(vec))
    e = vec / n
    e1, e2 = e.diff(u), e.diff(u, 2)
    at0 = {u: 0}
    n0, wvec = n.subs(at0), sp.Matrix([w1, w2])
    ndot = (e.subs(at0)).dot(wvec)
    claim = -2 * (ndot / n0) * e1.subs(at0) - (e1.subs(at0).dot(e1.subs(at0))) * e.subs(at0)
    out = {f"second_derivative_{i}": sp.simplify(e2.subs(at0)[i] - claim[i]) for i in range(2)}
    out["split"] = sp.simplify(wvec.dot(wvec) / n0**2 - ((ndot / n0) ** 2 + e1.subs(at0).dot(e1.subs(at0))))
    q, r = sp.symbols("q r", positive=True)
    f = q * (4 * r - 3 * q)
    qstar = sp.solve(sp.diff(f, q), q)[0]
    out["max"] = sp.simplify(f.subs(q, qstar) - sp.Rational(4, 3) * r**2)
    out["argmax"] = sp.simplify(qstar - sp.Rational(2, 3) * r)
    return out
