"""Symbolic derivations (sympy) that the chapters display and the tests assert.

Chapter C1 (the O(1/k) rate). Fix an anchor ``x`` and write, with ``mu = E[W | x]``,

* ``V = W / mu`` for a negative weight (mean 1; central moments ``m2, m3, m4, ...``),
* ``U = W+ / mu`` for the positive weight (raw moments ``u1, u2, u3, ...``),
* ``T = (U + sum_{j<=k} V_j) / k`` (standard) or ``T = sum_j V_j / k`` (decoupled),

so that ``L_k - log k - L_inf = E_x E[log T | x]`` (book, C1 chapter, Lemma ``c1-lem-identity``). Then
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
m2, m4 = sp.symbols("m2 m4", positive=True)
m3 = sp.Symbol("m3", real=True)
m5, m6 = sp.symbols("m5 m6", real=True)



def _m(r: int) -> sp.Symbol:
    """Central moment ``m_r = E (V - 1)^r`` of the normalised negative weight."""
    return {2: m2, 3: m3, 4: m4, 5: m5, 6: m6}.get(r) or sp.Symbol(f"m{r}", real=True)


def _u(j: int) -> sp.Symbol:
    """Raw moment ``u_j = E U^j`` of the normalised positive weight."""
    return {1: u1, 2: u2, 3: u3, 4: u4}.get(j) or sp.Symbol(f"u{j}", positive=True)


def _central_moments_from_cumulants(max_order: int):
    """Central moments of a variable from its cumulants (symbols ``kappa2 ...``)."""
    s = sp.Symbol("s")
    kap = {r: sp.Symbol(f"kappa{r}") for r in range(2, max_order + 1)}
    K = sum(kap[r] * s**r / sp.factorial(r) for r in range(2, max_order + 1))
    mgf = sp.series(sp.exp(K), s, 0, max_order + 1).removeO()
    mom = {r: sp.expand(mgf.coeff(s, r) * sp.factorial(r)) for r in range(1, max_order + 1)}
    return kap, mom


def _cumulants_from_central_moments(max_order: int):
    """Cumulants ``kappa_r`` of V in terms of its central moments ``m_r`` (inverting the above)."""
    kap, mom = _central_moments_from_cumulants(max_order)
    sol = {}
    for r in range(2, max_order + 1):
        eq = sp.Eq(_m(r), mom[r].subs(sol))
        sol[kap[r]] = sp.solve(eq, kap[r])[0]
    return kap, sol


@lru_cache(maxsize=None)
def bias_expansion(variant: str = "standard", order: int = 2):
    """Coefficients ``c_1 .. c_order`` of ``E[log T | x] = sum_n c_n / k^n + O(k^-(order+1))``.

    Args:
        variant: ``"standard"`` or ``"decoupled"``.
        order: 1, 2 or 3.
    Returns:
        A tuple of sympy expressions in ``u1.. (positive raw moments)`` and ``m2.. (negative
        central moments)``, all normalised by ``mu``.
    Source: book, C1 chapter, Theorem ``c1-thm-rate`` and its symbolic check.
    """
    if variant not in ("standard", "decoupled"):
        raise ValueError(f"variant must be one of ['decoupled', 'standard'], got variant={variant!r}")
    if order not in (1, 2, 3):
        raise ValueError(f"order must be 1, 2 or 3, got order={order!r}")
    # E[D^n] = O(eps^ceil(n/2)), so powers n <= 2*order suffice; two more are kept as a margin
    # (test_symbolic checks the result against the exact quadrature to third order).
    N = 2 * order + 2
    kap, kap_of_m = _cumulants_from_central_moments(N)
    # Sample mean of k i.i.d. centred variables: cumulants kappa_r * eps^(r-1).
    kap_mean, mom_mean = _central_moments_from_cumulants(N)
    A = {0: sp.Integer(1), 1: sp.Integer(0)}
    for r in range(2, N + 1):
        expr = mom_mean[r].subs({kap_mean[q]: kap[q] * eps ** (q - 1) for q in kap_mean})
        A[r] = sp.expand(expr.subs(kap_of_m))
    # B = U * eps (standard) with raw moments u_j; independent of A.
    if variant == "standard":
        ub = {0: sp.Integer(1)}
        for j in range(1, N + 1):
            ub[j] = _u(j) * eps**j
    else:
        ub = {0: sp.Integer(1), **{j: sp.Integer(0) for j in range(1, N + 1)}}
    total = 0
    for n in range(1, N + 1):
        ED = sum(sp.binomial(n, j) * A[j] * ub[n - j] for j in range(0, n + 1))
        total += sp.Rational((-1) ** (n + 1), n) * ED
    poly = sp.expand(total)
    coeffs = tuple(sp.expand(poly.coeff(eps, n)) for n in range(1, order + 1))
    if sp.expand(poly.coeff(eps, 0)) != 0:  # pragma: no cover - would be an algebra error
        raise AssertionError("E[log T] has a constant term")
    return coeffs


def c1_formula(variant: str = "standard"):
    """The closed form quoted in the book: ``u1 - m2/2`` (standard) or ``-m2/2`` (decoupled)."""
    return u1 - m2 / 2 if variant == "standard" else -m2 / 2


def c2_formula(variant: str = "standard"):
    """``-u2/2 + m3/3 + m2 u1 - 3 m2^2/4`` (standard) or ``m3/3 - 3 m2^2/4`` (decoupled)."""
    if variant == "standard":
        return -u2 / 2 + m3 / 3 + m2 * u1 - sp.Rational(3, 4) * m2**2
    return m3 / 3 - sp.Rational(3, 4) * m2**2


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
    ``E(T-1)^2 = m2/k + u2/k^2``.

    Returns:
        ``(lower, upper)`` sympy expressions in ``k, a, u1, u2, m2`` for ``k E[log T | x]``.
    """
    if variant == "standard":
        ET1, ET12 = u1 / k, m2 / k + u2 / k**2
        upper = u1
    else:
        ET1, ET12 = sp.Integer(0), m2 / k
        upper = sp.Integer(0)
    lower = sp.expand(k * (ET1 - ET12 / (2 * a)))
    return lower, upper


def uniform_constant_worst_case():
    """The joint worst case over embeddings in Part 3 of Theorem ``c1-thm-rate``.

    For a fixed anchor with ``mu in [e^-beta, e^beta]``: ``u2 <= e^{2beta}/mu^2``, Bhatia--Davis
    ``sigma^2 <= (e^beta - mu)(mu - e^-beta)`` and ``1/(2a) = mu e^beta / 2`` give
    ``(m2 + u2)/(2a) <= e^beta g(mu) / 2`` with ``g(mu) = ((e^beta - mu)(mu - e^-beta) + e^{2beta})/mu``.

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
        m2: EV[2] - 1,
        m3: EV[3] - 3 * EV[2] + 2,
    }
    c1, c2 = bias_expansion(variant, 2)
    return c1.subs(subs), c2.subs(subs)


@lru_cache(maxsize=None)
def bias_coefficient_functions(variant: str = "standard", order: int = 3):
    """Numerical functions of the moments for ``c_1 .. c_order`` (lambdified from sympy).

    Each takes keyword arguments ``u1..u3, m2..m4`` (floats or numpy arrays), ignoring those
    it does not use.
    """
    args = (u1, u2, u3, m2, m3, m4)
    coeffs = bias_expansion(variant, order)
    return tuple(sp.lambdify(args, c, "numpy") for c in coeffs)


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
    k1, k2, k3, k4 = sp.symbols("kappa_1 kappa_2 kappa_3 kappa_4")
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
