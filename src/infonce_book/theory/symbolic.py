"""Symbolic derivations (sympy) that the chapters display and the tests assert.

Chapter C1 (the O(1/k) rate). Fix an anchor ``x`` and write, with ``mu = E[W | x]``,

* ``V = W / mu`` for a negative weight (mean 1; central moments ``v2, v3, v4, ...``),
* ``U = W+ / mu`` for the positive weight (raw moments ``u1, u2, u3, ...``),
* ``T = (U + sum_{j<=k} V_j) / k`` (standard) or ``T = sum_j V_j / k`` (decoupled),

so that ``L_k - log k - L_inf = E_x E[log T | x]`` (book, Chapter 1, Lemma ``c1-lem-identity``). Then
``E[log T | x] = c1/k + c2/k^2 + c3/k^3 + O(k^-4)`` with coefficients that are polynomials in the
moments. :func:`bias_expansion` derives them: the cumulants of the sample mean of k i.i.d. copies
of ``V - 1`` are ``kappa_r / k^(r-1)``; its moments follow from the cumulant generating function;
``log(1 + D)`` is expanded in powers of ``D = (mean of V) - 1 + U/k`` and collected in ``1/k``.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import sympy as sp
from IPython.display import Math

# Symbols shared with the book's notation page.
eps = sp.Symbol("epsilon", positive=True)  # eps = 1/k
k = sp.Symbol("k", positive=True, integer=True)
beta, kappa, tau = sp.symbols("beta kappa tau", positive=True)
t, a = sp.symbols("t a", positive=True)
u1, u2, u3, u4 = sp.symbols("u1:5", positive=True)
v2, v4 = sp.symbols("v2 v4", positive=True)
v3 = sp.Symbol("v3", real=True)
v5, v6 = sp.symbols("v5 v6", real=True)



def _v(r: int) -> sp.Symbol:
    """Central moment ``v_r = E (V - 1)^r`` of the normalised negative weight."""
    return {2: v2, 3: v3, 4: v4, 5: v5, 6: v6}.get(r) or sp.Symbol(f"v{r}", real=True)


def _u(j: int) -> sp.Symbol:
    """Raw moment ``u_j = E U^j`` of the normalised positive weight."""
    return {1: u1, 2: u2, 3: u3, 4: u4}.get(j) or sp.Symbol(f"u{j}", positive=True)


def _moments_from_cumulants_recursion(kap: dict, N: int) -> dict:
    """Moments ``E A^n`` (n = 0..N) of a centred variable from its cumulants ``kap[2..N]`` by the
    moment--cumulant recursion ``E A^n = sum_{j=2}^{n} C(n-1, j-1) kappa_j E A^(n-j)``."""
    mu = {0: sp.Integer(1), 1: sp.Integer(0)}
    for n in range(2, N + 1):
        mu[n] = sp.expand(sum(sp.binomial(n - 1, j - 1) * kap[j] * mu[n - j] for j in range(2, n + 1)))
    return mu


@lru_cache(maxsize=None)
def _cumulants_in_central_moments(N: int) -> dict:
    """Cumulants ``kappa_2 .. kappa_N`` of a centred variable as polynomials in its central moments
    ``v_2 .. m_N`` (the recursion of :func:`_moments_from_cumulants_recursion`, solved for kappa_n)."""
    kap = {}
    mom = {0: sp.Integer(1), 1: sp.Integer(0), **{r: _v(r) for r in range(2, N + 1)}}
    for n in range(2, N + 1):
        kap[n] = sp.expand(mom[n] - sum(sp.binomial(n - 1, j - 1) * kap[j] * mom[n - j] for j in range(2, n)))
    return kap


@lru_cache(maxsize=None)
def mean_moments(N: int, block: int = 1) -> dict:
    """Moments ``E A^r`` (r = 0..N) of ``A``, the mean of ``k / block`` i.i.d. copies of a centred
    variable with central moments ``v_2, v_3, ...``, as exact polynomials in ``epsilon = 1/k``.

    The cumulants of a mean of ``n`` i.i.d. copies are ``kappa_r / n^(r-1)``; with ``n = k/block``
    they are ``kappa_r (block epsilon)^(r-1)``. ``block = 1``: InfoNCE's ``k`` negatives;
    ``block = 2``: NT-Xent's ``k/2`` pairs of views (book, Chapter 1, in-batch section).
    """
    kap = _cumulants_in_central_moments(N)
    kap_mean = {r: kap[r] * (block * eps) ** (r - 1) for r in range(2, N + 1)}
    return _moments_from_cumulants_recursion(kap_mean, N)


def _moments_of_D(N: int, variant: str, block: int = 1) -> dict:
    """``E D^n`` (n = 1..N) for ``D = T - 1 = A + U epsilon`` (standard) or ``A`` (decoupled), with
    ``A`` (:func:`mean_moments`) independent of the positive's weight ``U`` (raw moments ``u_j``)."""
    A = mean_moments(N, block)
    if variant == "standard":
        ub = {0: sp.Integer(1), **{j: _u(j) * eps**j for j in range(1, N + 1)}}
    else:
        ub = {0: sp.Integer(1), **{j: sp.Integer(0) for j in range(1, N + 1)}}
    return {n: sp.expand(sum(sp.binomial(n, j) * A[j] * ub[n - j] for j in range(n + 1))) for n in range(1, N + 1)}


