"""The one uncertainty type and the small statistics (``infonce_book.theory.stats``)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from infonce_book.theory.stats import (
    Estimate,
    bootstrap_mean,
    coverage_interval,
    equivalence_test,
    fit_loglog_line,
    fit_loglog_slope,
    linear_slope,
    normal_quantile,
    richardson_limit,
    seeds_needed,
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


# --- equivalence (two one-sided tests) and the bootstrap ---------------------------------------


def test_equivalence_test_known_values_normal_and_t():
    # N(0, 1) estimate, margin 2: each one-sided p-value is Phi(-2) = 0.022750131948179195
    # (tables); the 90% interval is -+1.6448536269514722, inside (-2, 2).
    v = equivalence_test(Estimate(0.0, 1.0), 2.0)
    assert v.equivalent and v.p_value == pytest.approx(0.022750131948179195, rel=1e-12)
    assert (v.low, v.high) == pytest.approx((-1.6448536269514722, 1.6448536269514722), rel=1e-12)
    # margin exactly z_0.95: p = 0.05, not below alpha: not shown equivalent.
    v = equivalence_test(Estimate(0.0, 1.0), 1.6448536269514722)
    assert not v.equivalent and v.p_value == pytest.approx(0.05, rel=1e-9)
    # t with 7 dof: t_{0.95, 7} = 1.894578605090007 (tables); mean 0.01, se 0.004, margin 0.02:
    # upper end 0.01 + 1.8946 * 0.004 = 0.017578 < 0.02.
    v = equivalence_test(Estimate(0.01, 0.004, 8, dof=7), 0.02)
    assert v.equivalent and v.high == pytest.approx(0.01 + 1.894578605090007 * 0.004, rel=1e-12)
    assert v.verdict == "equivalent"


def test_an_interval_containing_zero_is_not_evidence_of_equivalence():
    wide = Estimate(0.0, 0.05, 3, dof=2)  # contains 0, but its 90% interval is -+0.146
    v = equivalence_test(wide, 0.02)
    assert wide.contains(0.0) and not v.equivalent and v.verdict == "not shown equivalent"


@settings(max_examples=60, deadline=None)
@given(mean=st.floats(-1, 1), se=st.floats(1e-3, 1), margin=st.floats(1e-3, 2), dof=st.integers(1, 50))
def test_tost_rejects_both_nulls_exactly_when_the_90_interval_is_inside_the_margin(mean, se, margin, dof):
    v = equivalence_test(Estimate(mean, se, dof + 1, dof=dof), margin)
    lo, hi = Estimate(mean, se, dof + 1, 0.9, dof=dof).ci
    assert v.equivalent == (-margin < lo and hi < margin)
    if abs(v.p_value - 0.05) > 1e-9:
        assert v.equivalent == (v.p_value < 0.05)


def test_equivalence_test_with_an_explicit_interval_and_bad_input():
    boot = Estimate.interval(0.0, -0.01, 0.012, level=0.9)
    assert equivalence_test(boot, 0.02).equivalent and equivalence_test(boot, 0.02).p_value is None
    assert not equivalence_test(boot, 0.011).equivalent
    with pytest.raises(ValueError, match="level 0.9"):
        equivalence_test(Estimate.interval(0.0, -0.01, 0.01, level=0.95), 0.02)
    with pytest.raises(ValueError, match="margin"):
        equivalence_test(Estimate(0.0, 1.0), 0.0)
    with pytest.raises(ValueError, match="alpha"):
        equivalence_test(Estimate(0.0, 1.0), 1.0, alpha=0.5)
    with pytest.raises(ValueError, match="no uncertainty"):
        equivalence_test(Estimate(0.0, 0.0), 1.0)


def test_seeds_needed_by_hand_from_the_t_quantiles():
    # The smallest n with |mean| + t_{1-alpha, n-1} sd / sqrt(n) < margin, worked by hand with
    # quantiles from tables (not from the package).
    # (a) mean 0, sd 0.05, margin 0.02, alpha 0.05: t/sqrt(n) must fall below 0.4.
    #     n = 18: t_{0.95,17} = 1.7396 -> 1.7396 / 4.2426 = 0.4100 > 0.4;
    #     n = 19: t_{0.95,18} = 1.7341 -> 1.7341 / 4.3589 = 0.3978 < 0.4: 19 seeds.
    d = np.array([-0.05, 0.0, 0.05])  # mean 0, sd 0.05
    assert seeds_needed(d, 0.02) == 19.0
    # (b) mean 0.01, sd 0.01, margin 0.02, alpha 0.025 (a 95% interval):
    #     n = 6: 0.01 + 2.5706 * 0.01 / 2.4495 = 0.02049 > 0.02; n = 7: 0.01 + 2.4469 * 0.01 / 2.6458
    #     = 0.01925 < 0.02: 7 seeds (5 at alpha 0.05, one level looser).
    d = np.array([0.0, 0.01, 0.02])
    assert seeds_needed(d, 0.02, alpha=0.025) == 7.0 and seeds_needed(d, 0.02) == 5.0
    # the sign of the mean does not matter; a mean at or beyond the margin needs infinitely many
    assert seeds_needed(-d, 0.02, alpha=0.025) == 7.0
    assert seeds_needed(d, 0.01) == math.inf and seeds_needed(d, 0.02, n_max=4) == math.inf
    with pytest.raises(ValueError, match="at least 2"):
        seeds_needed([0.01], 0.02)
    with pytest.raises(ValueError, match="margin"):
        seeds_needed(d, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        seeds_needed(d, 0.02, alpha=0.5)


def test_bootstrap_se_matches_the_normal_theory_value():
    # i.i.d. N(0, 1) samples: the bootstrap sd of the mean is close to sd / sqrt(n).
    x = np.random.default_rng(1).standard_normal(400)
    e = bootstrap_mean(x, n_boot=4000, seed=2)
    assert e.mean == pytest.approx(x.mean(), abs=1e-15)
    assert e.se == pytest.approx(x.std(ddof=1) / 20.0, rel=0.1)
    assert e.ci_low < x.mean() < e.ci_high and e.n == 400


def test_bootstrap_keeps_groups_together():
    # Each of 200 values repeated 10 times as one group: the same uncertainty as the 200 values
    # alone; treated as 2000 independent values the se would shrink by sqrt(10).
    x = np.random.default_rng(3).standard_normal(200)
    rep, groups = np.repeat(x, 10), np.repeat(np.arange(200), 10)
    grouped = bootstrap_mean(rep, groups, n_boot=4000, seed=4)
    naive = bootstrap_mean(rep, n_boot=4000, seed=4)
    assert grouped.se == pytest.approx(x.std(ddof=1) / math.sqrt(200), rel=0.1)
    assert naive.se == pytest.approx(grouped.se / math.sqrt(10), rel=0.15)
    assert grouped.n == 200
    with pytest.raises(ValueError, match="2 groups"):
        bootstrap_mean([1.0, 2.0], [0, 0])
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_mean([1.0, float("nan")])
