"""The 1/k expansions of the C1 chapter derived by sympy (fourth order, pairs of negatives) and the
symbolic checks of the C2 and C3 chapters, against independent routes."""

import math

import mpmath as mp
import pytest
import sympy as sp

from infonce_book.theory import symbolic


def _mgf_moments_of_mean(k: int, N: int) -> dict:
    """E (mean of k i.i.d. centred X)^r from the k-th power of the moment generating function
    (a route without cumulants): the reference for :func:`symbolic.mean_moments`."""
    one = [sp.Integer(1), sp.Integer(0)] + [symbolic._v(r) / sp.factorial(r) for r in range(2, N + 1)]
    acc = [sp.Integer(1)] + [sp.Integer(0)] * N
    for _ in range(k):
        acc = [sp.expand(sum(acc[i] * one[n - i] for i in range(n + 1))) for n in range(N + 1)]
    return {r: sp.expand(acc[r] * sp.factorial(r) / sp.Integer(k) ** r) for r in range(N + 1)}


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_mean_moments_from_cumulants_equal_the_mgf_route(k):
    A = symbolic.mean_moments(6)
    ref = _mgf_moments_of_mean(k, 6)
    for r in range(2, 7):
        assert sp.expand(A[r].subs(symbolic.eps, sp.Rational(1, k)) - ref[r]) == 0


def test_moments_of_T_minus_one_are_the_textbook_ones():
    k, u1, u2, v2, v4 = symbolic.k, symbolic.u1, symbolic.u2, symbolic.v2, symbolic.v4
    e1, e2, a4 = symbolic.moments_of_T_minus_one("standard")
    # E(T-1) = u1/k and E(T-1)^2 = Var + mean^2 = v2/k + (Var U + u1^2)/k^2 = v2/k + u2/k^2
    assert sp.simplify(e1 - u1 / k) == 0 and sp.simplify(e2 - (v2 / k + u2 / k**2)) == 0
    assert sp.simplify(a4 - (3 * v2**2 / k**2 + (v4 - 3 * v2**2) / k**3)) == 0
    d1, d2, _ = symbolic.moments_of_T_minus_one("decoupled")
    assert d1 == 0 and sp.simplify(d2 - v2 / k) == 0


def test_log_expansion_agrees_with_bias_expansion_and_the_printed_third_order():
    c = symbolic.log_expansion("standard", 4)
    for a, b in zip(c[:3], symbolic.bias_expansion("standard", 3)):
        assert sp.expand(a - b) == 0
    c3, c4 = symbolic.third_order_formulas()
    assert sp.expand(c[2] - c3) == 0 and sp.expand(c[3] - c4) == 0


def test_log_expansion_of_a_constant_weight_is_zero():
    # If V = U = 1 (all weights equal), T = 1 + 1/k and E log T = log(1 + 1/k) = sum (-1)^{n+1}/(n k^n).
    subs = {s: 0 for s in (symbolic.v2, symbolic.v3, symbolic.v4, symbolic.v5)}
    subs.update({symbolic.u1: 1, symbolic.u2: 1, symbolic.u3: 1, symbolic.u4: 1})
    c = [sp.expand(ci.subs(subs)) for ci in symbolic.log_expansion("standard", 4)]
    assert c == [1, sp.Rational(-1, 2), sp.Rational(1, 3), sp.Rational(-1, 4)]


def test_ntxent_expansion_without_correlation_is_infonce_and_c1_drops_by_half_gamma():
    c1_nt, c2_nt = symbolic.ntxent_bias_coefficients(2)
    c1, c2 = symbolic.bias_expansion("standard", 2)
    g, d = symbolic.gamma_pair, symbolic.delta_pair
    assert sp.expand(c1_nt - (c1 - g / 2)) == 0
    assert sp.expand(c2_nt.subs({g: 0, d: 0}) - c2) == 0
    assert sp.expand(symbolic.pair_block_third_moment() - (symbolic.v3 + 3 * d) / 4) == 0


def test_vmf3_pair_moment_antiderivative_and_substitution():
    F, resid, subs = symbolic.vmf3_pair_moment()
    assert resid == 0 and subs == (0, 0)
    # numerically: (1/(2 kappa beta Z(kappa))) [F]_{|kappa - beta|}^{kappa + beta} = E[e^{beta t} Z(r(t))]/Z(kappa)
    kap, b = 4, 2
    r = sp.Symbol("r", positive=True)
    Fv = sp.lambdify(r, F.subs({symbolic.kappa: kap, symbolic.beta: b}), "mpmath")
    Z = lambda x: mp.sinh(x) / x  # noqa: E731
    closed = (Fv(kap + b) - Fv(abs(kap - b))) / (2 * kap * b * Z(kap))
    quad = mp.quad(lambda t: mp.e ** (b * t) * Z(mp.sqrt(kap**2 + b**2 + 2 * kap * b * t)), [-1, 1]) / (2 * Z(kap))
    assert abs(closed - quad) < 1e-12 * abs(quad)  # mpmath at its default 15 digits


def test_snis_identities_and_gaussian_moments():
    assert symbolic.snis_identities() == (0, 0, 0)
    a2, em2, mean = symbolic.gaussian_density_ratio_moments()
    rho, x = sp.Symbol("rho", positive=True), sp.Symbol("x", real=True)
    # independent numerical value: mpmath quadrature of N(y; rho x, 1 - rho^2)^2 / N(y; 0, 1)
    rv, xv = mp.mpf("0.8"), mp.mpf("1.3")
    quad = mp.quad(lambda y: mp.npdf(y, rv * xv, mp.sqrt(1 - rv**2)) ** 2 / mp.npdf(y, 0, 1), [-mp.inf, mp.inf])
    assert abs(float(em2.subs({rho: 0.8, x: 1.3})) - float(quad)) < 1e-12
    assert abs(float(mean.subs(rho, 0.6)) - 1 / (1 - 0.36)) < 1e-12


def test_two_point_posterior_is_the_normalised_density_ratio():
    assert set(symbolic.two_point_posterior_check(k=2)) == {0}


def test_sharp_kl_bound_steps_and_the_other_c3_identities():
    d = symbolic.sharp_kl_bound()
    assert all(d[key] == 0 for key in ("dF_at_star", "d2F_residual", "value_residual", "y_residual"))
    b = symbolic.beta
    assert sp.expand(d["series0"] - (b**2 / 2 - b**4 / 36)) == 0
    assert symbolic.cross_entropy_kl_identity() == 0
    assert symbolic.cone_embedding_residual() == 0 and symbolic.decoupled_derivative_residual() == 0
    C, r1, r2 = symbolic.vmf3_decoupled_rate_constant()
    assert r1 == 0 and r2 == 0
    # C = v2'(kappa)/(2 A'(kappa)) on S^2 at kappa = 4, from the closed forms by finite differences
    v2 = lambda x: x / math.tanh(x) - 1  # noqa: E731
    dA = lambda x: 1 / x**2 - 1 / math.sinh(x) ** 2  # noqa: E731
    h = 1e-6
    assert float(C.subs(symbolic.kappa, 4)) == pytest.approx((v2(4 + h) - v2(4 - h)) / (2 * h) / (2 * dA(4)), rel=1e-8)


def test_log_expansion_rejects_bad_arguments():
    with pytest.raises(ValueError, match="order"):
        symbolic.log_expansion("standard", 5)
    with pytest.raises(ValueError, match="block"):
        symbolic.log_expansion("standard", 2, block=3)
    with pytest.raises(ValueError, match="variant"):
        symbolic.log_expansion("symmetric", 2)
