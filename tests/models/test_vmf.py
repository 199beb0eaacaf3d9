"""The vMF reference model: closed forms against quadrature, samplers, bad input."""

import math

import mpmath
import numpy as np
import pytest
import torch
from scipy import integrate, special

from infonce_book.models import VonMisesFisher, log_vmf_partition, mean_resultant_length


def z_by_quadrature(dim, b):
    """Z_p(b) = E e^{b s}, s = <x,y> with density (1-s^2)^{(p-3)/2} / B(1/2, (p-1)/2) on [-1,1]."""
    norm = special.beta(0.5, (dim - 1) / 2.0)
    alpha = (dim - 3) / 2.0  # the algebraic endpoint weight (1+s)^alpha (1-s)^alpha, handled by QUADPACK
    return integrate.quad(lambda s: math.exp(b * s) / norm, -1, 1, weight="alg", wvar=(alpha, alpha),
                          epsabs=0, epsrel=1e-13)[0]


@pytest.mark.parametrize("b", [1e-6, 1e-3, 0.5, 1.0, 1.0001, 3.0, 40.0])
def test_log_partition_on_s2_is_log_sinh_over_b(b):
    # dim 3: <x,y> is uniform on [-1,1], so Z = sinh(b)/b (Archimedes); reference in 50 digits.
    mpmath.mp.dps = 50
    want = float(mpmath.log(mpmath.sinh(b) / b))
    assert log_vmf_partition(3, b) == pytest.approx(want, rel=1e-13, abs=1e-300)


@pytest.mark.parametrize("dim", [2, 4, 5, 10])
@pytest.mark.parametrize("b", [0.3, 1.0, 2.5, 8.0])
def test_log_partition_matches_quadrature_of_the_density_of_the_cosine(dim, b):
    assert log_vmf_partition(dim, b) == pytest.approx(math.log(z_by_quadrature(dim, b)), rel=1e-10)


@pytest.mark.parametrize("dim", [128, 512, 768])
@pytest.mark.parametrize("b", [1.5, 10.0, 100.0, 1000.0])
def test_log_partition_at_embedding_dimensions_matches_mpmath(dim, b):
    # Large order nu = dim/2 - 1: scipy's ive underflows; reference Gamma(p/2)(2/b)^nu I_nu(b)
    # in 50 digits.
    mpmath.mp.dps = 50
    nu = mpmath.mpf(dim) / 2 - 1
    want = float(mpmath.log(mpmath.gamma(mpmath.mpf(dim) / 2) * (2 / mpmath.mpf(b)) ** nu * mpmath.besseli(nu, b)))
    assert log_vmf_partition(dim, b) == pytest.approx(want, rel=1e-12, abs=1e-15)
    a = float(mpmath.besseli(nu + 1, b) / mpmath.besseli(nu, b))
    assert mean_resultant_length(dim, b) == pytest.approx(a, rel=1e-12)


def test_log_partition_is_finite_for_large_arguments():
    # log Z_3(b) = b - log(2b) + log(1 - e^{-2b}); no overflow at b = 1e4.
    assert log_vmf_partition(3, 1e4) == pytest.approx(1e4 - math.log(2e4), rel=1e-14)


@pytest.mark.parametrize("kappa", [0.0, 1e-9, 0.5, 4.0, 50.0])
def test_mean_resultant_length_on_s2_is_langevin_function(kappa):
    # A_3(kappa) = coth(kappa) - 1/kappa (Langevin function), in 50 digits; A_3(0) = 0.
    mpmath.mp.dps = 50
    want = 0.0 if kappa == 0 else float(mpmath.coth(kappa) - 1 / mpmath.mpf(kappa))
    assert mean_resultant_length(3, kappa) == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_limit_risk_closed_form_on_s2():
    m = VonMisesFisher(3, 4.0)
    beta = 2.0
    want = -beta * (1 / math.tanh(4.0) - 1 / 4.0) + math.log(math.sinh(beta) / beta)
    assert m.limit_risk(0.5) == pytest.approx(want, rel=1e-14)