@lru_cache(maxsize=None)
def log_expansion(variant: str = "standard", order: int = 4, *, block: int = 1):
    """Coefficients ``c_1 .. c_order`` of ``E[log T | x] = sum_n c_n / k^n + O(k^-(order+1/2))``,
    for orders 1 to 4, and for negatives that come one at a time (``block = 1``) or in i.i.d.
    blocks of ``block`` correlated ones (then ``v_r`` are the central moments of the block mean).

    ``log(1 + D)`` is expanded to the power ``2 order + 2`` (``E D^n`` has no term below
    ``epsilon^ceil(n/2)``, so higher powers cannot contribute) and ``E D^n`` collected in
    ``epsilon = 1/k``; the moments of the sample mean come from its cumulants
    (:func:`mean_moments`). Source: book, Chapter 1, Propositions ``c1-prop-second-order`` and
    ``c1-prop-third-order``; blocks: Proposition ``c1-prop-ntxent``.

    Raises:
        ValueError: variant not "standard"/"decoupled"; order not in 1..4; block not 1 or 2.
    """
    if variant not in ("standard", "decoupled"):
        raise ValueError(f"variant must be one of ['decoupled', 'standard'], got variant={variant!r}")
    if order not in (1, 2, 3, 4):
        raise ValueError(f"order must be 1, 2, 3 or 4, got order={order!r}")
    if block not in (1, 2):
        raise ValueError(f"block must be 1 (single negatives) or 2 (pairs of views), got block={block!r}")
    N = 2 * order + 2
    ED = _moments_of_D(N, variant, block)
    poly = sp.expand(sum(sp.Rational((-1) ** (n + 1), n) * ED[n] for n in range(1, N + 1)))
    if sp.expand(poly.coeff(eps, 0)) != 0:  # pragma: no cover - would be an algebra error
        raise AssertionError("E[log T] has a constant term")
    return tuple(sp.expand(poly.coeff(eps, n)) for n in range(1, order + 1))


@lru_cache(maxsize=None)
def bias_expansion(variant: str = "standard", order: int = 2):
    """Coefficients ``c_1 .. c_order`` of ``E[log T | x] = sum_n c_n / k^n + O(k^-(order+1))``.

    Args:
        variant: ``"standard"`` or ``"decoupled"``.
        order: 1, 2 or 3 (:func:`log_expansion` goes to 4 and handles pairs of negatives).
    Returns:
        A tuple of sympy expressions in ``u1.. (positive raw moments)`` and ``v2.. (negative
        central moments)``, all normalised by ``mu``.
    Source: book, Chapter 1, Theorem ``c1-thm-rate`` and its symbolic check.
    """
    if variant not in ("standard", "decoupled"):
        raise ValueError(f"variant must be one of ['decoupled', 'standard'], got variant={variant!r}")
    if order not in (1, 2, 3):
        raise ValueError(f"order must be 1, 2 or 3, got order={order!r}")
    return log_expansion(variant, order)


def moments_of_T_minus_one(variant: str = "standard"):
    """``E[T - 1 | x]`` and ``E[(T - 1)^2 | x]`` as functions of ``k``, derived from the cumulants
    of the sample mean (the machinery of :func:`log_expansion`), not typed in.

    Returns ``(E(T-1), E(T-1)^2, E A^4)``: ``u1/k``, ``v2/k + u2/k^2`` and
    ``3 v2^2/k^2 + (v4 - 3 v2^2)/k^3`` for the standard variant (``0``, ``v2/k`` for the
    decoupled one), with ``A`` the mean of the ``k`` centred normalised negative weights.
    Source: book, Chapter 1, proof of Theorem ``c1-thm-rate``, Part 2.
    """
    if variant not in ("standard", "decoupled"):
        raise ValueError(f"variant must be one of ['decoupled', 'standard'], got variant={variant!r}")
    ED = _moments_of_D(2, variant)
    A4 = mean_moments(4)[4]
    return tuple(sp.expand(e.subs(eps, 1 / k)) for e in (ED[1], ED[2], A4))


