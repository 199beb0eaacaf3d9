"""The vMF model's closed forms for the C1-C3 chapters (search constants, NT-Xent pair moments,
approximation error, decoupled minimiser), against independent computations."""

import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from scipy import integrate, optimize

from infonce_book.models import VonMisesFisher
from infonce_book.theory import symbolic

mp.mp.dps = 30


def _z3(b):
    return mp.sinh(b) / b if b != 0 else mp.mpf(1)


def test_search_bias_constants_against_mpmath_on_s2():
    # S^2: Z(b) = sinh b / b; E_pi[m^2 s^j] = Z^{(j)}(2 kappa)/Z(kappa)^2 by numerical derivatives (mpmath)
    kap, beta = mp.mpf(4), mp.mpf(2)
    R = _z3(2 * kap) / _z3(kap) ** 2
    em2s, em2s2 = mp.diff(_z3, 2 * kap) / _z3(kap) ** 2, mp.diff(_z3, 2 * kap, 2) / _z3(kap) ** 2
    i_s = mp.coth(kap) - 1 / kap
    var_m, var_ms, cov = R - 1, em2s2 - i_s**2, em2s - R * i_s
    b_s = min(mp.sqrt(2 * var_m * (var_ms + var_m)), abs(cov) + (1 + abs(i_s)) * var_m)
    u1_zeta = _z3(kap + beta) * _z3(beta) / _z3(kap)
    c = VonMisesFisher(3, 4.0).search_bias_constants(0.5)
    assert c["model"] == pytest.approx(float(beta * b_s + u1_zeta), rel=1e-10)
    assert c["uniform"] == pytest.approx(float(beta * (2 * R - 1.5) + mp.e ** (2 * beta)), rel=1e-12)
    assert c["cov_M"] == pytest.approx(float(cov), rel=1e-10)
    m_min = mp.e ** (-kap) / _z3(kap)
    sd_mres = mp.sqrt(em2s2 - 2 * i_s * em2s + i_s**2 * R)
    old = beta * mp.sqrt(var_m) * sd_mres / m_min + mp.e**beta * _z3(kap + beta) / _z3(kap)
    assert c["model_m_min"] == pytest.approx(float(old), rel=1e-10)


def test_search_bias_constants_bound_the_exact_gap():
    model = VonMisesFisher(3, 4.0)
    ks = np.array([1, 4, 16, 64, 256])
    gap = model.search_cross_entropy_curve(ks, 0.5) - np.array([model.exact_centred_risk(int(k), 0.5) for k in ks])
    assert np.all(np.abs(ks * gap) <= model.search_bias_constants(0.5)["model"])


def test_pair_moments_match_the_erfi_closed_form_on_s2():
    F, _, _ = symbolic.vmf3_pair_moment()
    r = sp.Symbol("r", positive=True)
    kap, b = 4, 2
    Fv = sp.lambdify(r, F.subs({symbolic.kappa: kap, symbolic.beta: b}), "mpmath")
    e_ww = (Fv(kap + b) - Fv(abs(kap - b))) / (2 * kap * b * _z3(kap))
    gamma = float(e_ww / _z3(b) ** 2 - 1)
    assert VonMisesFisher(3, 4.0).pair_weight_moments(0.5)["gamma"] == pytest.approx(gamma, rel=1e-11)


def test_pair_moments_vanish_for_independent_positives():
    pair = VonMisesFisher(4, 0.0).pair_weight_moments(0.7)
    assert abs(pair["gamma"]) < 1e-12 and abs(pair["delta"]) < 1e-12


