"""The dimension-free bound of Theorem c4-thm-dimension-free: closed form, limits, the steps of
its proof (gradient norm, optimal scalings) and its symbolic checks."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from infonce_book.theory import symbolic
from infonce_book.theory.bounds import max_negative_weight, similarity_contraction_bound


def test_bound_matches_hand_value():
    # tau = 1, k = 16: k p_max = 16 e^2 / (e^2 + 16) (hand value of part 2 of c4-prop-continuity)
    kp = 16 * math.exp(2) / (math.exp(2) + 16)
    expected = math.sqrt(2) * 1.0 * 0.25 * (1 + math.sqrt(kp)) / math.sqrt(128)
    assert similarity_contraction_bound(128, 16, 1.0, frobenius_radius=0.5) == pytest.approx(expected, rel=1e-14)


@given(st.integers(1, 10**6), st.floats(0.02, 20.0), st.floats(0.01, 1.0), st.integers(1, 10**6))
@settings(max_examples=60, deadline=None)
def test_bound_is_bounded_uniformly_in_k_and_scales_like_b_squared_over_root_n(k, tau, b, n):
    beta = 1 / tau
    value = similarity_contraction_bound(n, k, tau, frobenius_radius=b)
    cap = math.sqrt(2) * beta * b * b * (1 + min(math.sqrt(k), math.exp(beta))) / math.sqrt(n)
    assert value <= cap * (1 + 1e-12)
    assert similarity_contraction_bound(4 * n, k, tau, frobenius_radius=b) == pytest.approx(value / 2, rel=1e-12)


def test_decoupled_variant_uses_q_max():
    kq = 16 * max_negative_weight(16, 0.5, variant="decoupled")
    expected = math.sqrt(2) * 2.0 * (1 + math.sqrt(kq)) / math.sqrt(100)
    assert similarity_contraction_bound(100, 16, 0.5, frobenius_radius=1.0, variant="decoupled") == pytest.approx(
        expected, rel=1e-14)


@pytest.mark.parametrize("kwargs, word", [({"frobenius_radius": 1.5}, "frobenius_radius"),
                                          ({"frobenius_radius": 0.0}, "frobenius_radius"),
                                          ({"frobenius_radius": 1.0, "variant": "x"}, "variant")])
def test_bad_input_names_the_argument(kwargs, word):
    with pytest.raises(ValueError, match=word):
        similarity_contraction_bound(10, 4, 1.0, **kwargs)


@given(st.integers(1, 64), st.floats(0.05, 5.0), st.integers(0, 2**31 - 1), st.floats(0.1, 10.0),
       st.floats(0.1, 10.0))
@settings(max_examples=60, deadline=None)
def test_gradient_in_scaled_similarities_is_within_the_proofs_constant(k, tau, seed, a, c):
    # Any point of the box: the softmax weights p, and |grad_t g|^2 <= beta^2 (1/a^2 + p_max/c^2)
    beta = 1 / tau
    s = np.random.default_rng(seed).uniform(-1, 1, k + 1)
    p = softmax(beta * s)
    grad2 = beta**2 * ((1 - p[0]) ** 2 / a**2 + (p[1:] ** 2).sum() / c**2)
    assert grad2 <= beta**2 * (1 / a**2 + max_negative_weight(k, tau) / c**2) * (1 + 1e-12)
    # the optimal scalings give the smallest product (Cauchy-Schwarz)
    pm = max_negative_weight(k, tau)
    assert math.sqrt((1 / a**2 + pm / c**2) * (a**2 + k * c**2)) >= (1 + math.sqrt(k * pm)) * (1 - 1e-12)


def test_symbolic_steps_simplify_to_zero():
    assert symbolic.dimension_free_checks() == (0, 0, 0, 0, 0)
