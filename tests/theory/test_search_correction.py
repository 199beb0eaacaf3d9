"""The exact search correction and the sharp search bias (book, Proposition c5-prop-search-exact,
Corollary c5-cor-sharp-bias)."""

import itertools
import math

import numpy as np
import pytest

from infonce_book.chapters.c5_generalisation import vmf_ratio_moments
from infonce_book.models import VonMisesFisher
from infonce_book.theory.bounds import search_bias_bounds
from infonce_book.theory.search_correction import ideal_search_excess, search_correction, sharp_search_bias


def _enumerated_weights(m, p, k):
    # w_k(v) = k v E[1 / (v + m_2 + ... + m_k)], the expectation by enumerating the k - 1 other draws
    out = []
    for v in m:
        total = 0.0
        for rest in itertools.product(range(len(m)), repeat=k - 1):
            total += np.prod([p[i] for i in rest]) / (v + sum(m[i] for i in rest))
        out.append(k * v * total)
    return np.array(out)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_the_mean_ideal_search_weights_match_enumeration(k):
    p = np.array([0.2, 0.5, 0.3])
    m = np.array([0.3, 0.8, 1.9])
    m = m / (p @ m)
    excess, err = ideal_search_excess(m, p, [k])
    assert excess[0] + m == pytest.approx(_enumerated_weights(m, p, k), abs=1e-10)
    assert abs(p @ excess[0]) < 1e-12 and err < 1e-9  # the mean ideal search is a probability law


def test_the_correction_of_the_vmf_identity_closes_the_exact_search_cross_entropy():
    # E H - log k = (L_k^dec - log k) + beta E_pi[s (m - w_k)]: three independent exact computations
    model, tau = VonMisesFisher(3, 2.0), 0.5
    for k in (4, 16, 64):
        lhs = model.search_cross_entropy(k, tau).mean
        rhs = model.exact_centred_risk(k, tau, variant="decoupled") + model.search_correction(lambda t: t, [k], tau)[0]
        assert lhs == pytest.approx(rhs, abs=1e-9)


def test_the_sharp_bias_is_attained_by_the_sign_and_below_the_moment_bounds():
    model, tau = VonMisesFisher(3, 2.0), 0.5
    t, m, p = model.density_ratio_law()
    moments = vmf_ratio_moments(model)  # every moment form of Proposition c5-prop-search-bias
    for k in (1, 4, 16, 256):
        b_star = model.sharp_search_bias([k], tau)[0]
        excess, _ = ideal_search_excess(m, p, [k])
        attained = search_correction(m, np.sign(-excess[0]), p, [k], tau)[0]
        assert attained == pytest.approx(b_star, rel=1e-12)
        assert search_correction(m, np.tanh(3 * t), p, [k], tau)[0] < b_star  # any other similarity does worse
        assert b_star <= search_bias_bounds(k, tau, **moments)["best"] + 1e-12 and b_star <= 2 / tau


def test_k_times_the_sharp_bias_tends_to_the_mean_absolute_deviation_of_m_under_m():
    # k b*_k -> beta E_M|m - E_M m| = beta E_pi[m |m - E_pi m^2|]
    model, tau = VonMisesFisher(3, 2.0), 0.5
    _, m, p = model.density_ratio_law(2048)
    limit = (1 / tau) * float(p @ (m * np.abs(m - p @ m**2)))
    values = [k * model.sharp_search_bias([k], tau, n_nodes=2048)[0] for k in (256, 1024, 4096)]
    errors = [abs(v - limit) for v in values]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-3 * limit


def test_a_two_valued_ratio_at_k_1_gives_the_closed_form():
    # k = 1: w_1 = 1, so b*_1 = beta E|m - 1| and the correction of s is beta E[s (m - 1)]
    m, p = np.array([0.5, 1.5]), np.array([0.5, 0.5])
    assert sharp_search_bias(m, p, [1], 2.0)[0] == pytest.approx(0.25, rel=1e-12)
    assert search_correction(m, np.array([1.0, -1.0]), p, [1], 1.0)[0] == pytest.approx(-0.5, rel=1e-12)
    with pytest.raises(ValueError, match="mean 1"):
        sharp_search_bias(np.array([1.0, 2.0]), p, [1], 1.0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        search_correction(m, np.array([2.0, 0.0]), p, [1], 1.0)
    assert math.isfinite(ideal_search_excess(m, p, [1, 2, 3])[1])
