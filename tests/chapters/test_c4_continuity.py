"""Chapter 4 (c4_continuity): the predictions and runners of the page."""

import math

import pytest

from infonce_book.chapters import c4_continuity as chapter
from infonce_book.models import GaussianModel, StudentTModel


def test_expected_norms_match_closed_forms():
    chi8_mean = math.sqrt(2) * math.gamma(4.5) / math.gamma(4)
    assert chapter.expected_max_norm(GaussianModel(8, 0.8), 1) == pytest.approx(chi8_mean, rel=1e-9)
    nu = 4.0
    t_mean = chi8_mean * math.sqrt(nu / 2) * math.gamma((nu - 1) / 2) / math.gamma(nu / 2)
    assert chapter.expected_max_norm(StudentTModel(8, 4.0, 0.8), 1) == pytest.approx(t_mean, rel=1e-7)
    # E max of 2 = 2 E X - E min, and E max > E X; monotone in k
    e = [chapter.expected_max_norm(GaussianModel(8, 0.8), k) for k in (1, 2, 10, 1000)]
    assert all(a < b for a, b in zip(e, e[1:]))


def test_sparse_ratio_limit_hand_value():
    beta, eps = 2.0, 1e-3
    expected = math.exp(beta) * math.sinh(beta) / beta * beta * eps / (1 - math.exp(-beta * eps))
    assert chapter.sparse_average_ratio_limit(0.5, eps) == pytest.approx(expected, rel=1e-14)