def c1_formula(variant: str = "standard"):
    """The closed form quoted in the book: ``u1 - v2/2`` (standard) or ``-v2/2`` (decoupled)."""
    return u1 - v2 / 2 if variant == "standard" else -v2 / 2


def c2_formula(variant: str = "standard"):
    """``-u2/2 + v3/3 + v2 u1 - 3 v2^2/4`` (standard) or ``v3/3 - 3 v2^2/4`` (decoupled)."""
    if variant == "standard":
        return -u2 / 2 + v3 / 3 + v2 * u1 - sp.Rational(3, 4) * v2**2
    return v3 / 3 - sp.Rational(3, 4) * v2**2


def as_math(**named):
    """Display sympy expressions as typeset equations: ``as_math(c_1=expr, c_2=expr)``.

    Returns an ``IPython.display.Math`` object (one aligned line per name), so that chapters
    show mathematics rather than strings. Names like ``c_1`` or ``c_1^dec`` are typeset as given.
    """
    lines = []
    for name, expr in named.items():
        if name.endswith("_dec"):
            name = name[: -len("_dec")] + r"^{\mathrm{dec}}"
        relation = " " if "&" in name else " &= "  # a name may carry its own relation, e.g. "x &\\le"
        lines.append(name + relation + sp.latex(expr))
    return Math(r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}")


# ----------------------------------------------------------------------------------------------
# The elementary inequality behind the non-asymptotic bound.


def log_lower_bound_derivative():
    """``d/dt [log t - (t-1) + (t-1)^2/(2a)]``, factorised: ``(t-1)(t-a)/(a t)``.

    For ``t >= a`` the sign is that of ``t - 1``; with ``0 < a <= 1`` the bracket is therefore
    minimal at ``t = 1``, where it vanishes: ``log t >= (t-1) - (t-1)^2/(2a)`` for all ``t >= a``
    (book, Lemma ``c1-lem-log``; the condition ``a <= 1`` is needed). With ``a <= 1`` the same holds with ``2a^2`` in place of ``2a`` (weaker).
    """
    f = sp.log(t) - (t - 1) + (t - 1) ** 2 / (2 * a)
    return sp.factor(sp.together(sp.diff(f, t)))


def nonasymptotic_bias_bounds(variant: str = "standard"):
    """Lower and upper bounds on ``k E[log T | x]`` (book, Theorem ``c1-thm-rate`` (ii)).

    Upper: Jensen, then ``log(1+y) <= y``: ``E log T <= log E T = log(1 + u1/k) <= u1/k``.
    Lower: Lemma ``c1-lem-log`` with ``a <= 1`` a lower bound of ``T`` and ``E(T-1) = u1/k``,
    ``E(T-1)^2 = v2/k + u2/k^2``.

    Returns:
        ``(lower, upper)`` sympy expressions in ``k, a, u1, u2, v2`` for ``k E[log T | x]``.
    """
    if variant == "standard":
        ET1, ET12 = u1 / k, v2 / k + u2 / k**2
        upper = u1
    else:
        ET1, ET12 = sp.Integer(0), v2 / k
        upper = sp.Integer(0)
    lower = sp.expand(k * (ET1 - ET12 / (2 * a)))
    return lower, upper


def uniform_constant_worst_case():
    """The joint worst case over embeddings in Part 3 of Theorem ``c1-thm-rate``.

    For a fixed anchor with ``mu in [e^-beta, e^beta]``: ``u2 <= e^{2beta}/mu^2``, Bhatia--Davis
    ``sigma^2 <= (e^beta - mu)(mu - e^-beta)`` and ``1/(2a) = mu e^beta / 2`` give
    ``(v2 + u2)/(2a) <= e^beta g(mu) / 2`` with ``g(mu) = ((e^beta - mu)(mu - e^-beta) + e^{2beta})/mu``.

    Returns:
        ``(g, dg/dmu, g(e^-beta))`` as sympy expressions in ``mu`` and ``beta``; the derivative is
        ``-1 - (e^{2beta} - 1)/mu^2 < 0`` and ``g(e^-beta) = e^{3beta}``.
    """
    mu = sp.Symbol("mu", positive=True)
    g = ((sp.exp(beta) - mu) * (mu - sp.exp(-beta)) + sp.exp(2 * beta)) / mu
    return g, sp.simplify(sp.diff(g, mu)), sp.simplify(g.subs(mu, sp.exp(-beta)))


