"""C2: empirical search kernels, the finite and Gaussian models, the search cross-entropy."""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from infonce_book.models import FiniteModel, GaussianModel, VonMisesFisher
from infonce_book.theory import symbolic
from infonce_book.theory.exact import snis_bias
from infonce_book.theory.search import (
    ideal_search_log_kernel,
    positive_rank,
    search_cross_entropy,
    softmax_search_log_kernel,
)


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 4), k=st.integers(1, 20), tau=st.floats(0.01, 10.0), seed=st.integers(0, 10**6))
def test_cross_entropy_is_at_least_the_entropy_of_the_ideal_search(B, k, tau, seed):
    # Gibbs' inequality: H(M_hat, Q_hat) >= H(M_hat), with equality iff Q_hat = M_hat.
    g = torch.Generator().manual_seed(seed)
    s = torch.rand(B, k, generator=g, dtype=torch.float64) * 2 - 1
    log_m = torch.randn(B, k, generator=g, dtype=torch.float64)
    h = search_cross_entropy(s, log_m, tau)
    lm = ideal_search_log_kernel(log_m)
    entropy = -(lm.exp() * lm).sum(-1)
    assert torch.all(h >= entropy - 1e-12)
    torch.testing.assert_close(softmax_search_log_kernel(s, tau).exp().sum(-1), torch.ones(B, dtype=torch.float64))
    # Q_hat = M_hat when log m = s / tau (up to a constant): H equals the entropy.
    same = search_cross_entropy(s, s / tau + 3.0, tau)
    lq = softmax_search_log_kernel(s, tau)
    torch.testing.assert_close(same, -(lq.exp() * lq).sum(-1), rtol=1e-12, atol=1e-12)


def test_cross_entropy_known_value():
    # Two items: M_hat = (1/2, 1/2), Q_hat = (e^2, 1)/(e^2 + 1) at s = (1, 0), tau = 0.5.
    h = search_cross_entropy(torch.tensor([[1.0, 0.0]], dtype=torch.float64),
                             torch.zeros(1, 2, dtype=torch.float64), 0.5)
    want = -0.5 * (2 - math.log(math.exp(2) + 1)) - 0.5 * (0 - math.log(math.exp(2) + 1))
    assert h.item() == pytest.approx(want, rel=1e-14)


def test_positive_rank():
    r = positive_rank(torch.tensor([0.5, 0.9, 0.1]), torch.tensor([[0.1, 0.7], [0.2, 0.3], [0.1, 0.2]]))
    assert r.tolist() == [2, 1, 3]  # the tie at 0.1 counts against the positive


def test_search_kernels_reject_bad_input():
    with pytest.raises(ValueError, match="same shape"):
        search_cross_entropy(torch.zeros(2, 3), torch.zeros(2, 4), 0.5)
    with pytest.raises(ValueError, match=r"s_db must have shape \(B, k\)"):
        search_cross_entropy(torch.zeros(3), torch.zeros(3), 0.5)
    with pytest.raises(ValueError, match="NaN"):
        search_cross_entropy(torch.tensor([[float("nan")]]), torch.zeros(1, 1), 0.5)
    with pytest.raises(ValueError, match="tau"):
        softmax_search_log_kernel(torch.zeros(1, 2), 0.0)


