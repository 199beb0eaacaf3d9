"""The PAC-Bayes pieces (book, Theorem ``c5-thm-pac-bayes``): the Bernoulli kl and its inverse
against an independent root finder, xi(n) against exact rational arithmetic, the Gaussian KL
against quadrature, and the certificate's coverage on a toy problem where the risk is known."""

import doctest
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from infonce_book.theory import pacbayes
from infonce_book.theory.pacbayes import (
    gaussian_kl_isotropic,
    kl_bernoulli,
    kl_inverse_upper,
    log_xi,
    pac_bayes_kl_certificate,
)


def test_docstring_examples():
    assert doctest.testmod(pacbayes).failed == 0


def test_kl_bernoulli_hand_values():
    assert kl_bernoulli(0.5, 0.5) == 0.0
    assert kl_bernoulli(0.5, 0.25) == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(0.5 / 0.75), rel=1e-15)
    assert kl_bernoulli(0.0, 0.3) == pytest.approx(-math.log(0.7), rel=1e-15)
    assert kl_bernoulli(1.0, 0.3) == pytest.approx(-math.log(0.3), rel=1e-15)
    assert kl_bernoulli(0.2, 1.0) == math.inf and kl_bernoulli(0.2, 0.0) == math.inf


@settings(max_examples=200, deadline=None)
@given(q=st.one_of(st.just(0.0), st.floats(0.0, 1.0), st.floats(1e-9, 1e-3), st.floats(0.999, 1.0)),
       c=st.one_of(st.just(0.0), st.floats(0.0, 1e-4), st.floats(0.0, 1.0), st.floats(0.0, 20.0)))
def test_kl_inverse_agrees_with_brentq_and_is_the_largest_p_with_kl_at_most_c(q, c):
    p = kl_inverse_upper(q, c)
    assert q <= p <= 1.0
    if p < 1.0:
        # the upper end of the final bracket: kl(q || p) >= c, and just below p the constraint holds
        assert kl_bernoulli(q, p) >= c - 1e-12
        assert kl_bernoulli(q, max(q, p - 2e-12)) <= c + 1e-12
    if 0.0 < q < 1.0 and c > 0.0 and kl_bernoulli(q, 1 - 1e-15) > c:
        ref = optimize.brentq(lambda x: kl_bernoulli(q, x) - c, q, 1 - 1e-15, xtol=1e-15, rtol=1e-15)
        assert p == pytest.approx(ref, abs=1e-10)


@settings(max_examples=50, deadline=None)
@given(q1=st.floats(0.0, 1.0), q2=st.floats(0.0, 1.0), c1=st.floats(0.0, 3.0), c2=st.floats(0.0, 3.0))
def test_kl_inverse_is_increasing_in_both_arguments(q1, q2, c1, c2):
    (qa, qb), (ca, cb) = sorted((q1, q2)), sorted((c1, c2))
    assert kl_inverse_upper(qa, ca) <= kl_inverse_upper(qb, ca) + 1e-11
    assert kl_inverse_upper(qa, ca) <= kl_inverse_upper(qa, cb) + 1e-11


def test_kl_inverse_edge_cases():
    assert kl_inverse_upper(0.0, 0.0) == 0.0
    assert kl_inverse_upper(1.0, 0.3) == 1.0
    assert 1 - 1e-12 < kl_inverse_upper(0.5, 50.0) <= 1.0
    assert kl_inverse_upper(0.0, math.log(2)) == pytest.approx(0.5, abs=1e-11)  # kl(0 || p) = -log(1 - p)
    with pytest.raises(ValueError, match="q"):
        kl_inverse_upper(1.5, 0.1)
    with pytest.raises(ValueError, match="c"):
        kl_inverse_upper(0.5, -0.1)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 60])
def test_xi_against_exact_rational_arithmetic(n):
    exact = sum(math.comb(n, j) * Fraction(j, n) ** j * Fraction(n - j, n) ** (n - j) for j in range(n + 1))
    assert log_xi(n) == pytest.approx(math.log(exact), rel=1e-12)


