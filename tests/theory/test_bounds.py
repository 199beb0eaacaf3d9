"""The bounds of Theorem c1-thm-rate hold, on the vMF model and on exact finite models."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infonce_book.models import VonMisesFisher
from infonce_book.theory.bounds import bias_bounds, lipschitz_log_bound, uniform_bias_constant
from infonce_book.theory.exact import exact_bias


@pytest.mark.parametrize("dim, kappa, tau", [(3, 4.0, 0.5), (3, 0.0, 0.2), (5, 10.0, 0.3), (2, 1.0, 1.5)])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_bounds_contain_the_exact_bias_on_the_vmf_model(dim, kappa, tau, variant):
    m = VonMisesFisher(dim, kappa)
    ks = np.array([1, 2, 5, 30, 1000, 10**5])
    exact = exact_bias(m, ks, tau, variant)
    mom = m.weight_moments(tau)
    lo, up = bias_bounds(ks, u1=mom["u1"], u2=mom["u2"], v2=mom["v2"], a=math.exp(-1 / tau) / mom["mu"],
                         variant=variant)
    assert np.all(lo <= exact + 1e-13) and np.all(exact <= up + 1e-13)
    assert np.all(np.abs(exact) * ks <= uniform_bias_constant(tau))
    if variant == "standard":
        lip = lipschitz_log_bound(ks, tau=tau, sigma=math.sqrt(mom["sigma2"]), mean_w_pos=mom["u1"] * mom["mu"])
        assert np.all(np.abs(exact) <= lip)


def exact_finite_bias(s_neg, p_neg, s_pos, p_pos, tau, k, variant):
    """E log T by enumeration over all k-tuples of negatives (a finite model, exact)."""
    beta = 1 / tau
    w, wp = np.exp(beta * s_neg), np.exp(beta * s_pos)
    mu = p_neg @ w
    total = 0.0
    for idx in itertools.product(range(len(w)), repeat=k):
        prob = np.prod(p_neg[list(idx)])
        s = w[list(idx)].sum()
        if variant == "standard":
            total += prob * (p_pos @ np.log((wp + s) / (k * mu)))
        else:
            total += prob * math.log(s / (k * mu))
    return total, w, wp, mu


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 5), k=st.integers(1, 3), tau=st.floats(0.1, 3.0), seed=st.integers(0, 10**6),
       variant=st.sampled_from(["standard", "decoupled"]))
def test_bounds_hold_for_any_finite_model(n, k, tau, seed, variant):
    # Any embedding on finitely many points: arbitrary cosines in [-1, 1] and probabilities.
    rng = np.random.default_rng(seed)
    s_neg, s_pos = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    p_neg, p_pos = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
    val, w, wp, mu = exact_finite_bias(s_neg, p_neg, s_pos, p_pos, tau, k, variant)
    u1, u2 = p_pos @ wp / mu, p_pos @ wp**2 / mu**2
    v2 = p_neg @ (w / mu - 1) ** 2
    lo, up = bias_bounds(k, u1=u1, u2=u2, v2=v2, a=math.exp(-1 / tau) / mu, variant=variant)
    assert lo[0] - 1e-12 <= val <= up[0] + 1e-12
    assert abs(val) * k <= uniform_bias_constant(tau) * (1 + 1e-12)


def test_uniform_constant_known_values():
    # C = max(e^{2 beta}, e^{4 beta}/2): beta = 1 gives e^4/2; beta = 0.1 gives e^0.2 (first term).
    assert uniform_bias_constant(1.0) == pytest.approx(math.e**4 / 2, rel=1e-14)
    assert uniform_bias_constant(10.0) == pytest.approx(math.exp(0.2), rel=1e-14)


def test_uniform_constant_overflow_is_reported():
    with pytest.raises(OverflowError, match="overflows"):
        uniform_bias_constant(4e-3)


def test_bound_functions_reject_bad_input():
    with pytest.raises(ValueError, match="a must be in"):
        bias_bounds(1, u1=1.0, u2=1.0, v2=1.0, a=1.5)
    with pytest.raises(ValueError, match="k"):
        bias_bounds(0, u1=1.0, u2=1.0, v2=1.0, a=0.5)
    with pytest.raises(ValueError, match="tau"):
        uniform_bias_constant(-1.0)
