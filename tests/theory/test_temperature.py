"""C3: the KL bound, the vMF closed forms, the optimal temperature, learning tau."""

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from infonce_book.learning.training import fit_temperature
from infonce_book.models import VonMisesFisher
from infonce_book.theory import symbolic
from infonce_book.theory.bounds import antipodal_kl, kl_softmax_bound
from infonce_book.theory.exact import exact_bias
from infonce_book.theory.search import empirical_kl_softmax, empirical_kl_softmax_interval


def test_kl_bound_known_values():
    assert kl_softmax_bound(2.0) == pytest.approx(1 / 8)  # 1/(2 tau^2) < 2/tau
    assert kl_softmax_bound(0.1) == pytest.approx(20.0)  # 2/tau < 1/(2 tau^2) = 50
    with pytest.raises(ValueError, match="tau"):
        kl_softmax_bound(0.0)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 8), tau=st.floats(0.02, 50.0), seed=st.integers(0, 10**6))
def test_kl_identity_and_bound_for_any_discrete_similarity_law(n, tau, seed):
    # Any embedding and anchor induce some law of s in [-1, 1]; take a random discrete one.
    rng = np.random.default_rng(seed)
    s, p = rng.uniform(-1, 1, n), rng.dirichlet(np.ones(n))
    beta = 1 / tau
    K = lambda t: special.logsumexp(t * s, b=p)  # noqa: E731
    q = p * np.exp(beta * s - K(beta))
    kl = float(q @ np.log(q / p))
    assert kl <= kl_softmax_bound(tau) * (1 + 1e-12) + 1e-15
    # KL = int_0^beta t Var_{Q_t}(s) dt (Theorem c3-thm-kl), by quadrature.
    def t_var(t):
        qt = p * np.exp(t * s - K(t))
        return t * (qt @ s**2 - (qt @ s) ** 2)
    assert integrate.quad(t_var, 0, beta, epsabs=1e-13, epsrel=1e-10, limit=200)[0] == pytest.approx(kl, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("tau", [0.05, 0.3, 1.0, 10.0])
def test_antipodal_closed_form(tau):
    beta = 1 / tau
    q = np.array([math.exp(beta), math.exp(-beta)]) / (math.exp(beta) + math.exp(-beta))
    assert antipodal_kl(tau) == pytest.approx(float(q @ np.log(q / 0.5)), rel=1e-12)


@pytest.mark.parametrize("dim", [2, 3, 5])
@pytest.mark.parametrize("tau", [0.1, 0.5, 3.0])
def test_vmf_kl_matches_quadrature_of_the_cosine_density(dim, tau):
    m = VonMisesFisher(dim, 1.0)
    beta, alpha = 1 / tau, (dim - 3) / 2
    norm = special.beta(0.5, (dim - 1) / 2)
    lz = m.log_partition(beta)
    f = lambda s: (beta * s - lz) * math.exp(beta * s - lz) / norm  # noqa: E731
    want = integrate.quad(f, -1, 1, weight="alg", wvar=(alpha, alpha), epsabs=1e-13)[0]
    assert m.kl_softmax_vs_data(tau) == pytest.approx(want, rel=1e-9)


def test_vmf_kl_large_tau_behaviour():
    # KL ~ 1/(2 p tau^2) as tau -> infinity.
    for p in (3, 10):
        assert VonMisesFisher(p, 1.0).kl_softmax_vs_data(200.0) * 2 * p * 200.0**2 == pytest.approx(1.0, rel=1e-3)


def test_optimal_tau_minimises_the_finite_k_risk():
    # Proposition c3-prop-tau: L_k(tau) >= L_k(1/kappa) for every k (exact quadrature).
    m = VonMisesFisher(3, 4.0)
    assert m.optimal_tau() == 0.25
    for k in (1, 4, 64):
        risk = lambda tau: m.limit_risk(tau) + exact_bias(m, [k], tau)[0]  # noqa: E731
        assert risk(0.25) <= min(risk(0.24), risk(0.26), risk(0.1), risk(1.0))
    with pytest.raises(ValueError, match="kappa = 0"):
        VonMisesFisher(3, 0.0).optimal_tau()


def test_learned_temperature_approaches_one_over_kappa():
    r = fit_temperature(VonMisesFisher(3, 4.0), 16, batch_size=128, steps=200, tail=100, seed=0, device="cpu")
    assert r["tau"] == pytest.approx(0.25, abs=0.02)
    assert len(r["history"]) == 200


def test_empirical_kl_known_value_and_bad_input():
    # Two sample points at cosines +1 and -1 with the query: KL = beta tanh beta - log cosh beta.
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    smp = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    assert empirical_kl_softmax(q, smp, 0.5).item() == pytest.approx(antipodal_kl(0.5), rel=1e-12)
    with pytest.raises(ValueError, match="unit-norm"):
        empirical_kl_softmax(2 * q, smp, 0.5)
    with pytest.raises(ValueError, match="queries must be"):
        empirical_kl_softmax(q[0], smp, 0.5)


def test_symbolic_checks_of_the_kl():
    _, dkl = symbolic.kl_tilt_derivative()
    K = sp.Function("K")
    assert sp.simplify(dkl - symbolic.beta * sp.diff(K(symbolic.beta), symbolic.beta, 2)) == 0
    series = symbolic.kl_small_beta()
    assert series.coeff(symbolic.beta, 2) == sp.Symbol(r"\operatorname{cum}_2") / 2
    _, vmf = symbolic.vmf3_kl_softmax()
    assert sp.expand(vmf - (symbolic.beta**2 / 6 - symbolic.beta**4 / 60)) == 0
    _, anti = symbolic.antipodal_kl_series()
    assert sp.expand(anti - (symbolic.beta**2 / 2 - symbolic.beta**4 / 4)) == 0


def test_empirical_kl_interval_covers_the_vmf_closed_form():
    m = VonMisesFisher(3, 1.0)
    g = torch.Generator().manual_seed(4)
    q = m.sample_data(400, generator=g)
    smp = m.sample_data(400 * 2048, generator=g).reshape(400, 2048, 3)
    est = empirical_kl_softmax_interval(q, smp, 1.0, level=0.999)
    assert est.n == 400 and est.level == 0.999 and est.contains(m.kl_softmax_vs_data(1.0))
    with pytest.raises(ValueError, match="at least 2 queries"):
        empirical_kl_softmax_interval(q[:1], smp[:1], 1.0)
