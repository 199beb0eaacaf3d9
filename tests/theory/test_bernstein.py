"""Bernstein-type bounds (book, Lemma c5-lem-unexpected-bernstein, Theorem c5-thm-pac-bernstein)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infonce_book.theory.bernstein import (
    best_unexpected_bernstein,
    empirical_bernstein_upper,
    psi_tilde,
    quadratic_range,
    unexpected_bernstein_bound,
)


def test_psi_tilde_is_its_formula_and_its_series():
    # known values: (-log(1 - u) - u) / u^2 by hand; the series 1/2 + u/3 + u^2/4 near 0
    assert psi_tilde(0.5) == pytest.approx((math.log(2) - 0.5) / 0.25, rel=1e-15)
    assert psi_tilde(1e-4) == pytest.approx(0.5 + 1e-4 / 3 + 1e-8 / 4, rel=1e-12)
    assert psi_tilde(1e-3 * (1 - 1e-12)) == pytest.approx(psi_tilde(1e-3 * (1 + 1e-12)), rel=1e-10)  # the switch
    with pytest.raises(ValueError, match="u"):
        psi_tilde(1.0)


@settings(max_examples=200, deadline=None)
@given(p=st.floats(0.01, 0.99), low=st.floats(-20.0, 0.9), b=st.floats(0.1, 10.0), frac=st.floats(0.01, 0.99))
def test_the_unexpected_bernstein_mgf_is_at_most_one_for_any_two_point_law(p, low, b, frac):
    # X in {low, b} with P(X = b) = p, X <= b; eta = frac / b; the expectation computed exactly
    low = min(low, b - 1e-3)
    eta = frac / b
    mean = p * b + (1 - p) * low
    c = psi_tilde(eta * b) * eta**2
    mgf = p * math.exp(eta * (mean - b) - c * b * b) + (1 - p) * math.exp(eta * (mean - low) - c * low * low)
    assert mgf <= 1.0 + 1e-12


def test_the_bound_covers_the_mean_in_repeated_samples():
    # uniform on [-1, 2]: mean 0.5, X <= 2; at delta = 0.1 the bound may fail in at most ~10% of repeats
    rng = np.random.default_rng(0)
    fails = 0
    for _ in range(400):
        x = rng.uniform(-1.0, 2.0, 200)
        value, _ = best_unexpected_bernstein(float(x.mean()), float((x**2).mean()), b=2.0, n=200,
                                             complexity=math.log(16 / 0.1))
        fails += value < 0.5
    assert fails / 400 <= 0.1
    assert fails / 400 < 0.02  # in fact it is conservative


def test_the_bound_is_its_formula_and_refuses_eta_b_at_least_one():
    # mean + eta psi(eta b) E X^2 + C/(eta n) by hand
    value = unexpected_bernstein_bound(0.1, 0.5, b=2.0, n=100, complexity=3.0, eta=0.2)
    assert value == pytest.approx(0.1 + 0.2 * psi_tilde(0.4) * 0.5 + 3.0 / 20.0, rel=1e-15)
    with pytest.raises(ValueError, match="eta"):
        unexpected_bernstein_bound(0.1, 0.5, b=2.0, n=100, complexity=3.0, eta=0.5)
    with pytest.raises(ValueError, match="no eta"):
        best_unexpected_bernstein(0.1, 0.5, b=100.0, n=100, complexity=3.0, etas=(0.5, 1.0))


def test_empirical_bernstein_is_maurer_and_pontils_formula():
    # Maurer & Pontil (2009), Theorem 4, rescaled from [0, 1] to a range of width 3
    value = empirical_bernstein_upper(1.0, 0.25, 1000, value_range=3.0, delta=0.05)
    log_term = math.log(2 / 0.05)
    assert value == pytest.approx(1.0 + math.sqrt(2 * 0.25 * log_term / 1000) + 7 * 3 * log_term / (3 * 999), rel=1e-15)


def test_quadratic_range_finds_the_interior_minimum():
    # x + x^2 on [-2, 1]: minimum -1/4 at x = -1/2, maximum 2 at x = -2 and x = 1
    assert quadratic_range(-2.0, 1.0, 1.0) == (-0.25, 2.0)
    assert quadratic_range(0.0, 1.0, 0.0) == (0.0, 1.0)
