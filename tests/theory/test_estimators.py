"""Monte Carlo estimators: intervals that cover the exact value, seeding, and the fits."""


import math

import numpy as np
import pytest
import torch

from infonce_book.models import VonMisesFisher
from infonce_book.theory.estimators import (
    finite_law_monte_carlo,
    monte_carlo_bias,
    plugin_bias_coefficients,
    plugin_weight_moments,
)
from infonce_book.theory.exact import DiscreteLaws, exact_bias, expected_log_T


@pytest.mark.parametrize("k, variant", [(1, "standard"), (16, "standard"), (300, "standard"), (16, "decoupled")])
def test_monte_carlo_interval_covers_the_exact_bias(k, variant):
    # Fixed seeds; with 99.9% intervals a miss would signal a bug, not bad luck.
    m = VonMisesFisher(3, 4.0)
    r = monte_carlo_bias(m, k, 0.5, 3000, variant=variant, device="cpu", seed=11, level=0.999, chunk_size=64)
    exact = exact_bias(m, [k], 0.5, variant)[0]
    for est in (r["plain"], r["cv"]):
        lo, hi = est.ci
        assert lo <= exact <= hi


def test_control_variates_shrink_the_interval_at_large_k():
    m = VonMisesFisher(3, 4.0)
    r = monte_carlo_bias(m, 512, 0.5, 2000, device="cpu", seed=0)
    assert r["cv"].se < r["plain"].se / 20


def test_monte_carlo_is_seeded():
    m = VonMisesFisher(3, 2.0)
    a = monte_carlo_bias(m, 8, 0.5, 500, device="cpu", seed=5)
    b = monte_carlo_bias(m, 8, 0.5, 500, device="cpu", seed=5)
    c = monte_carlo_bias(m, 8, 0.5, 500, device="cpu", seed=6)
    assert a["cv"].mean == b["cv"].mean and a["plain"].mean == b["plain"].mean
    assert a["cv"].mean != c["cv"].mean


def test_float32_monte_carlo_agrees_with_float64():
    m = VonMisesFisher(3, 4.0)
    r32 = monte_carlo_bias(m, 64, 0.5, 2000, device="cpu", seed=1, dtype=torch.float32)
    exact = exact_bias(m, [64], 0.5)[0]
    lo, hi = r32["cv"].ci
    assert lo - 1e-5 <= exact <= hi + 1e-5










def test_monte_carlo_rejects_bad_input():
    m = VonMisesFisher(3, 1.0)
    with pytest.raises(ValueError, match="k"):
        monte_carlo_bias(m, 0, 0.5, 10, device="cpu")
    with pytest.raises(ValueError, match="n_tuples"):
        monte_carlo_bias(m, 2, 0.5, 0, device="cpu")
    with pytest.raises(ValueError, match="device"):
        monte_carlo_bias(m, 2, 0.5, 10, device="tpu")


# --- plug-in estimates from similarities (finite laws) -----------------------------------------


def _anchor_laws(seed=0, n=3, P=5, M=40):
    g = torch.Generator().manual_seed(seed)
    s_pos = 0.4 + 0.6 * torch.rand(n, P, generator=g, dtype=torch.float64)
    s_neg = 2 * torch.rand(n, M, generator=g, dtype=torch.float64) - 1
    return s_pos, s_neg


def _exact_log_t(s_pos_row, s_neg_row, tau, ks, standard=True):
    # The Laplace/Frullani quadrature of the C1 chapter for one anchor: an oracle that knows
    # nothing of the moment formulas (weights on the union of both supports).
    beta = 1.0 / tau
    s = np.concatenate([s_neg_row.numpy(), s_pos_row.numpy()])
    M, P = s_neg_row.numel(), s_pos_row.numel()
    laws = DiscreteLaws(np.exp(beta * s), np.r_[np.full(M, 1 / M), np.zeros(P)],
                        np.r_[np.zeros(M), np.full(P, 1 / P)], beta)
    return expected_log_T(laws, ks, standard)[0]


