"""Monte Carlo estimators: intervals that cover the exact value, seeding, and the fits."""


import numpy as np
import pytest
import torch

from infonce_book.estimators import Estimate, monte_carlo_bias
from infonce_book.exact import exact_bias
from infonce_book.experiments import coverage_interval, fit_loglog_slope, log_grid
from infonce_book.models import VonMisesFisher


def test_estimate_interval_is_mean_plus_minus_z_se():
    e = Estimate.from_samples(np.array([1.0, 2.0, 3.0, 4.0]))
    assert e.mean == 2.5 and e.se == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert e.ci == pytest.approx((2.5 - 1.959963984540054 * e.se, 2.5 + 1.959963984540054 * e.se))


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


def test_slope_of_an_exact_power_law_is_recovered():
    k = np.array([10.0, 100.0, 1000.0, 10000.0])
    fit = fit_loglog_slope(k, 3.0 / k, 0.01 * 3.0 / k)
    assert fit["slope"] == pytest.approx(-1.0, abs=1e-12)
    assert fit["ci_low"] <= -1.0 <= fit["ci_high"]


def test_slope_fit_rejects_non_positive_values():
    with pytest.raises(ValueError, match="positive"):
        fit_loglog_slope([1, 2, 3], [1.0, -1.0, 0.5], [0.1, 0.1, 0.1])


def test_clopper_pearson_known_value():
    # All n covered: lower limit (alpha/2)^(1/n); n = 6 gives 0.025^(1/6) = 0.5407.
    lo, hi = coverage_interval(6, 6)
    assert lo == pytest.approx(0.025 ** (1 / 6), rel=1e-9) and hi == 1.0


def test_log_grid():
    assert log_grid(3, per_octave=1) == [1, 2, 4, 8]
    assert log_grid(2, per_octave=2) == [1, 2, 3, 4]


def test_monte_carlo_rejects_bad_input():
    m = VonMisesFisher(3, 1.0)
    with pytest.raises(ValueError, match="k"):
        monte_carlo_bias(m, 0, 0.5, 10, device="cpu")
    with pytest.raises(ValueError, match="n_tuples"):
        monte_carlo_bias(m, 2, 0.5, 0, device="cpu")
    with pytest.raises(ValueError, match="device"):
        monte_carlo_bias(m, 2, 0.5, 10, device="tpu")
