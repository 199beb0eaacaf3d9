"""Chapter 4, continuity of the loss: its derivative in the similarities (Proposition
``c4-prop-continuity``) and in the embeddings (Proposition ``c4-prop-embedding``), the softmax
weight bounds, Donsker--Varadhan, the Jacobian of the normalisation (Lemma ``c4-lem-classes``) and
the block scalings of the vector-contraction route (Theorem ``c4-thm-vector``) and the steps of
the dimension-free bound (Theorem ``c4-thm-dimension-free``).
"""

from __future__ import annotations

import sympy as sp

from ._symbols import beta, k, t


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


def dimension_free_checks(n_neg: int = 3, dim: int = 3, dim_out: int = 2):
    """The symbolic steps of the dimension-free bound (book, Theorem ``c4-thm-dimension-free``).

    Returns ``(gradient, bilinear, outer, at_optimum, lagrange)``, each of which simplifies to 0
    (checked by the tests):

    * ``gradient``: the squared norm of the loss's gradient in the similarities minus
      ``beta^2 ((1 - p0)^2 + sum_j p_j^2)`` (``n_neg`` negatives, standard variant);
    * ``bilinear``: ``<W x, W y> - <W^T W, y x^T>_F`` for a symbolic ``dim_out x dim`` matrix;
    * ``outer``: ``|y x^T|_F^2 - |x|^2 |y|^2`` in ``R^dim``;
    * ``at_optimum``: ``(1/a^2 + p/c^2)(a^2 + k c^2) - (1 + sqrt(k p))^2`` at
      ``a^2 : c^2 = 1 : sqrt(p/k)``;
    * ``lagrange``: the same difference minus its Lagrange sum of squares (so it is >= 0 for every
      scaling, by Cauchy--Schwarz).
    """
    s = sp.symbols(f"s0:{n_neg + 1}", real=True)
    loss = -beta * s[0] + sp.log(sum(sp.exp(beta * v) for v in s))
    z = sum(sp.exp(beta * v) for v in s)
    p = [sp.exp(beta * v) / z for v in s]
    grad2 = sum(sp.diff(loss, v) ** 2 for v in s)
    gradient = sp.simplify(grad2 - beta**2 * ((1 - p[0]) ** 2 + sum(q**2 for q in p[1:])))
    W = sp.Matrix(dim_out, dim, lambda i, j: sp.Symbol(f"w{i}{j}", real=True))
    x = sp.Matrix(dim, 1, lambda i, j: sp.Symbol(f"x{i}", real=True))
    y = sp.Matrix(dim, 1, lambda i, j: sp.Symbol(f"y{i}", real=True))
    bilinear = sp.expand(((W * x).T * (W * y))[0, 0] - ((W.T * W).T * (y * x.T)).trace())
    outer = sp.expand(sum(v**2 for v in (y * x.T)) - (x.T * x)[0, 0] * (y.T * y)[0, 0])
    a2, c2, pm, tt = sp.symbols("a2 c2 p t", positive=True)
    F = (1 / a2 + pm / c2) * (a2 + k * c2)
    bound = (1 + sp.sqrt(k * pm)) ** 2
    at_opt = sp.simplify(F.subs({a2: tt, c2: sp.sqrt(pm / k) * tt}) - bound)
    u = (1 / sp.sqrt(a2), sp.sqrt(pm) / sp.sqrt(c2))
    v = (sp.sqrt(a2), sp.sqrt(k) * sp.sqrt(c2))
    lagrange = sp.simplify(sp.expand(F - bound - (u[0] * v[1] - u[1] * v[0]) ** 2))
    return gradient, bilinear, outer, at_opt, lagrange
