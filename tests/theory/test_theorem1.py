"""Theorem 1 of the generalisation chapter, term by term: the loss range and the terms (book, Lemma
``c5-lem-range`` and Theorem ``c5-thm-main``)."""

import math

import pytest
import sympy as sp
import torch

from infonce_book.losses import info_nce_from_similarities
from infonce_book.theory import symbolic
from infonce_book.theory.bounds import loss_range, theorem1_terms


def test_loss_range_hand_values():
    beta = 2.0
    assert loss_range(3, 0.5) == pytest.approx(math.log((1 + 3 * math.exp(2 * beta)) / (1 + 3 * math.exp(-2 * beta))),
                                               rel=1e-14)
    assert loss_range(1, 1.0, variant="decoupled") == 4.0
    for k in (1, 10, 10**6, 10**15):
        assert loss_range(k, 0.5) < 4 * beta
    assert loss_range(10**15, 0.5) == pytest.approx(4 * beta, rel=1e-6)
    assert loss_range(10**6, 0.001) < 4000.0  # no overflow at a tiny temperature


@pytest.mark.parametrize("k, s0, sj", [(1, 1.0, -1.0), (1, -1.0, 1.0), (7, -1.0, 1.0), (7, 1.0, -1.0)])
def test_loss_range_is_attained(k, s0, sj):
    tau = 0.7
    val = float(info_nce_from_similarities(torch.tensor([s0], dtype=torch.float64),
                                           torch.full((1, k), sj, dtype=torch.float64), tau))
    lo, hi = math.log1p(k * math.exp(-2 / tau)), math.log1p(k * math.exp(2 / tau))
    assert val == pytest.approx(lo if s0 > sj else hi, rel=1e-12)
    assert hi - lo == pytest.approx(loss_range(k, tau), rel=1e-12)


def test_theorem1_terms_hand_values():
    t = theorem1_terms(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1, search_constant=20.0)
    B = loss_range(16, 1.0)
    assert t["empirical_risk"] == pytest.approx(3.0 - math.log(16), rel=1e-14)
    assert t["complexity"] == pytest.approx(0.2)
    assert t["confidence"] == pytest.approx(B * math.sqrt(math.log(20) / 2000), rel=1e-14)
    assert t["search_bias"] == pytest.approx(20.0 / 16)
    assert t["bound"] == pytest.approx(3.0 - math.log(16) + 0.2 + t["confidence"] + 1.25, rel=1e-14)
    assert t["bound_on"] == "E H(M_k, Q_k) - log k"
    no_search = theorem1_terms(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1)
    assert math.isnan(no_search["search_bias"]) and no_search["bound_on"] == "L_k - log k"
    assert no_search["bound"] == pytest.approx(t["bound"] - 1.25)


@pytest.mark.parametrize("bad, match", [(dict(delta=0.0), "delta"), (dict(delta=1.5), "delta"),
                                         (dict(rademacher=-1.0), "rademacher"), (dict(k=0), "k"),
                                         (dict(n=0), "n"), (dict(tau=0.0), "tau"),
                                         (dict(train_risk=float("nan")), "train_risk")])
def test_theorem1_terms_rejects_bad_input(bad, match):
    args = dict(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        theorem1_terms(**args)


def test_loss_range_width_symbolic():

    width, limit, dwidth = symbolic.loss_range_width()
    assert sp.simplify(limit - 4 * symbolic.beta) == 0
    f = sp.lambdify((symbolic.beta, symbolic.k), width)
    assert f(2.0, 3) == pytest.approx(loss_range(3, 0.5), rel=1e-12)
    g = sp.lambdify((symbolic.beta, symbolic.k), dwidth)
    assert all(g(b, kk) > 0 for b in (0.1, 1.0, 5.0) for kk in (1, 10, 1000))


def test_theorem1_terms_with_a_search_bias_value():
    t = theorem1_terms(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1, search_bias=0.3)
    assert t["search_bias"] == 0.3 and t["bound_on"] == "E H(M_k, Q_k) - log k"
    assert t["bound"] == pytest.approx(t["empirical_risk"] + 0.2 + t["confidence"] + 0.3, rel=1e-14)
    with pytest.raises(ValueError, match="not both"):
        theorem1_terms(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1, search_bias=0.3,
                       search_constant=2.0)
    with pytest.raises(ValueError, match="search_bias"):
        theorem1_terms(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1, search_bias=-0.1)
