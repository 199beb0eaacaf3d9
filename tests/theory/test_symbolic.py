"""The sympy derivations of the C1 chapter, asserted (they are also displayed in the book)."""

import math

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from infonce_book.models import VonMisesFisher
from infonce_book.theory import bounds, symbolic
from infonce_book.theory.exact import exact_bias


def test_first_order_coefficients_are_the_closed_forms():
    for variant in ("standard", "decoupled"):
        c1, c2 = symbolic.bias_expansion(variant, order=2)
        assert sp.expand(c1 - symbolic.c1_formula(variant)) == 0
        assert sp.expand(c2 - symbolic.c2_formula(variant)) == 0


def test_decoupled_expansion_is_the_standard_one_without_the_positive():
    std = symbolic.bias_expansion("standard", order=3)
    dec = symbolic.bias_expansion("decoupled", order=3)
    zero_pos = {symbolic.u1: 0, symbolic.u2: 0, symbolic.u3: 0}
    for a, b in zip(std, dec):
        assert sp.expand(a.subs(zero_pos) - b) == 0


def test_expansion_matches_a_direct_computation_for_a_two_point_weight():
    # V takes values 1 +- d with probability 1/2 (v2 = d^2, v3 = 0, v4 = d^4); no positive.
    # For k = 1, E log V = (log(1+d) + log(1-d))/2 = -d^2/2 - d^4/4 - ...: the k-expansion at
    # k = 1 must reproduce the d-expansion through order d^4 (c1 + c2 + c3 at k = 1).
    d = sp.Symbol("d", positive=True)
    c1, c2, c3 = symbolic.bias_expansion("decoupled", order=3)
    subs = {symbolic.v2: d**2, symbolic.v3: 0, symbolic.v4: d**4}
    series_in_k = sp.expand((c1 + c2 + c3).subs(subs))
    direct = sp.series((sp.log(1 + d) + sp.log(1 - d)) / 2, d, 0, 5).removeO()
    # c1 + c2 + c3 carries every term up to d^4 except those of order k^-4 and beyond, which
    # start at d^8; terms d^6 of c3 are beyond the comparison.
    assert sp.expand(series_in_k - direct).coeff(d, 2) == 0
    assert sp.expand(series_in_k - direct).coeff(d, 4) == 0


def test_third_order_coefficient_matches_the_exact_quadrature():
    # k^2 (k bias - c1 - c2/k) -> c3; at k = 4096 the next term is O(1/k).
    m = VonMisesFisher(3, 4.0)
    c1, c2, c3 = m.bias_coefficients(0.5, order=3)
    k = 4096
    b = exact_bias(m, [k], 0.5)[0]
    assert k**2 * (k * b - c1 - c2 / k) == pytest.approx(c3, rel=1e-3)


def test_log_lower_bound_derivative_factorises():
    t, a = symbolic.t, symbolic.a
    assert sp.simplify(symbolic.log_lower_bound_derivative() - (t - 1) * (t - a) / (a * t)) == 0


@settings(max_examples=200, deadline=None)
@given(a=st.floats(1e-3, 1.0), x=st.floats(0.0, 50.0))
def test_log_lower_bound_holds_for_t_at_least_a(a, x):
    t = a + x
    assert math.log(t) >= (t - 1) - (t - 1) ** 2 / (2 * a) - 1e-12 * (1 + (t - 1) ** 2 / a)


def test_nonasymptotic_bounds_agree_with_the_library():
    lower, upper = symbolic.nonasymptotic_bias_bounds("standard")
    vals = {symbolic.u1: 2.7, symbolic.u2: 8.3, symbolic.v2: 1.07, symbolic.a: 0.07, symbolic.k: 10}
    lo, up = bounds.bias_bounds(10, u1=2.7, u2=8.3, v2=1.07, a=0.07)
    assert float(lower.subs(vals)) / 10 == pytest.approx(lo[0], rel=1e-14)
    assert float(upper.subs(vals)) / 10 >= up[0]  # log(1 + u1/k) <= u1/k


@pytest.mark.parametrize("tau", [0.1, 0.5, 1.0, 3.0, 20.0])
def test_uniform_constant_agrees_with_the_library(tau):
    expr = symbolic.uniform_bias_constant()
    assert float(expr.subs(symbolic.beta, 1 / tau)) == pytest.approx(bounds.uniform_bias_constant(tau), rel=1e-12)


def test_worst_case_of_the_uniform_constant():
    g, dg, g_max = symbolic.uniform_constant_worst_case()
    mu = sorted(g.free_symbols, key=str)[1]  # (beta, mu)
    assert sp.simplify(dg + 1 + (sp.exp(2 * symbolic.beta) - 1) / mu**2) == 0  # dg/dmu < 0
    assert sp.simplify(g_max - sp.exp(3 * symbolic.beta)) == 0


def test_vmf3_partition_and_c1_closed_form():
    assert sp.simplify(symbolic.vmf3_partition() - sp.sinh(symbolic.beta) / symbolic.beta) == 0
    c1, c2 = symbolic.vmf3_bias_coefficients()
    # DESIGN.md: c1 = 2.18000 at beta = 2, kappa = 4 (and the numeric model agrees).
    val = float(c1.subs({symbolic.beta: 2, symbolic.kappa: 4}))
    assert round(val, 5) == 2.18000
    assert val == pytest.approx(VonMisesFisher(3, 4.0).bias_coefficients(0.5)[0], rel=1e-13)
    assert float(c2.subs({symbolic.beta: 2, symbolic.kappa: 4})) == pytest.approx(
        VonMisesFisher(3, 4.0).bias_coefficients(0.5)[1], rel=1e-12)


def test_bias_expansion_rejects_bad_arguments():
    with pytest.raises(ValueError, match="variant"):
        symbolic.bias_expansion("symmetric")
    with pytest.raises(ValueError, match="order"):
        symbolic.bias_expansion("standard", order=4)