def uniform_bias_constant():
    """``C(tau) = max(e^{2 beta}, e^{4 beta}/2)``: ``|L_k - log k - L_inf| <= C(tau)/k`` for every
    embedding into the sphere, every Markov kernel, every k >= 1 and both variants.

    The first term bounds ``u1 <= e^beta/mu <= e^{2beta}`` (upper side); the second is
    ``e^beta g(e^-beta) / 2`` from :func:`uniform_constant_worst_case` (lower side).
    """
    _, _, g_max = uniform_constant_worst_case()
    return sp.Max(sp.exp(2 * beta), sp.simplify(sp.exp(beta) * g_max / 2))


# ----------------------------------------------------------------------------------------------
# The vMF model on S^2 (dim = 3): closed forms.


def vmf3_partition():
    """``Z(beta) = E_{y ~ unif(S^2)} e^{beta <x,y>}``: ``<x,y>`` is uniform on [-1,1] (Archimedes),
    so ``Z = (1/2) int_{-1}^{1} e^{beta s} ds = sinh(beta)/beta``."""
    s = sp.Symbol("s", real=True)
    return sp.simplify(sp.integrate(sp.exp(beta * s), (s, -1, 1)) / 2)


def vmf3_bias_coefficients(variant: str = "standard"):
    """``c1, c2`` for the vMF model on S^2 with phi = identity, in closed form in beta and kappa.

    Moments: ``E W^j = Z(j beta)``, ``E (W+)^j = Z(kappa + j beta)/Z(kappa)``, with
    ``Z(b) = sinh(b)/b``.
    """
    Z = sp.Lambda(sp.Symbol("b"), sp.sinh(sp.Symbol("b")) / sp.Symbol("b"))
    mu = Z(beta)
    EV = {j: Z(j * beta) / mu**j for j in range(1, 4)}
    subs = {
        u1: Z(kappa + beta) / Z(kappa) / mu,
        u2: Z(kappa + 2 * beta) / Z(kappa) / mu**2,
        v2: EV[2] - 1,
        v3: EV[3] - 3 * EV[2] + 2,
    }
    c1, c2 = bias_expansion(variant, 2)
    return c1.subs(subs), c2.subs(subs)


@lru_cache(maxsize=None)
def bias_coefficient_functions(variant: str = "standard", order: int = 3):
    """Numerical functions of the moments for ``c_1 .. c_order`` (lambdified from sympy).

    Each takes the positional arguments ``u1, u2, u3, v2, v3, v4`` (floats or numpy arrays),
    ignoring those it does not use; for ``order = 4`` two more follow, ``u4, v5``.
    """
    args = (u1, u2, u3, v2, v3, v4) + ((u4, v5) if order == 4 else ())
    coeffs = log_expansion(variant, order)
    return tuple(sp.lambdify(args, c, "numpy") for c in coeffs)


def third_order_formulas():
    """The closed forms of ``c_3`` and ``c_4`` (standard variant) as printed in the book
    (Proposition ``c1-prop-third-order``); the chapter checks them against :func:`log_expansion`."""
    R = sp.Rational
    c3 = (u3 / 3 - R(3, 2) * v2 * u2 - v3 * u1 + 3 * v2**2 * u1 + 2 * v2 * v3 - v4 / 4 + R(3, 4) * v2**2
          - R(5, 2) * v2**3)
    c4 = (-u4 / 4 + 2 * v2 * u3 + 2 * v3 * u2 - R(15, 2) * v2**2 * u2 + v4 * u1 - 10 * v2 * v3 * u1
          - 3 * v2**2 * u1 + 15 * v2**3 * u1 + v5 / 5 - R(5, 3) * v3**2 - R(5, 2) * v2 * v4 - 2 * v2 * v3
          + 15 * v2**2 * v3 + R(15, 2) * v2**3 - R(105, 8) * v2**4)
    return c3, c4


# ----------------------------------------------------------------------------------------------
# Chapter C1, in-batch negatives (CLIP, NT-Xent).

gamma_pair = sp.Symbol("gamma", real=True)  # Cov(V, V' | x): the two views of one other pair
delta_pair = sp.Symbol("lambda_3", real=True)  # E[(V - 1)^2 (V' - 1) | x], printed lambda_3


def ntxent_bias_coefficients(order: int = 2):
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


def pair_block_third_moment():
    """``E Q^3 = (v3 + 3 delta)/4`` for ``Q = (a + b)/2`` with ``(a, b)`` exchangeable, centred,
    ``E a^3 = v3`` and ``E a^2 b = E a b^2 = delta``: returns the expanded ``E (a + b)^3 / 8`` with
    the moments substituted (sympy expands the cube; nothing is typed in but the moments)."""
    a_, b_ = sp.symbols("a b")
    cube = sp.Poly(sp.expand((a_ + b_) ** 3 / 8), a_, b_)
    moment = {(3, 0): v3, (0, 3): v3, (2, 1): delta_pair, (1, 2): delta_pair}
    return sp.expand(sum(c * moment[mon] for mon, c in zip(cube.monoms(), cube.coeffs())))


