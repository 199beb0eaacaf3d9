"""The one-sided search bias under moments of the density ratio (book, Proposition
``c5-prop-search-bias``): the algebra (sympy), hand values, and the bound against exact
references: the vMF model with the identity embedding (quadrature) and finite models with
adversarial similarity profiles (exact SNIS bias)."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from infonce_book.models import VonMisesFisher
from infonce_book.theory import symbolic
from infonce_book.theory.bounds import search_bias_bounds
from infonce_book.theory.exact import snis_bias


def vmf_moments(kappa):
    """Moments of m = e^{kappa s}/Z(kappa) under the uniform law on S^2, where s is uniform on
    [-1, 1]: by quadrature (independent of the closed forms the chapter uses)."""
    Z = math.sinh(kappa) / kappa
    e = {j: integrate.quad(lambda s: 0.5 * (math.exp(kappa * s) / Z) ** j, -1, 1, epsabs=0, epsrel=1e-13)[0]
         for j in (1, 2, 3, 4)}
    return {"e_m2": e[2], "var_m": e[2] - 1, "sd_M_m": math.sqrt(e[3] - e[2] ** 2),
            "e_m_mminus1_sq": e[3] - 2 * e[2] + 1, "mu4": e[4] - 4 * e[3] + 6 * e[2] - 3}


def test_the_algebra_of_the_proof_symbolic():
    for name, value in symbolic.snis_bias_identities().items():
        assert value == 0, name


def test_gaussian_second_moment_symbolic():
    conditional, outer = symbolic.gaussian_ratio_second_moment(sp.Rational(4, 5))
    assert conditional == 1 and outer == 1


def test_hand_values_and_the_third_moment_closed_form():
    mom = vmf_moments(2.0)
    b = search_bias_bounds(16, 0.5, **mom)
    beta = 2.0
    assert b["second_moment"] == pytest.approx(2 * beta * mom["e_m2"] / 16, rel=1e-14)
    grid = np.linspace(-1, 1, 2_000_001)
    brute = np.max(mom["sd_M_m"] * np.sqrt(1 - grid**2) + (1 + grid) * mom["var_m"])
    assert b["third_moment"] == pytest.approx(beta * brute / 16, rel=1e-9)
    d2, d4 = mom["var_m"] / 16, (mom["mu4"] + 3 * 15 * mom["var_m"] ** 2) / 16**3
    two = beta * (mom["sd_M_m"] / 16 + 2 * mom["e_m_mminus1_sq"] / 256 + 2 * math.sqrt(d2 * d4))
    assert b["two_term"] == pytest.approx(two, rel=1e-14)
    assert b["best"] == min(b["second_moment"], b["third_moment"], b["two_term"], 2 * beta)
    # the values of the generalisation chapter (vMF, kappa = 2, S^2)
    assert search_bias_bounds(4, 0.5, **mom)["best"] == pytest.approx(1.326, abs=5e-4)  # third moment wins
    assert search_bias_bounds(16, 0.5, **mom)["best"] == pytest.approx(0.305, abs=5e-4)  # two-term wins
    only2 = search_bias_bounds(16, 0.5, e_m2=mom["e_m2"])
    assert math.isnan(only2["third_moment"]) and only2["best"] == only2["second_moment"]
    assert search_bias_bounds(1, 0.5, e_m2=1000.0)["best"] == 4.0  # the cap 2 beta


@pytest.mark.parametrize("tau", [0.5, 1.0])
def test_bound_lies_above_the_exact_search_bias_of_the_vmf_identity(tau):
    model = VonMisesFisher(3, 2.0)
    mom = vmf_moments(2.0)
    ks = [1, 4, 16, 256]
    exact = model.search_cross_entropy_curve(ks, tau) - np.array([model.exact_centred_risk(k, tau) for k in ks])
    for k, gap in zip(ks, exact):
        b = search_bias_bounds(k, tau, **mom)
        assert gap <= b["best"]
        assert gap <= min(b["second_moment"], b["third_moment"], b["two_term"])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_points=st.integers(3, 8), spread=st.floats(0.2, 1.5))
def test_bound_holds_for_every_similarity_profile_of_a_finite_model(seed, n_points, spread):
    """For a finite pi and density ratio m, every f in [-1, 1]^N is the similarity profile of some
    embedding into the unit ball; the SNIS term beta (I - E I_hat) must lie below each form, per
    anchor. Profiles: random, and the monotone threshold profiles in m (the worst cases)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n_points))
    m = rng.lognormal(0, spread, n_points)
    m /= p @ m
    mom = {"e_m2": float(p @ m**2), "var_m": float(p @ m**2) - 1.0,
           "sd_M_m": math.sqrt(max(float(p @ m**3) - float(p @ m**2) ** 2, 0.0)),
           "e_m_mminus1_sq": float(p @ (m * (m - 1) ** 2)), "mu4": float(p @ (m - 1) ** 4)}
    order = np.argsort(m)
    profiles = [rng.uniform(-1, 1, n_points)]
    for t in range(n_points + 1):
        f = -np.ones(n_points)
        f[order[n_points - t:]] = 1.0
        profiles.append(f)
    ks = [1, 2, 3, 5, 16, 64]
    for f in profiles:
        bias, err = snis_bias(m, f, p, ks)  # E I_hat - I
        for k, bk in zip(ks, bias):
            b = search_bias_bounds(k, 1.0, **mom)  # beta = 1: the term is I - E I_hat
            for form in ("second_moment", "third_moment", "two_term", "cap"):
                assert -bk <= b[form] + 10 * err + 1e-12, (form, k)


def test_search_bias_bounds_reject_bad_input():
    with pytest.raises(ValueError, match="e_m2"):
        search_bias_bounds(4, 1.0, e_m2=0.5)
    with pytest.raises(ValueError, match="both var_m and sd_M_m"):
        search_bias_bounds(4, 1.0, e_m2=2.0, var_m=1.0)
    with pytest.raises(ValueError, match="two-term"):
        search_bias_bounds(4, 1.0, e_m2=2.0, var_m=1.0, sd_M_m=1.0, mu4=3.0)
    with pytest.raises(ValueError, match="var_m"):
        search_bias_bounds(4, 1.0, e_m2=2.0, var_m=-1.0, sd_M_m=1.0)
    with pytest.raises(ValueError, match="database size"):
        search_bias_bounds(0, 1.0, e_m2=2.0)