def test_plugin_moments_of_a_two_point_law_are_the_closed_forms():
    # Negatives at s in {0, 1} (probability 1/2 each), tau = 1: mu = (1 + e)/2, V in
    # {2/(1+e), 2e/(1+e)}, so v2 = ((e-1)/(e+1))^2, v3 = 0; positive at s = 1: u1 = 2e/(1+e).
    e = math.e
    m = plugin_weight_moments(torch.ones(1, 1), torch.tensor([[0.0, 1.0]]), 1.0)
    assert m["log_mu"][0] == pytest.approx(math.log((1 + e) / 2), rel=1e-12)
    assert m["v2"][0] == pytest.approx(((e - 1) / (e + 1)) ** 2, rel=1e-12)
    assert m["v3"][0] == pytest.approx(0.0, abs=1e-15)
    assert m["u1"][0] == pytest.approx(2 * e / (1 + e), rel=1e-12)
    assert m["limit_risk"][0] == pytest.approx(-1.0 + math.log((1 + e) / 2), rel=1e-12)
    c1, c2 = plugin_bias_coefficients(m)
    assert c1[0] == pytest.approx(2 * e / (1 + e) - ((e - 1) / (e + 1)) ** 2 / 2, rel=1e-12)


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_plugin_c1_c2_match_the_exact_quadrature_at_large_k(variant):
    # k (k E[log T | x] - c1(x)) -> c2(x): at k = 2^16 the remainder is O(1/k), far below the
    # tolerance; the oracle is the quadrature of eq. c1-eq-frullani.
    s_pos, s_neg = _anchor_laws()
    tau, k = 0.5, 2.0 ** 16
    c1, c2 = plugin_bias_coefficients(plugin_weight_moments(s_pos, s_neg, tau), variant)
    for i in range(s_pos.shape[0]):
        exact = _exact_log_t(s_pos[i], s_neg[i], tau, [k], variant == "standard")[0]
        assert k * exact == pytest.approx(c1[i] + c2[i] / k, abs=1e-6)
        assert k * (k * exact - c1[i]) == pytest.approx(c2[i], rel=1e-2, abs=1e-3)


def test_finite_law_monte_carlo_intervals_cover_the_exact_bias():
    s_pos, s_neg = _anchor_laws(seed=1, n=2)
    tau, ks = 0.5, [1, 8, 128]
    out = finite_law_monte_carlo(s_pos.repeat(200, 1), s_neg.repeat(200, 1), tau, ks, n_per_anchor=20,
                                 generator=torch.Generator().manual_seed(3))
    exact = np.mean([_exact_log_t(s_pos[i], s_neg[i], tau, ks) for i in range(2)], axis=0)
    for name in ("bias_plain", "bias_cv"):
        vals = out[name]
        mean, se = vals.mean(0), vals.std(0, ddof=1) / math.sqrt(vals.shape[0])
        assert np.all(np.abs(mean - exact) <= 4 * se + 1e-12), (name, mean, exact, se)
    assert np.all(out["positive_term"] > 0) and np.all((out["top1"] >= 0) & (out["top1"] <= 1))
    # The control variates pay off once T concentrates.
    assert out["bias_cv"][:, 2].std() < out["bias_plain"][:, 2].std() / 10


def test_finite_law_monte_carlo_exact_cases():
    # One negative value equal to the positive's: every loss is log(k + 1) (chance), the bias is
    # log((k+1)/k), top-1 never wins (ties fail), the positive term is log(1 + 1/k).
    out = finite_law_monte_carlo(torch.full((4, 2), 0.3), torch.full((4, 3), 0.3), 0.2, [1, 5],
                                 generator=torch.Generator().manual_seed(0))
    assert out["risk"] == pytest.approx(np.log([2.0, 6.0])[None].repeat(4, 0), rel=1e-12)
    assert out["bias_plain"] == pytest.approx(np.log([2.0, 1.2])[None].repeat(4, 0), rel=1e-12)
    assert out["positive_term"] == pytest.approx(np.log([2.0, 1.2])[None].repeat(4, 0), rel=1e-12)
    assert np.all(out["top1"] == 0.0)
    with pytest.raises(ValueError, match="s_pos must be"):
        finite_law_monte_carlo(torch.zeros(2, 1), torch.zeros(3, 4), 0.5, [1])
    with pytest.raises(ValueError, match="k"):
        finite_law_monte_carlo(torch.zeros(2, 1), torch.zeros(2, 4), 0.5, [0])