def vmf3_pair_moment():
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


# ----------------------------------------------------------------------------------------------
# Chapter C2: the similarity-search reading.

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


# ----------------------------------------------------------------------------------------------
# Chapter C3: the temperature as a regulariser.


def kl_tilt_derivative():
    """For an exponential tilt with cumulant generating function ``K``: ``KL(Q_beta || pi) =
    beta K'(beta) - K(beta)`` and its derivative is ``beta K''(beta)`` (= beta Var_{Q_beta}(s)).

    Returns ``(KL, dKL/dbeta)`` with ``K`` an undefined sympy function (general tilt).
    """
    K = sp.Function("K")
    kl = beta * sp.diff(K(beta), beta) - K(beta)
    return kl, sp.simplify(sp.diff(kl, beta))


def kl_small_beta(order: int = 4):
    """Small-beta expansion of the KL from the cumulants of ``s`` under pi:
    ``K(beta) = k1 beta + k2 beta^2/2 + k3 beta^3/6 + k4 beta^4/24``; returns the series of
    ``beta K' - K`` (leading term ``k2 beta^2 / 2``, i.e. ``beta^2 Var_pi(s)/2``)."""
    # printed cum_r: kappa is the vMF concentration (book, notation page)
    k1, k2, k3, k4 = (sp.Symbol(rf"\operatorname{{cum}}_{j}") for j in range(1, 5))
    K = k1 * beta + k2 * beta**2 / 2 + k3 * beta**3 / 6 + k4 * beta**4 / 24
    return sp.expand(beta * sp.diff(K, beta) - K)


def vmf3_kl_softmax():
    """KL(vMF(x, beta) || uniform) on S^2: ``beta (coth beta - 1/beta) - log(sinh beta / beta)``,
    and its series at beta = 0 (``beta^2/6 - ...``: ``1/(2 p tau^2)`` with p = 3)."""
    kl = beta * (sp.coth(beta) - 1 / beta) - sp.log(sp.sinh(beta) / beta)
    return kl, sp.series(kl, beta, 0, 6).removeO()


def antipodal_kl_series():
    """Two antipodal clusters: ``beta tanh beta - log cosh beta`` and its series at 0."""
    kl = beta * sp.tanh(beta) - sp.log(sp.cosh(beta))
    return kl, sp.series(kl, beta, 0, 6).removeO()


def cross_entropy_kl_identity():
    """Lemma ``c3-lem-ce-kl`` on a symbolic 3-point space: ``H(M, Q) = KL(M||Q) - KL(M||pi)``
    with ``H(M, Q) = -sum_y M(y) log(Q(y)/pi(y))``. Returns the residual (simplifies to 0)."""
    p1, p2, q1, q2, r1, r2 = sp.symbols("p1 p2 q1 q2 r1 r2", positive=True)
    pi, Mv, Q = [p1, p2, 1 - p1 - p2], [r1, r2, 1 - r1 - r2], [q1, q2, 1 - q1 - q2]
    H = -sum(Mv[i] * sp.log(Q[i] / pi[i]) for i in range(3))
    kl_mq = sum(Mv[i] * sp.log(Mv[i] / Q[i]) for i in range(3))
    kl_mp = sum(Mv[i] * sp.log(Mv[i] / pi[i]) for i in range(3))
    return sp.simplify(sp.expand_log(H - (kl_mq - kl_mp), force=True))


