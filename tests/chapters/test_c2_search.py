"""Chapter 2 (c2_search): the runners, ledger rules and constants of the page."""

import math

import numpy as np
import pandas as pd
import pytest

from infonce_book.chapters import c2_search as chapter
from infonce_book.experiment.ledger import Ledger
from infonce_book.models import FiniteModel, GaussianModel, VonMisesFisher


def test_top1_accuracy_of_the_ideal_search_on_s2():
    # k = 1: P(s+ > s) with s uniform: E[(1 + s+)/2] = (1 + A_3(kappa))/2.
    a3 = 1 / math.tanh(2.0) - 1 / 2.0
    assert chapter.runners._vmf3_top1_ideal(2.0, 1) == pytest.approx((1 + a3) / 2, rel=1e-10)


def test_bayes_enumeration_on_two_points_by_hand():
    # pi = (1/2, 1/2), M = [[3/4, 1/4], [1/4, 3/4]], k = 1: two candidates; the posterior picks the
    # candidate with the larger m, and the Bayes accuracy is E max_j P(J = j | x, c) computed by hand:
    # lists (x, x) and (y, y) give 1/2, lists (x, y), (y, x) give 3/4; each list type has probability 1/2.
    fm = FiniteModel([0.5, 0.5], [[0.75, 0.25], [0.25, 0.75]], [[1.0, 0.0], [0.0, 1.0]])
    r = chapter.bayes_enumeration(fm, 1)
    assert r["posterior_max_diff"] < 1e-15
    assert r["bayes_accuracy"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.75, rel=1e-14)
    assert r["ideal_accuracy"] == pytest.approx(r["bayes_accuracy"], rel=1e-14)


def test_gaussian_records_are_one_sided(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c2_search", "smoke", "cpu", 0)
    ks = np.array([1024, 2048, 4096])
    k_gap = np.array([-0.9, -0.95, 12.0])  # the last one exceeds the constant 11.8
    table = pd.DataFrame({"k": ks, "gap": k_gap / ks, "error": 0.0, "k_gap": k_gap, "k_error": 1e-7,
                          "d1": -0.93, "d1_check": -0.93, "model_constant": 11.8, "uniform_constant": 58.7,
                          "r_bar": 16 / 9, "em2_rel_err": 0.0, "k1_identity": 0.0})
    mc = pd.DataFrame({"k": [1024], "mean": [k_gap[0] / 1024], "se": [1e-5], "n_queries": [1000]})
    chapter.ledger_gaussian(led, chapter.SearchSetup(tau=0.5), GaussianModel(2, 0.5), table, mc)
    rec = led.by_id()
    assert rec["C2-gauss-bound-k1024"].passed and not rec["C2-gauss-bound-k4096"].passed
    assert rec["C2-gauss-uniform-holds"].passed and rec["C2-gauss-mc-k1024"].passed


def test_constant_records_hold_on_the_vmf_model(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c2_search", "smoke", "cpu", 0)
    vmf = VonMisesFisher(3, 4.0)
    setup = chapter.SearchSetup(tau=0.5)
    t = chapter.exact_curve.uncached(setup, vmf, [1, 16, 256])
    out = chapter.ledger_constants(led, setup, vmf, t)
    assert all(r.passed for r in led.records)
    # the floor-free constants of the chapter (mpmath values in tests/models/test_vmf_c1c3.py)
    assert out["const_model"] == pytest.approx(20.4447, abs=1e-3)
    assert out["const_uniform"] == pytest.approx(67.6089, abs=1e-3)


def test_the_opening_diagram_draws_two_probability_vectors_and_their_cross_entropy():
    import re

    kappa, tau = 4.0, 0.5
    fig = chapter.fig_idea(kappa=kappa, tau=tau, k=8)
    bars = fig.axes[1].containers
    ideal, soft = (np.array([b.get_height() for b in c]) for c in bars)
    assert ideal.sum() == pytest.approx(1) and soft.sum() == pytest.approx(1)
    # kappa = 4 > beta = 2: the idealised search is the sharper one on the nearest item.
    assert ideal[0] > soft[0] and np.all(np.diff(ideal) < 0)
    shown = float(re.search(r"= ([0-9.]+)\$ nats", fig.axes[1].get_title()).group(1))
    entropy = -(ideal * np.log(ideal)).sum()
    assert shown >= entropy - 0.005  # Gibbs' inequality: H(M, Q) >= H(M)
    assert shown == pytest.approx(-(ideal * np.log(soft)).sum(), abs=0.005)
    with pytest.raises(ValueError, match="kappa > 0"):
        chapter.fig_idea(kappa=0.0)
