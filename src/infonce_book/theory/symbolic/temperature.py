"""Chapter 3, the temperature as a regulariser: the KL of the softmax kernel to the data
(Theorems ``c3-thm-kl`` and ``c3-thm-kl-sharp``), the cross-entropy identity (Lemma
``c3-lem-ce-kl``), the cone embedding (Theorem ``c3-thm-vmf-approx``) and the decoupled
minimiser's rate (Proposition ``c3-prop-decoupled-rate``).
"""

from __future__ import annotations

import sympy as sp

from ._symbols import beta, kappa


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
