"""The per-tuple search cross-entropy h (book, Theorem c5-thm-tuple-search): E_z h = E H, its range,
its curvature, its variance, and the direct certificates built on it (Chapter 5)."""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
import torch

from infonce_book.chapters.c5_generalisation.direct import (
    direct_certificate,
    direct_holdout,
    mc_tuple_search,
    normalised_linear_tuple_search,
)
from infonce_book.learning.certificates import loss_curvature
from infonce_book.models import VonMisesFisher
from infonce_book.theory.search import search_cross_entropy
from infonce_book.theory.tuple_search import tuple_search_cross_entropy, tuple_search_range


def test_expectation_over_tuples_is_the_search_cross_entropy_exactly_on_a_finite_model():
    # (a) E_z h = E H: a three-state model, every tuple enumerated with its probability
    # pi(x) M(x, x+) pi(x_1) pi(x_2); the query-database law of E H is pi(x) pi(x_1) pi(x_2).
    rng = np.random.default_rng(0)
    pi = np.array([0.2, 0.5, 0.3])
    m = rng.uniform(0.2, 2.0, (3, 3))
    m = m / (m * pi).sum(1, keepdims=True)  # E_pi m(x, .) = 1: M(x, y) = m(x, y) pi(y)
    M = m * pi
    s = rng.uniform(-1, 1, (3, 3))
    tau = 0.5  # k = 2 negatives per tuple

    def h(x, negs):
        return float(tuple_search_cross_entropy(torch.tensor([[s[x, j] for j in negs]], dtype=torch.float64),
                                                torch.tensor([[math.log(m[x, j]) for j in negs]],
                                                             dtype=torch.float64), tau)[0])

    e_tuples = sum(pi[x] * M[x, xp] * pi[a] * pi[b] * h(x, (a, b))
                   for x, xp, a, b in itertools.product(range(3), repeat=4))
    e_search = sum(pi[x] * pi[a] * pi[b] * float(search_cross_entropy(
        torch.tensor([[s[x, a], s[x, b]]], dtype=torch.float64),
        torch.tensor([[math.log(m[x, a]), math.log(m[x, b])]], dtype=torch.float64), tau)[0])
        for x, a, b in itertools.product(range(3), repeat=3))
    assert e_tuples == pytest.approx(e_search, rel=1e-14)
    assert np.allclose(M.sum(1), 1.0, atol=1e-14)  # M(x, .) is a probability: the positive integrates out


def test_mean_over_vmf_tuples_matches_the_exact_search_cross_entropy():
    # E_z h - log k of the identity on vMF tuples against the Laplace value of Chapter 2
    model, tau, k = VonMisesFisher(3, 2.0), 0.5, 16
    t = model.sample_tuples(200_000, k, generator=torch.Generator().manual_seed(3))
    s = torch.einsum("nd,nkd->nk", t.anchor, t.negatives)
    h = tuple_search_cross_entropy(s, model.log_density_ratio(t.anchor, t.negatives), tau) - math.log(k)
    exact = float(model.search_cross_entropy(k, tau).mean)
    se = float(h.std()) / math.sqrt(h.numel())
    assert abs(float(h.mean()) - exact) < 4 * se
    # (d) the spread excludes the positive's noise: Var h is far below beta^2 Var <x, x+>
    assert float(h.var()) < 0.05
    var_pos = float(((t.anchor * t.positive).sum(-1)).var()) * (1 / tau) ** 2
    assert var_pos > 0.5


def test_the_range_is_plus_minus_two_beta_and_is_approached():
    # (b) h - log k = log mean_j e^{beta s_j} - beta sum_j M_j s_j lies in [-2 beta, 2 beta]
    tau, k = 0.5, 5
    lo, hi = tuple_search_range(tau)
    gen = torch.Generator().manual_seed(1)
    s = 2 * torch.rand(20000, k, generator=gen, dtype=torch.float64) - 1
    lm = 30 * torch.randn(20000, k, generator=gen, dtype=torch.float64)
    h = tuple_search_cross_entropy(s, lm, tau) - math.log(k)
    assert float(h.min()) >= lo and float(h.max()) <= hi
    # the extreme tuple of k = 2: s = (1, -1), all of M_hat on the dissimilar item: log cosh(beta) + beta,
    # which tends to 2 beta - log 2 as beta grows (the ends are approached, up to log 2, not reached)
    for t in (0.5, 0.05):
        v = float(tuple_search_cross_entropy(torch.tensor([[1.0, -1.0]], dtype=torch.float64),
                                             torch.tensor([[-800.0, 0.0]], dtype=torch.float64), t)[0]) - math.log(2)
        assert v == pytest.approx(math.log(math.cosh(1 / t)) + 1 / t, rel=1e-12)
        assert v <= tuple_search_range(t)[1]