def test_ntxent_constants_and_exact_values():
    model = VonMisesFisher(3, 4.0)
    c1, _ = model.in_batch_bias_coefficients(0.5, "clip")
    c1_nt, c2_nt = model.in_batch_bias_coefficients(0.5, "nt_xent")
    gamma = model.pair_weight_moments(0.5)["gamma"]
    assert c1 == pytest.approx(model.bias_coefficients(0.5)[0], rel=1e-15)
    assert c1_nt == pytest.approx(c1 - gamma / 2, rel=1e-13)
    # exact NT-Xent values approach c1 + c2/k with an O(1/k^2) remainder (k = 2B - 2)
    Bs = [129, 513]
    vals, errs = model.exact_in_batch_bias(Bs, 0.5, "nt_xent")
    for B, v in zip(Bs, vals):
        k = 2 * B - 2
        assert abs(k * v - (c1_nt + c2_nt / k)) < 20 / k**2
    clip, _ = model.exact_in_batch_bias([9], 0.5, "clip")
    assert clip[0] == pytest.approx(model.exact_bias(8, 0.5), rel=1e-12)
    with pytest.raises(ValueError, match="batch size"):
        model.exact_in_batch_bias([1], 0.5, "nt_xent")


def test_fourth_order_coefficients_against_mpmath_moments():
    # c3, c4 as printed (sympy) at moments computed with mpmath from Z(b) = sinh b / b
    kap, beta = mp.mpf(4), mp.mpf(2)
    mu = _z3(beta)
    ev = [_z3(j * beta) / mu**j for j in range(6)]
    vals = {symbolic.u1: 0, symbolic.u2: 0, symbolic.u3: 0, symbolic.u4: 0}
    for j in range(1, 5):
        vals[getattr(symbolic, f"u{j}")] = _z3(kap + j * beta) / (_z3(kap) * mu**j)
    for r, sym in ((2, symbolic.v2), (3, symbolic.v3), (4, symbolic.v4), (5, symbolic.v5)):
        vals[sym] = mp.fsum(mp.binomial(r, i) * ev[i] * (-1) ** (r - i) for i in range(r + 1))
    c3_book, c4_book = symbolic.third_order_formulas()
    c = VonMisesFisher(3, 4.0).bias_coefficients(0.5, order=4)
    assert c[2] == pytest.approx(float(c3_book.subs(vals)), rel=1e-10)
    assert c[3] == pytest.approx(float(c4_book.subs(vals)), rel=1e-9)


def test_identity_approximation_error_is_a_kl_by_quadrature():
    # KL(vMF(kappa) || vMF(beta)) on S^2 by direct 1-D quadrature in t = <x, y> (density kappa e^{kappa t}/(2 sinh kappa))
    kap, beta = 4.0, 2.0
    dens = lambda t, c: c * math.exp(c * t) / (2 * math.sinh(c))  # noqa: E731
    kl = integrate.quad(lambda t: dens(t, kap) * math.log(dens(t, kap) / dens(t, beta)), -1, 1, epsabs=1e-13)[0]
    assert VonMisesFisher(3, kap).search_approximation_error(1 / beta) == pytest.approx(kl, rel=1e-10)


def test_best_approximation_error_regimes():
    model = VonMisesFisher(3, 4.0)
    best = model.best_search_approximation_error(0.5)
    assert best["value"] < best["identity"] and best["gap"] < 1e-7
    assert best["value"] >= model.kl_kernel_vs_data() - 2 / 0.5  # the floor
    assert model.best_search_approximation_error(0.2)["value"] == 0.0  # tau <= 1/kappa: the cone embedding
    tau_star = model.identity_optimality_threshold()
    assert 0.25 < tau_star < 1.0
    above = model.best_search_approximation_error(tau_star * 1.2)
    assert above["value"] == pytest.approx(above["identity"], abs=1e-9)


@pytest.mark.slow
def test_decoupled_minimiser_is_the_argmin_of_the_exact_decoupled_risk():
    model = VonMisesFisher(3, 4.0)
    res = optimize.minimize_scalar(lambda t: model.exact_centred_risk(16, t, "decoupled"), bounds=(0.05, 0.5),
                                   method="bounded", options={"xatol": 1e-10})
    assert model.decoupled_risk_minimiser(16) == pytest.approx(res.x, abs=1e-6)
    # C = v2'(kappa)/(2 A'(kappa)) from sympy's closed form on S^2
    C, _, _ = symbolic.vmf3_decoupled_rate_constant()
    assert model.decoupled_rate_constant() == pytest.approx(float(C.subs(symbolic.kappa, 4)), rel=1e-12)
    with pytest.raises(ValueError, match="no minimiser"):
        model.decoupled_risk_minimiser(7)
