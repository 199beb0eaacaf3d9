"""Chapter 5, generalisation: the range of the loss (Lemma ``c5-lem-range``), the algebra of the
one-sided search bias (Proposition ``c5-prop-search-bias``) and the Gaussian model's second moment
of the density ratio.
"""

from __future__ import annotations

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
