"""The one uncertainty type and the small statistics (``infonce_book.theory.stats``)."""

import math

import numpy as np
import pytest
from scipy import stats

from infonce_book.theory.stats import (
    Estimate,
    coverage_interval,
    fit_loglog_line,
    fit_loglog_slope,
    linear_slope,
    normal_quantile,
    richardson_limit,
    t_quantile,
    weighted_linear_fit,
)


def test_estimate_interval_is_mean_plus_minus_z_se():
    e = Estimate.from_samples(np.array([1.0, 2.0, 3.0, 4.0]))
    assert e.mean == 2.5 and e.se == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert e.ci == pytest.approx((2.5 - 1.959963984540054 * e.se, 2.5 + 1.959963984540054 * e.se))


def test_slope_of_an_exact_power_law_is_recovered():
    k = np.array([10.0, 100.0, 1000.0, 10000.0])
    fit = fit_loglog_slope(k, 3.0 / k, 0.01 * 3.0 / k)
    assert fit.mean == pytest.approx(-1.0, abs=1e-12)
    assert fit.ci_low <= -1.0 <= fit.ci_high


def test_slope_fit_rejects_non_positive_values():
    with pytest.raises(ValueError, match="positive"):
        fit_loglog_slope([1, 2, 3], [1.0, -1.0, 0.5], [0.1, 0.1, 0.1])


def test_clopper_pearson_known_value():
    # All n covered: lower limit (alpha/2)^(1/n); n = 6 gives 0.025^(1/6) = 0.5407.
    lo, hi = coverage_interval(6, 6)
    assert lo == pytest.approx(0.025 ** (1 / 6), rel=1e-9) and hi == 1.0


def test_normal_and_t_quantiles_known_values():
    # Tables: z_{0.975} = 1.959963984540054, t_{0.975, 4} = 2.7764451051977987, z_{0.995} = 2.5758293035489004.
    assert normal_quantile(0.95) == pytest.approx(1.959963984540054, rel=1e-15)
    assert normal_quantile(0.99) == pytest.approx(2.5758293035489004, rel=1e-15)
    assert t_quantile(0.95, 4) == pytest.approx(2.7764451051977987, rel=1e-14)
    assert t_quantile(0.95, 0) == math.inf


def test_estimate_t_interval_and_levels():
    x = np.array([0.1, 0.4, 0.2, 0.5, 0.3])
    e = Estimate.from_samples(x, t=True)
    se = np.std(x, ddof=1) / math.sqrt(5)
    assert e.dof == 4 and e.ci == pytest.approx((0.3 - 2.7764451051977987 * se, 0.3 + 2.7764451051977987 * se))
    wider = e.at_level(0.99)
    assert wider.mean == e.mean and wider.half_width > e.half_width
    assert wider.half_width == pytest.approx(stats.t.ppf(0.995, 4) * se, rel=1e-12)


def test_exact_and_explicit_intervals():
    e = Estimate.exact(2.0, 1e-3, method="quadrature")
    assert e.ci == (1.999, 2.001) and e.se == 0.0 and e.n is None and e.contains(2.0005)
    c = Estimate.interval(0.5, 0.2, 0.9, n=10)
    assert c.ci == (0.2, 0.9) and not c.contains(0.95)
    with pytest.raises(ValueError, match="explicit interval"):
        c.at_level(0.99)
    with pytest.raises(ValueError, match="low must be <= high"):
        Estimate.interval(0.5, 0.9, 0.2)
    with pytest.raises(ValueError, match="error must be >= 0"):
        Estimate.exact(1.0, -1.0)
    with pytest.raises(ValueError, match="se must be >= 0"):
        Estimate(1.0, -0.1)


def test_loglog_line_returns_the_intercept_and_linear_fits_known_values():
    k = np.array([1.0, 10.0, 100.0])
    slope, intercept = fit_loglog_line(k, 2.0 * k**-0.5, 0.01 * np.ones(3))
    assert slope.mean == pytest.approx(-0.5, abs=1e-12) and intercept == pytest.approx(math.log(2.0), abs=1e-12)
    # y = 1 + 2x exactly: OLS slope 2 with zero standard error; weighted fit the same.
    x = np.array([0.0, 1.0, 2.0, 3.0])
    ols = linear_slope(x, 1 + 2 * x)
    assert ols.mean == pytest.approx(2.0) and ols.se == pytest.approx(0.0, abs=1e-12) and ols.dof == 2
    w = weighted_linear_fit(x, 1 + 2 * x, np.array([1.0, 1.0, 2.0, 2.0]))
    assert w.mean == pytest.approx(2.0, abs=1e-12)
    # its standard error is that of weighted least squares with known errors: sqrt([(X'WX)^-1]_11)
    X = np.column_stack([np.ones(4), x])
    W = np.diag(1 / np.array([1.0, 1.0, 4.0, 4.0]))
    assert w.se == pytest.approx(math.sqrt(np.linalg.inv(X.T @ W @ X)[1, 1]), rel=1e-12)


def test_richardson_removes_a_one_over_k_term():
    ks = [8, 16, 32]
    values = [3.0 + 5.0 / k for k in ks]
    est, err = richardson_limit(ks, values)
    assert est == pytest.approx(3.0, abs=1e-12) and err == pytest.approx(0.0, abs=1e-12)


def test_samples_are_kept_only_when_asked():
    assert Estimate.from_samples([1.0, 2.0]).samples == ()
    assert Estimate.from_samples([1.0, 2.0], keep=True).samples == (1.0, 2.0)