def sharp_kl_bound():
    """Theorem ``c3-thm-kl-sharp``: with ``theta`` the tilted law's mass at ``s = 1`` of a law on
    ``{-1, 1}``, ``F(theta) = 2 beta theta + log(theta e^{-2 beta} + 1 - theta)`` bounds the KL,
    is concave, and is maximal at ``theta* = 1/(1 - e^{-2 beta}) - 1/(2 beta)`` with value
    ``Psi = y - 1 - log y``, ``y = 2 beta/(1 - e^{-2 beta})``.

    Returns a dict: ``F``, ``theta_star``, ``Psi``, ``dF_at_star`` (simplifies to 0),
    ``d2F_residual`` (``F'' + (1 - e^{-2 beta})^2/(theta e^{-2beta} + 1 - theta)^2``, simplifies
    to 0), ``y_residual`` (``y - beta (1 + coth beta)``, 0), ``series0`` (``Psi`` at beta = 0 to
    order 4: ``beta^2/2 - beta^4/36``).
    """
    th = sp.Symbol("theta", positive=True)
    F = 2 * beta * th + sp.log(th * sp.exp(-2 * beta) + 1 - th)
    th_star = 1 / (1 - sp.exp(-2 * beta)) - 1 / (2 * beta)
    y = 2 * beta / (1 - sp.exp(-2 * beta))
    Psi = y - 1 - sp.log(y)
    return {"F": F, "theta_star": th_star, "Psi": Psi,
            "dF_at_star": sp.simplify(sp.diff(F, th).subs(th, th_star)),
            "d2F_residual": sp.simplify(sp.diff(F, th, 2) + (1 - sp.exp(-2 * beta)) ** 2
                                        / (th * sp.exp(-2 * beta) + 1 - th) ** 2),
            "value_residual": sp.simplify(sp.expand_log(F.subs(th, th_star) - Psi, force=True)),
            "y_residual": sp.simplify((y - beta * (1 + sp.coth(beta))).rewrite(sp.exp)),
            "series0": sp.series(Psi, beta, 0, 5).removeO()}


def cone_embedding_residual():
    """Theorem ``c3-thm-vmf-approx`` (3): ``phi(x) = (sqrt(kappa/beta) x, sqrt(1 - kappa/beta))``
    gives ``beta s = kappa t + beta - kappa`` with ``t = <x, y>``; returns the residual (0)."""
    tt = sp.Symbol("t", real=True)
    return sp.expand(beta * ((kappa / beta) * tt + (1 - kappa / beta)) - (kappa * tt + beta - kappa))


def decoupled_derivative_residual():
    """Proposition ``c3-prop-decoupled-rate`` (1): ``d/dbeta log T^dec`` is the self-normalised
    average of ``s`` minus ``Z'/Z`` (shown with two negatives and an arbitrary ``Z``); returns the
    residual (0)."""
    s1, s2 = sp.symbols("s1 s2", real=True)
    Z = sp.Function("Z")
    logT = sp.log((sp.exp(beta * s1) + sp.exp(beta * s2)) / 2) - sp.log(Z(beta))
    snis = (sp.exp(beta * s1) * s1 + sp.exp(beta * s2) * s2) / (sp.exp(beta * s1) + sp.exp(beta * s2))
    return sp.simplify(sp.diff(logT, beta) - (snis - sp.diff(Z(beta), beta) / Z(beta)))


def vmf3_decoupled_rate_constant():
    """On ``S^2``: ``v2(beta) = Z(2beta)/Z(beta)^2 - 1 = beta coth beta - 1``,
    ``A'(beta) = 1/beta^2 - 1/sinh^2 beta`` and the constant ``C = v2'(kappa)/(2 A'(kappa))`` of
    ``beta_k = kappa + C/k + O(k^-2)`` (Proposition ``c3-prop-decoupled-rate``).

    Returns ``(C as an expression in kappa, v2 residual, A' residual)`` (residuals simplify to 0).
    """
    Z = sp.sinh(beta) / beta
    A = sp.diff(sp.log(Z), beta)
    v2_ = Z.subs(beta, 2 * beta) / Z**2 - 1
    r_m2 = sp.simplify((v2_ - (beta * sp.coth(beta) - 1)).rewrite(sp.exp))
    Ap = sp.diff(A, beta)
    r_A = sp.simplify((Ap - (1 / beta**2 - 1 / sp.sinh(beta) ** 2)).rewrite(sp.exp))
    C = (sp.diff(beta * sp.coth(beta) - 1, beta) / (2 * (1 / beta**2 - 1 / sp.sinh(beta) ** 2))).subs(beta, kappa)
    return sp.simplify(C), r_m2, r_A


# ---------------------------------------------------------------------------------------------
# Chapter C4/C5: continuity of the loss in the similarities.


def gateaux_derivative(n_neg: int = 2, variant: str = "standard"):
    """The Gateaux derivative of the InfoNCE loss along ``h`` (book, Proposition ``c4-prop-continuity``).

    With similarities ``s0`` (positive), ``s1..s_k`` (negatives), returns
    ``(derivative, claimed)``: ``d/dt l(s + t h)`` at ``t = 0`` computed by sympy, and the claimed
    form ``beta (sum_i p_i h_i - h0)`` (standard: softmax over all k+1 entries; decoupled: over
    the negatives only). Their difference simplifies to 0 (checked by the tests).
    """
    s = sp.symbols(f"s0:{n_neg + 1}", real=True)
    h = sp.symbols(f"h0:{n_neg + 1}", real=True)
    start = 0 if variant == "standard" else 1
    loss = lambda v: -beta * v[0] + sp.log(sum(sp.exp(beta * v[i]) for i in range(start, n_neg + 1)))  # noqa: E731
    moved = [s[i] + t * h[i] for i in range(n_neg + 1)]
    derivative = sp.diff(loss(moved), t).subs(t, 0)
    z = sum(sp.exp(beta * s[i]) for i in range(start, n_neg + 1))
    claimed = beta * (sum(sp.exp(beta * s[i]) / z * h[i] for i in range(start, n_neg + 1)) - h[0])
    return derivative, claimed