def test_the_algebra_of_the_range_symbolically():
    # the two inequalities of part (b): log mean e^{beta s} <= beta max s and >= beta mean s
    # (Jensen), and beta (mean s - sum M s) >= -2 beta, beta (max s - min s) <= 2 beta
    b, s1, s2, p = sp.symbols("beta s1 s2 p", real=True)
    lse = sp.log((sp.exp(b * s1) + sp.exp(b * s2)) / 2)
    h = lse - b * (p * s1 + (1 - p) * s2)
    # at s1 = 1, s2 = -1 with all M on s2 (p = 0): h = log cosh(beta) + beta <= 2 beta
    assert sp.simplify(h.subs({s1: 1, s2: -1, p: 0}) - (sp.log(sp.cosh(b)) + b)) == 0
    assert sp.limit((sp.log(sp.cosh(b)) + b) - 2 * b, b, sp.oo) == -sp.log(2)


def _h_single(theta, x, xn, lm, tau):
    return normalised_linear_tuple_search(theta[None], x[None], xn[None], lm[None], tau)[0]


@pytest.mark.parametrize("radius", [0.1, 0.3, 0.45])
def test_the_curvature_of_h_is_at_least_minus_kappa_r(radius):
    # (c) the second directional derivative of h in theta is >= -kappa_r |H|^2
    model, tau, k = VonMisesFisher(3, 2.0), 0.5, 8
    gen = torch.Generator().manual_seed(2)
    worst = 0.0
    for _ in range(60):
        t = model.sample_tuples(1, k, generator=gen)
        lm = model.log_density_ratio(t.anchor, t.negatives)[0]
        d = torch.randn(9, generator=gen, dtype=torch.float64)
        step = radius * float(torch.rand(1, generator=gen))
        theta = torch.eye(3, dtype=torch.float64).reshape(-1) + d / d.norm() * step
        H = torch.autograd.functional.hessian(lambda q: _h_single(q, t.anchor[0], t.negatives[0], lm, tau), theta)
        worst = min(worst, float(torch.linalg.eigvalsh(H).min()))
    assert worst >= -loss_curvature(1 / tau, radius)


def test_a_direct_certificate_lies_above_the_value_it_certifies():
    model, tau, k, n = VonMisesFisher(3, 2.0), 0.5, 16, 512
    gen = torch.Generator().manual_seed(5)
    t = model.sample_tuples(n, k, generator=gen)
    lm = model.log_density_ratio(t.anchor, t.negatives)
    theta = torch.eye(3, dtype=torch.float64).reshape(-1)
    exact = float(model.search_cross_entropy(k, tau).mean)
    for derand in (False, True):
        cert = direct_certificate(theta, theta, t.anchor, t.negatives, lm, tau, shift=exact, delta=0.04,
                                  delta_mc=0.01, pilot_draws=2000, final_draws=20000, generator=gen,
                                  derandomise=derand)
        assert cert["bound"] > exact
        parts = cert["mc_upper"] + cert["kl_term"] + cert["confidence_term"] + cert["derandomisation"]
        assert cert["bound"] == pytest.approx(parts, rel=1e-12)
        assert 0 < cert["eta"] * (2 / tau - exact) < 1  # eta inside (0, 1/b)
        assert (cert["derandomisation"] > 0) == derand
    with pytest.raises(ValueError, match="shift"):
        direct_certificate(theta, theta, t.anchor, t.negatives, lm, tau, shift=5.0, delta=0.04, delta_mc=0.01,
                           pilot_draws=100, final_draws=100, generator=gen, derandomise=False)
    x = mc_tuple_search(theta, 0.0, t.anchor, t.negatives, lm, tau, 1000, gen)
    assert x.shape == (1000,) and np.all(np.abs(x) <= 2 / tau)
    h = normalised_linear_tuple_search(theta.expand(n, -1), t.anchor, t.negatives, lm, tau).numpy()
    ho = direct_holdout(h[: n // 2], h[n // 2:], tau, delta=0.05)
    assert ho["bound"] > ho["heldout_mean"] and 0 < ho["eta"] < 1 / (2 / tau - ho["shift"])
