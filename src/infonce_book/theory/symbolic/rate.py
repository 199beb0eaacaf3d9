"""Chapter 1, the limit and its O(1/k) rate: the expansion of the bias in ``1/k``, the
non-asymptotic bounds and the vMF closed forms on ``S^2``.

Fix an anchor ``x`` and write, with ``mu = E[W | x]``,

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

from functools import lru_cache

import sympy as sp

from ._symbols import _u, _v, a, beta, eps, k, kappa, t, u1, u2, u3, u4, v2, v3, v4, v5


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


@lru_cache(maxsize=None)
def bias_coefficient_functions(variant: str = "standard", order: int = 3):
    """Numerical functions of the moments for ``c_1 .. c_order`` (lambdified from sympy).

    Each takes the positional arguments ``u1, u2, u3, v2, v3, v4`` (floats or numpy arrays),
    ignoring those it does not use; for ``order = 4`` two more follow, ``u4, v5``.
    """
    args = (u1, u2, u3, v2, v3, v4) + ((u4, v5) if order == 4 else ())
    coeffs = log_expansion(variant, order)
    return tuple(sp.lambdify(args, c, "numpy") for c in coeffs)


# ----------------------------------------------------------------------------------------------
# The elementary inequality behind the non-asymptotic bound, and the uniform constant.


def log_lower_bound_derivative():
    """``d/dt [log t - (t-1) + (t-1)^2/(2a)]``, factorised: ``(t-1)(t-a)/(a t)``.

    For ``t >= a`` the sign is that of ``t - 1``; with ``0 < a <= 1`` the bracket is therefore
    minimal at ``t = 1``, where it vanishes: ``log t >= (t-1) - (t-1)^2/(2a)`` for all ``t >= a``
    (book, Lemma ``c1-lem-log``; the condition ``a <= 1`` is needed). With ``a <= 1`` the same holds
    with ``2a^2`` in place of ``2a`` (weaker).
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
