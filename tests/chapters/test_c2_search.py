"""Chapter 2 (c2_search): the runners, ledger rules and constants of the page."""

import math

import pytest

from infonce_book.chapters import c2_search as chapter


def test_top1_accuracy_of_the_ideal_search_on_s2():
    # k = 1: P(s+ > s) with s uniform: E[(1 + s+)/2] = (1 + A_3(kappa))/2.
    a3 = 1 / math.tanh(2.0) - 1 / 2.0
    assert chapter._vmf3_top1_ideal(2.0, 1) == pytest.approx((1 + a3) / 2, rel=1e-10)
