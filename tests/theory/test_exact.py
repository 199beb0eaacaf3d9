"""The exact finite-k reference (Laplace/Frullani quadrature) against independent computations."""

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, special

from infonce_book.models import VonMisesFisher
from infonce_book.theory.exact import ein, exact_bias, exact_bias_with_error


def test_ein_matches_a_50_digit_reference():
    # Ein(z) = E1(z) + log z + Euler's gamma (DLMF 6.2.3), evaluated by mpmath in 50 digits.
    mpmath.mp.dps = 50
    for z in [1e-12, 1e-3, 0.5, 1.0, 1.5, 7.0, 60.0]:
        want = float(mpmath.e1(z) + mpmath.log(z) + mpmath.euler)
        assert ein(z) == pytest.approx(want, rel=1e-14)


def test_design_values_of_k_times_bias():
    # DESIGN.md C1 (exact quadrature): k (L_k - log k - L_inf) = 2.1548, 2.1737, 2.1784, 2.1796
    # at k = 64, 256, 1024, 4096; the issue gives 2.17841 at k = 1024.
    m = VonMisesFisher(3, 4.0)
    ks = np.array([64, 256, 1024, 4096])
    kb = ks * exact_bias(m, ks, 0.5)
    np.testing.assert_allclose(np.round(kb, 4), [2.1548, 2.1737, 2.1784, 2.1796])
    assert round(kb[2], 5) == 2.17841


def test_exact_bias_agrees_with_the_asymptotic_series_at_a_million_negatives():
    # Third-order series c1/k + c2/k^2 + c3/k^3 has error O(k^-4) ~ 1e-24 at k = 2^20, so any
    # difference is quadrature error: require 1e-13 absolute, far inside the 1e-9 target.
    m = VonMisesFisher(3, 4.0)
    k = 2**20
    c1, c2, c3 = m.bias_coefficients(0.5, order=3)
    assert abs(exact_bias(m, [k], 0.5)[0] - (c1 / k + c2 / k**2 + c3 / k**3)) < 1e-13


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_closed_form_and_gauss_jacobi_agree_on_s2(variant):
    m = VonMisesFisher(3, 2.0)
    ks = [1, 3, 50, 10**4, 10**6]
    a = exact_bias(m, ks, 0.4, variant)
    b = exact_bias(m, ks, 0.4, variant, closed_form=False)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


def k1_by_double_quadrature(dim, kappa, tau, variant):
    """E log T at k = 1 by 2-D quadrature over the cosines s+ (vMF tilt) and s (uniform)."""
    beta = 1.0 / tau
    m = VonMisesFisher(dim, kappa)
    mu = math.exp(m.log_partition(beta))
    nrm = special.beta(0.5, (dim - 1) / 2.0)
    dens = lambda s: (1 - s * s) ** ((dim - 3) / 2.0) / nrm  # noqa: E731
    zk = math.exp(m.log_partition(kappa))
    dens_pos = lambda s: dens(s) * math.exp(kappa * s) / zk  # noqa: E731
    if variant == "decoupled":
        return integrate.quad(lambda s: dens(s) * (beta * s - math.log(mu)), -1, 1, epsrel=1e-13)[0]
    f = lambda s, sp: dens_pos(sp) * dens(s) * math.log((math.exp(beta * sp) + math.exp(beta * s)) / mu)  # noqa: E731
    return integrate.dblquad(f, -1, 1, -1, 1, epsabs=1e-13, epsrel=1e-12)[0]


@pytest.mark.parametrize("dim", [3, 4, 6])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_k_equal_one_matches_direct_double_integral(dim, variant):
    m = VonMisesFisher(dim, 3.0)
    assert exact_bias(m, [1], 0.7, variant)[0] == pytest.approx(k1_by_double_quadrature(dim, 3.0, 0.7, variant),
                                                                abs=1e-10)


@pytest.mark.parametrize("dim", [2, 5, 16])
def test_other_dimensions_agree_with_the_series_at_large_k(dim):
    m = VonMisesFisher(dim, 5.0)
    k = 10**5
    c1, c2, c3 = m.bias_coefficients(0.5, order=3)
    assert abs(exact_bias(m, [k], 0.5)[0] - (c1 / k + c2 / k**2 + c3 / k**3)) < 1e-12


def test_small_temperature_stays_finite_and_within_the_bounds():
    # tau = 0.1 (beta = 10): weights span e^-10..e^10; the integrand decays only
    # logarithmically at k = 1. The value must be finite and obey Jensen's bound u1/k.
    m = VonMisesFisher(3, 10.0)
    b = exact_bias(m, [1, 10, 1000], 0.1)
    u1 = m.weight_moments(0.1)["u1"]
    assert np.all(np.isfinite(b)) and np.all(b <= u1 / np.array([1, 10, 1000]))


def test_error_estimate_covers_the_difference_from_the_series():
    m = VonMisesFisher(3, 4.0)
    ks = np.array([2**16, 2**18])
    v, err = exact_bias_with_error(m, ks, 0.5)
    c1, c2, c3 = m.bias_coefficients(0.5, order=3)
    assert np.all(np.abs(v - (c1 / ks + c2 / ks**2 + c3 / ks**3)) <= err)