def test_snis_bias_matches_enumeration_and_its_limit():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4))
    m = rng.uniform(0.3, 2.0, 4)
    m /= p @ m
    f = rng.uniform(-1, 1, 4)
    b, _ = snis_bias(m, f, p, [1, 2, 3, 4, 10**6])
    for k in (1, 2, 3, 4):
        enum = sum(np.prod(p[list(ix)]) * (m[list(ix)] @ f[list(ix)]) / m[list(ix)].sum()
                   for ix in itertools.product(range(4), repeat=k))
        assert b[k - 1] == pytest.approx(enum - p @ (m * f), abs=1e-13)
    cov_M = p @ (m * m * f) - (p @ (m * m)) * (p @ (m * f))  # Cov under M: E_M g = E_p[m g]
    assert 10**6 * b[-1] == pytest.approx(-cov_M, rel=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finite_model_exact_values_agree_with_enumeration(seed):
    fm = FiniteModel.random(4, 3, seed=seed)
    for k in (1, 2, 3):
        for variant in ("standard", "decoupled"):
            assert fm.exact_centred_risk(k, 0.4, variant) == pytest.approx(fm.enumerate_centred_risk(k, 0.4, variant),
                                                                           abs=1e-10)
        enum = fm.search_cross_entropy(k, 0.4, method="enumeration")
        lap = fm.search_cross_entropy(k, 0.4, method="laplace")
        assert enum.method == "enumeration" and lap.method == "laplace"
        assert lap.value == pytest.approx(enum.value, abs=1e-10)


def test_search_cross_entropy_of_one_item_is_zero():
    # With a database of one item both searches put all mass on it: H = 0 = log 1.
    assert FiniteModel.random(3, 2, seed=0).search_cross_entropy(1, 0.5).value == pytest.approx(0.0, abs=1e-13)
    assert VonMisesFisher(3, 2.0).search_cross_entropy(1, 0.5).value == pytest.approx(0.0, abs=1e-12)


def test_finite_model_search_gap_tends_to_d1():
    fm = FiniteModel.random(5, 3, seed=4)
    k = 10**4
    gap = fm.search_cross_entropy(k, 0.5, method="laplace").value - fm.exact_centred_risk(k, 0.5)
    assert k * gap == pytest.approx(fm.search_gap_constant(0.5), abs=20.0 / k)
    gap_dec = fm.search_cross_entropy(k, 0.5, method="laplace").value - fm.exact_centred_risk(k, 0.5, "decoupled")
    assert k * gap_dec == pytest.approx(fm.search_gap_constant(0.5, "decoupled"), abs=20.0 / k)


def test_finite_model_bias_coefficient_matches_exact_bias():
    fm = FiniteModel.random(5, 3, seed=5)
    c1, c2 = fm.bias_coefficients(0.5)
    k = 10**5
    assert k * fm.exact_bias(k, 0.5) == pytest.approx(c1 + c2 / k, abs=1e-6)


def test_monte_carlo_search_cross_entropy_covers_the_exact_value():
    # Checked at 99.9% (3.29 standard errors), so that a miss means a bug rather than bad luck.
    def within(mc, exact):
        se = mc.se
        return abs(mc.value - exact) <= 3.29 * se

    fm = FiniteModel.random(5, 3, seed=6)
    mc = fm.search_cross_entropy(8, 0.5, method="monte_carlo", n_queries=20000, seed=1)
    assert mc.method == "monte_carlo" and within(mc, fm.search_cross_entropy(8, 0.5, method="laplace").value)
    vm = VonMisesFisher(3, 4.0)
    mc = vm.search_cross_entropy(32, 0.5, method="monte_carlo", n_queries=20000, seed=2)
    assert within(mc, vm.search_cross_entropy(32, 0.5).value)


def test_vmf_search_gap_constant_closed_form_matches_the_exact_values():
    m = VonMisesFisher(3, 4.0)
    ks = np.array([2**12, 2**13])
    V = ks * (m.search_cross_entropy_curve(ks, 0.5) - np.array([m.exact_centred_risk(k, 0.5) for k in ks]))
    # Richardson removes the 1/k term; what is left is O(1/k^2) (about 1e-6 here).
    assert 2 * V[1] - V[0] == pytest.approx(m.search_gap_constant(0.5), abs=1e-5)




def test_two_point_model_is_exact_symbolically():
    H2, L2, d1 = symbolic.two_point_model_search_check(k=2)
    p_, a_, b_, c_ = sp.symbols("p a b c", positive=True)
    pt = {p_: sp.Rational(2, 5), a_: sp.Rational(2, 3), b_: sp.Rational(1, 4), c_: sp.Rational(1, 3), symbolic.beta: 3}
    fm = FiniteModel([0.4, 0.6], [[2 / 3, 1 / 3], [0.25, 0.75]], [[1.0, 0.0], [1 / 3, math.sqrt(8 / 9)]])
    assert float(H2.subs(pt)) == pytest.approx(fm.search_cross_entropy(2, 1 / 3).value, abs=1e-12)
    assert float(L2.subs(pt)) == pytest.approx(fm.exact_centred_risk(2, 1 / 3), abs=1e-12)
    assert float(d1.subs(pt)) == pytest.approx(fm.search_gap_constant(1 / 3), abs=1e-12)


def test_snis_first_order_symbolic():
    assert sp.simplify(symbolic.snis_first_order() - (symbolic.I_f * symbolic.s_D - symbolic.s_ND)) == 0
    assert symbolic.snis_constant_is_minus_covariance()


def test_gaussian_model_density_ratio_and_samplers():
    gm = GaussianModel(3, 0.6)
    g = torch.Generator().manual_seed(0)
    x = gm.sample_data(5, generator=g)
    y = gm.sample_data(4, generator=g)
    got = gm.log_density_ratio(x, y.expand(5, 4, 3))  # the same 4 points for each of the 5 anchors
    cond = [stats.multivariate_normal(mean=0.6 * xi.numpy(), cov=0.64 * np.eye(3)) for xi in x]
    want = np.array([[c.logpdf(yj.numpy()) - stats.multivariate_normal(np.zeros(3), np.eye(3)).logpdf(yj.numpy())
                      for yj in y] for c in cond])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    x = gm.sample_data(40000, generator=g)
    xp = gm.sample_positive(x, generator=g)
    corr = float(((x * xp).sum() / (x.norm() * xp.norm())))
    assert corr == pytest.approx(0.6, abs=0.01)


def test_model_inputs_are_validated_naming_the_argument():
    emb = np.eye(2)
    with pytest.raises(ValueError, match="row-stochastic"):
        FiniteModel([0.5, 0.5], [[0.5, 0.6], [0.5, 0.5]], emb)
    with pytest.raises(ValueError, match="kernel must have all entries > 0"):
        FiniteModel([0.5, 0.5], [[1.0, 0.0], [0.5, 0.5]], emb)
    with pytest.raises(ValueError, match="pi must be a probability vector"):
        FiniteModel([0.5, 0.6], [[0.5, 0.5], [0.5, 0.5]], emb)
    with pytest.raises(ValueError, match="embeddings must have unit-norm rows"):
        FiniteModel([0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]], 2 * emb)
    with pytest.raises(ValueError, match=r"kernel must have shape \(N, N\) = \(2, 2\)"):
        FiniteModel([0.5, 0.5], np.full((3, 3), 1 / 3), emb)
    with pytest.raises(ValueError, match=r"embeddings must have shape \(N, d\) with N = 2"):
        FiniteModel([0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]], np.eye(3))
    with pytest.raises(ValueError, match="pi contains NaN"):
        FiniteModel([float("nan"), 0.5], [[0.5, 0.5], [0.5, 0.5]], emb)
    with pytest.raises(ValueError, match="method"):
        FiniteModel.random(3, 2).search_cross_entropy(2, 0.5, method="guess")
    with pytest.raises(ValueError, match="rho"):
        GaussianModel(3, 1.0)
    with pytest.raises(ValueError, match="dim"):
        GaussianModel(0, 0.5)