def test_xi_lies_between_sqrt_n_and_2_sqrt_n():
    for n in list(range(1, 120)) + [256, 2048, 65536]:
        assert 0.5 * math.log(n) - 1e-12 <= log_xi(n) <= math.log(2 * math.sqrt(n)) + 1e-12


def test_gaussian_kl_against_quadrature_in_one_dimension():
    for mq, mp, sq, sp_ in ((0.3, -0.2, 0.5, 1.3), (0.0, 0.0, 0.05, 0.1), (1.0, 0.0, 2.0, 1.0)):
        q, p = stats.norm(mq, sq), stats.norm(mp, sp_)
        ref, _ = integrate.quad(lambda x: q.pdf(x) * (q.logpdf(x) - p.logpdf(x)), mq - 40 * sq, mq + 40 * sq,
                                epsabs=1e-13, limit=200)
        assert gaussian_kl_isotropic([mq], [mp], sq, sp_) == pytest.approx(ref, rel=1e-8, abs=1e-12)
    # independent coordinates add up
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=9), rng.normal(size=9)
    total = sum(gaussian_kl_isotropic([x], [y], 0.3, 0.7) for x, y in zip(a, b))
    assert gaussian_kl_isotropic(a, b, 0.3, 0.7) == pytest.approx(total, rel=1e-13)


def test_certificate_hand_value():
    cert = pac_bayes_kl_certificate(0.2, 10_000, 1.5, 2048, delta=0.04, delta_mc=0.01, n_priors=16)
    emp = kl_inverse_upper(0.2, math.log(100) / 10_000)
    rhs = (1.5 + log_xi(2048) + math.log(16 / 0.04)) / 2048
    assert cert["empirical_upper"] == emp and cert["rhs"] == pytest.approx(rhs, rel=1e-15)
    assert cert["risk_upper"] == kl_inverse_upper(emp, rhs)
    with pytest.raises(ValueError, match="delta"):
        pac_bayes_kl_certificate(0.2, 100, 1.0, 10, delta=1.0, delta_mc=0.01)
    with pytest.raises(ValueError, match="mc_mean"):
        pac_bayes_kl_certificate(1.2, 100, 1.0, 10, delta=0.1, delta_mc=0.01)


def test_certificate_covers_the_true_risk_on_a_toy_problem():
    """Bernoulli losses with a known risk curve r(theta); prior N(0, 1), posterior N(theta_hat, s^2)
    around the empirical minimiser, s from a grid (free), Monte Carlo with fresh draws. The
    certificate must fail in at most delta + delta_mc of the repetitions (it is conservative)."""
    rng = np.random.default_rng(0)

    def risk(theta):
        return 0.2 + 0.6 / (1 + np.exp(-3 * (theta - 0.3)))

    n, reps, misses = 200, 200, 0
    thetas = np.linspace(-3, 3, 61)
    for _ in range(reps):
        u = rng.uniform(size=n)  # loss_i(theta) = 1{u_i < r(theta)}
        th = float(thetas[int(np.argmin([(u < risk(t)).mean() for t in thetas]))])
        best = None
        for s in (0.1, 0.3, 1.0):  # chosen on a pilot, then certified on fresh draws
            pilot = float(np.mean([(u < risk(t)).mean() for t in th + s * rng.normal(size=30)]))
            kl = gaussian_kl_isotropic([th], [0.0], s, 1.0)
            guess = kl_inverse_upper(pilot, (kl + log_xi(n) + math.log(1 / 0.04)) / n)
            if best is None or guess < best[0]:
                best = (guess, s, kl)
        _, s, kl = best
        draws = th + s * rng.normal(size=400)
        idx = rng.integers(0, n, 400)
        mc = float(np.mean(u[idx] < risk(draws)))
        cert = pac_bayes_kl_certificate(mc, 400, kl, n, delta=0.04, delta_mc=0.01)
        true_q = float(np.mean(risk(th + s * rng.normal(size=20000))))
        misses += true_q > cert["risk_upper"]
    assert misses / reps <= 0.05