def test_bias_coefficients_match_the_design_values():
    # DESIGN.md section 3, C1: c1 = 2.18000 for dim 3, kappa 4, tau 0.5; second order about -1.63.
    m = VonMisesFisher(3, 4.0)
    c1, c2 = m.bias_coefficients(0.5)
    assert round(c1, 5) == 2.18000
    assert c2 == pytest.approx(-1.63, abs=0.005)
    # Decoupled: c1 = -sigma^2/(2 mu^2) = -0.537315 (issue "The book runs end to end").
    assert round(m.bias_coefficients(0.5, "decoupled")[0], 6) == -0.537315


def test_weight_moments_on_s2_closed_forms():
    m = VonMisesFisher(3, 4.0)
    mom = m.weight_moments(0.5)
    Z = lambda b: math.sinh(b) / b  # noqa: E731
    assert mom["mu"] == pytest.approx(Z(2.0), rel=1e-14)
    assert mom["sigma2"] == pytest.approx(Z(4.0) - Z(2.0) ** 2, rel=1e-13)
    assert mom["u1"] == pytest.approx(Z(6.0) / Z(4.0) / Z(2.0), rel=1e-13)


@pytest.mark.parametrize("dim", [2, 3, 5])
@pytest.mark.parametrize("kappa", [0.0, 1.0, 10.0])
def test_vmf_sampler_mean_cosine_is_the_mean_resultant_length(dim, kappa):
    m = VonMisesFisher(dim, kappa)
    g = torch.Generator().manual_seed(3)
    x = m.sample_data(20000, generator=g)
    xp = m.sample_positive(x, generator=g)
    torch.testing.assert_close(xp.norm(dim=-1), torch.ones(20000, dtype=torch.float64), rtol=1e-12, atol=1e-12)
    c = (x * xp).sum(-1)
    se = c.std().item() / math.sqrt(len(c))
    assert abs(c.mean().item() - m.mean_resultant_length()) < 5 * se


def test_vmf_sampler_second_moment_on_s2():
    # E[w^2] for w with density kappa e^{kappa w} / (2 sinh kappa): 1 - 2 coth(k)/k + 2/k^2.
    k = 3.0
    w = VonMisesFisher(3, k).sample_cosines(50000, generator=torch.Generator().manual_seed(1))
    want = 1 - 2 / (k * math.tanh(k)) + 2 / k**2
    se = (w**2).std().item() / math.sqrt(len(w))
    assert abs((w**2).mean().item() - want) < 5 * se


def test_samplers_are_seeded():
    m = VonMisesFisher(4, 2.0)
    a = m.sample_positive(m.sample_data(10, generator=torch.Generator().manual_seed(7)),
                          generator=torch.Generator().manual_seed(8))
    b = m.sample_positive(m.sample_data(10, generator=torch.Generator().manual_seed(7)),
                          generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b)


def test_uniform_sampler_is_isotropic():
    x = VonMisesFisher(3, 1.0).sample_data(40000, generator=torch.Generator().manual_seed(0))
    # E[x x^T] = I/3 for the uniform distribution on S^2.
    cov = (x.T @ x / len(x)).numpy()
    np.testing.assert_allclose(cov, np.eye(3) / 3, atol=0.01)


def test_bad_model_parameters_raise():
    with pytest.raises(ValueError, match="dim"):
        VonMisesFisher(1, 1.0)
    with pytest.raises(TypeError, match="dim"):
        VonMisesFisher(3.5, 1.0)
    with pytest.raises(ValueError, match="kappa"):
        VonMisesFisher(3, -1.0)
    with pytest.raises(ValueError, match="kappa"):
        VonMisesFisher(3, float("nan"))
    m = VonMisesFisher(3, 1.0)
    with pytest.raises(ValueError, match="tau"):
        m.limit_risk(0.0)
    with pytest.raises(ValueError, match="k"):
        m.exact_centred_risk(0, 0.5)
    with pytest.raises(ValueError, match="variant"):
        m.bias_coefficients(0.5, "symmetric")
    with pytest.raises(ValueError, match=r"anchors must be a tensor of shape \(n, 3\)"):
        m.sample_positive(torch.zeros(4, 2))