def softmax_weight_bound():
    """The weight bound ``p_j <= e^{2 beta} / (e^{2 beta} + k) <= e^{2 beta} / (k + 1)``.

    Returns ``(dp_own, dp_other, gap)``: the partial derivatives of ``p_j = e^{beta s_j} / Z``
    in ``s_j`` and in another entry (``beta p_j (1 - p_j) >= 0`` and ``-beta p_j p_l <= 0``, so
    ``p_j`` is largest at ``s_j = 1`` and every other entry at ``-1``), and the factored gap
    ``e^{2 beta}/(k+1) - e^{2 beta}/(e^{2 beta} + k)``, which is ``>= 0`` since ``e^{2 beta} >= 1``.
    """
    sj, sl, rest = sp.symbols("s_j s_l R", real=True)
    Z = sp.exp(beta * sj) + sp.exp(beta * sl) + rest
    p = sp.exp(beta * sj) / Z
    pl = sp.exp(beta * sl) / Z
    dp_own = sp.simplify(sp.diff(p, sj) - beta * p * (1 - p))
    dp_other = sp.simplify(sp.diff(p, sl) + beta * p * pl)
    E = sp.exp(2 * beta)
    gap = sp.factor(sp.together(E / (k + 1) - E / (E + k)))
    return dp_own, dp_other, gap


def donsker_varadhan_gap(n: int = 2):
    """Donsker--Varadhan for the uniform law on ``n`` points: for weights ``q`` and values ``h``,
    ``(1/gamma)[KL(q || unif) + log((1/n) sum e^{gamma h})] - sum q h`` is ``>= 0``, and equals 0 at
    ``q* ∝ e^{gamma h}`` (Gibbs' variational principle).

    Returns ``(gap, gap_at_gibbs)``: the gap as a sympy expression in ``q_i, h_i, gamma``, and its
    value at ``q*`` (which simplifies to 0).
    """
    g = sp.Symbol("gamma", positive=True)
    q = sp.symbols(f"q1:{n + 1}", positive=True)
    h = sp.symbols(f"h1:{n + 1}", real=True)
    kl = sum(qi * sp.log(n * qi) for qi in q)
    gap = (kl + sp.log(sum(sp.exp(g * hi) for hi in h) / n)) / g - sum(qi * hi for qi, hi in zip(q, h))
    Zg = sum(sp.exp(g * hi) for hi in h)
    at_gibbs = gap.subs({qi: sp.exp(g * hi) / Zg for qi, hi in zip(q, h)})
    return gap, sp.simplify(sp.expand_log(sp.expand(at_gibbs), force=True))


def normalisation_jacobian(dim: int = 3):
    """The Jacobian of ``v -> v / |v|`` is ``(I - u u^T) / |v|`` with ``u = v/|v|`` (book, Lemma
    ``c4-lem-classes``). Returns the difference matrix, which simplifies to zero."""
    v = sp.Matrix(sp.symbols(f"v1:{dim + 1}", real=True))
    r = sp.sqrt(sum(c**2 for c in v))
    J = (v / r).jacobian(v)
    u = v / r
    return sp.simplify(J - (sp.eye(dim) - u * u.T) / r)


