"""Chapter 5 (c5_generalisation): the runners, ledger rules and constants of the page."""

import math

import pytest

from infonce_book.chapters import c5_generalisation as chapter
from infonce_book.models import VonMisesFisher
from infonce_book.theory.bounds import search_bias_constant


def test_search_constant_formula_and_validity_on_the_vmf_model():
    kappa, tau = 2.0, 0.5
    z = lambda b: math.sinh(b) / b  # noqa: E731  (Z_3)
    second = z(2 * kappa) / z(kappa) ** 2
    expected = 2 / tau * math.sqrt(second - 1) * math.sqrt(second) / (math.exp(-kappa) / z(kappa)) + math.exp(2 / tau)
    C = chapter.vmf_search_constant(VonMisesFisher(3, kappa), tau)
    assert C == pytest.approx(expected, rel=1e-10)
    # Corollary c5-cor-search-constant: |E H - L_k| <= C / k, checked with the exact curves
    model = VonMisesFisher(3, kappa)
    ks = [1, 4, 64, 1024]
    search = model.search_cross_entropy_curve(ks, tau)
    risk = [model.exact_centred_risk(k, tau) for k in ks]
    for k, h, r in zip(ks, search, risk):
        assert abs(h - r) <= C / k
    with pytest.raises(ValueError, match="m_min"):
        search_bias_constant(1.0, sd_m=1.0, second_moment_m=2.0, m_min=0.0)