def embedding_gradients(n_neg: int = 3, dim: int = 2, variant: str = "standard"):
    """The partial derivatives of the loss in the embeddings (book, Proposition ``c4-prop-embedding``).

    With ``u`` the anchor's embedding, ``v_0`` the positive's, ``v_1..v_k`` the negatives' (vectors
    of ``R^dim``), ``g = -beta <u, v_0> + log sum_i e^{beta <u, v_i>}`` (standard: ``i = 0..k``;
    decoupled: ``i = 1..k``) and ``p_i`` the softmax weights of the sum. Returns a dict
    ``{name: difference}`` for ``name`` in ``"u", "v0", "v1", ..., "vk"``: sympy's gradient minus the
    claimed form, ``beta (sum_i p_i v_i - v_0)``, ``-beta (1 - p_0) u`` (decoupled: ``-beta u``)
    and ``beta p_j u``. Every difference simplifies to the zero vector (the tests assert it).
    """
    u = sp.Matrix(sp.symbols(f"u1:{dim + 1}", real=True))
    V = [sp.Matrix(sp.symbols(f"v{j}_1:{dim + 1}", real=True)) for j in range(n_neg + 1)]
    s = [u.dot(v) for v in V]
    idx = range(n_neg + 1) if variant == "standard" else range(1, n_neg + 1)
    Z = sum(sp.exp(beta * s[i]) for i in idx)
    g = -beta * s[0] + sp.log(Z)
    p = {i: sp.exp(beta * s[i]) / Z for i in idx}
    p0 = p.get(0, sp.Integer(0))
    claims = {"u": beta * (sum((p[i] * V[i] for i in idx), sp.zeros(dim, 1)) - V[0]),
              "v0": -beta * (1 - p0) * u}
    claims.update({f"v{j}": beta * p[j] * u for j in range(1, n_neg + 1)})
    variables = {"u": u, **{f"v{j}": V[j] for j in range(n_neg + 1)}}
    return {name: sp.simplify(sp.Matrix([sp.diff(g, c) for c in variables[name]]) - claim)
            for name, claim in claims.items()}


def weight_bound_gaps():
    """``k p_max <= min(k, e^{2 beta})`` for ``p_max = e^{2 beta}/(e^{2 beta} + k)`` (book, Proposition
    ``c4-prop-embedding``). Returns ``(k - k p_max, e^{2 beta} - k p_max)`` in closed form:
    ``k^2/(e^{2 beta} + k)`` and ``e^{4 beta}/(e^{2 beta} + k)``, both ``>= 0``."""
    E = sp.exp(2 * beta)
    kp = k * E / (E + k)
    return sp.factor(sp.together(k - kp)), sp.factor(sp.together(E - kp))


def block_scaling_optimum():
    """The block scalings of the vector-contraction route (book, Theorem ``c4-thm-vector``).

    For ``a^2, b^2, c^2 > 0``, ``F = (4/a^2 + 1/b^2 + p/c^2)(a^2 + b^2 + k c^2) >= (3 + sqrt(k p))^2``
    (Cauchy--Schwarz), with equality at ``a^2 : b^2 : c^2 = 2 : 1 : sqrt(p/k)``. Returns
    ``(at_optimum, lagrange)``: ``F`` at the optimum minus ``(3 + sqrt(k p))^2`` (simplifies to 0),
    and ``F - (3 + sqrt(k p))^2`` written by Lagrange's identity as a sum of squares (its
    difference from ``F - (3 + sqrt(k p))^2`` simplifies to 0, so the inequality holds).
    """
    a2, b2, c2, p, tt = sp.symbols("a2 b2 c2 p t", positive=True)
    F = (4 / a2 + 1 / b2 + p / c2) * (a2 + b2 + k * c2)
    bound = (3 + sp.sqrt(k * p)) ** 2
    at_opt = sp.simplify(F.subs({a2: 2 * tt, b2: tt, c2: sp.sqrt(p / k) * tt}) - bound)
    # Lagrange: (sum x_i^2)(sum y_i^2) - (sum x_i y_i)^2 = sum_{i<j} (x_i y_j - x_j y_i)^2 with
    # x = (2/a, 1/b, sqrt(p)/c), y = (a, b, sqrt(k) c), sum x_i y_i = 3 + sqrt(k p).
    x = (2 / sp.sqrt(a2), 1 / sp.sqrt(b2), sp.sqrt(p) / sp.sqrt(c2))
    y = (sp.sqrt(a2), sp.sqrt(b2), sp.sqrt(k) * sp.sqrt(c2))
    squares = sum((x[i] * y[j] - x[j] * y[i]) ** 2 for i in range(3) for j in range(i + 1, 3))
    return at_opt, sp.simplify(sp.expand(F - bound - squares))


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


# ---------------------------------------------------------------------------------------------
# Chapter C6: the range of the loss.


def loss_range_width():
    """Lemma ``c5-lem-range``: the width ``B_k = log((1 + k e^{2 beta}) / (1 + k e^{-2 beta}))``.

    Returns ``(width, limit, dwidth_dk)``: the width, its limit as ``k -> infinity`` (``4 beta``),
    and its derivative in k, ``(e^{2b} - e^{-2b}) / ((1 + k e^{2b})(1 + k e^{-2b})) > 0``.
    """
    width = sp.log((1 + k * sp.exp(2 * beta)) / (1 + k * sp.exp(-2 * beta)))
    limit = sp.limit(width, k, sp.oo)
    dwidth = sp.simplify(sp.diff(width, k))
    return width, sp.simplify(limit), dwidth
