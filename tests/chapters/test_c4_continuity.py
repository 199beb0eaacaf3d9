"""Chapter 4 (c4_continuity): the predictions, runners and ledger rules of the page."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from infonce_book.chapters import c4_continuity as chapter
from infonce_book.experiment.ledger import Ledger
from infonce_book.models import GaussianModel, StudentTModel, VonMisesFisher
from infonce_book.theory.bounds import max_negative_weight


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


def test_complexity_table_closed_forms():
    setup = chapter.ContinuitySetup(table_taus=(0.5, 1.0), table_ks=(4, 16, 256), table_n=2048, sphere_radius=0.5)
    table = chapter.complexity_table(setup, dim=3)
    for _, r in table.iterrows():
        beta, k = 1 / r.tau, int(r.k)
        kp = k * math.exp(2 * beta) / (math.exp(2 * beta) + k)
        omega = min(1.0, kp)
        assert r.lambda_star == pytest.approx(4 * beta * 2.0 * omega, rel=1e-14)  # L = 2 for r = 1/2
        assert r.lambda_avg == pytest.approx(beta * 4 + beta * math.exp(2 * beta) * k / (k + 1) * 4, rel=1e-13)
        assert r.vector == pytest.approx(math.sqrt(2) * beta * (3 + math.sqrt(kp)) * 1.0 * math.sqrt(3 / 2048),
                                         rel=1e-13)
        assert r.vector_factor == pytest.approx(3 + math.sqrt(kp), rel=1e-14) and r.vector_factor < 3 + math.exp(beta)
        assert r.covering_star / r.covering_avg == pytest.approx(r.lambda_star / r.lambda_avg, rel=1e-12)
    glued = chapter.complexity_glue(table)
    assert glued["ratio_tau0p5_k16"] == pytest.approx(
        float(table.covering_avg[1] / min(table.covering_star[1], table.vector[1])), rel=1e-14)


def test_embedding_segments_hold_and_attain_the_weight_bound():
    table = chapter.embedding_segments.uncached(setup=chapter.ContinuitySetup(segment_dim=3), ks=[1, 3, 40],
                                                betas=[0.3, 2.0], n_pairs=300, seed=1)
    assert len(table) == 2 * 3 + 2 * 2  # the decoupled variant skips k = 1
    assert (table.worst <= 1.0).all()
    assert np.allclose(table.weight_ratio, 1.0, atol=1e-12)
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    out = chapter.ledger_segments(ledger, table)
    assert all(r.passed for r in ledger.records) and out["segments_pairs"] == 300 * len(table)
    bad = table.assign(worst=table.worst.where(table.variant != "standard", 1.5))
    ledger2 = Ledger(chapter="test2", profile="smoke", device="cpu", seed=0)
    chapter.ledger_segments(ledger2, bad)
    assert not ledger2.by_id()["C4-embedding-holds-standard"].passed


def test_exercise_numbers_and_radius_glue():
    nums = chapter.exercise_numbers(chapter.ContinuitySetup(tau=1.0, exercise_k=16, tau_scalings=0.5),
                                    GaussianModel(8, 0.8))
    kp = 16 * max_negative_weight(16, 0.5)
    assert nums["scaling_ratio"] == pytest.approx(math.sqrt(3 * (5 + kp)) / (3 + math.sqrt(kp)), rel=1e-14)
    assert nums["dv_bound"] == pytest.approx(chapter.expected_max_norm(GaussianModel(8, 0.8), 1) + 2.0, rel=1e-12)
    glued = chapter.radius_glue(pd.DataFrame({"radius": [0.1, 0.2], "ratio": [1.0, 1.1]}))
    assert glued["spread"] == pytest.approx(1.1) and "r = 0.2" in glued["ratios"]


def test_the_opening_diagram_shows_the_average_form_below_the_max_form_for_one_moving_negative():
    import matplotlib.pyplot as plt

    fig = chapter.fig_idea(k=12, beta=1.0, eps=0.05)
    bars = fig.axes[1].patches  # actual, average, max; each for (sparse, dense)
    actual, average, maximum = ([bars[2 * i].get_height(), bars[2 * i + 1].get_height()] for i in range(3))
    assert actual[0] < average[0] < maximum[0]  # one negative moves: the average form is the tighter
    assert actual[1] <= maximum[1] < average[1]  # every similarity moves: the max form is
    plt.close(fig)
    for bad in ({"k": 1}, {"beta": 0.0}, {"eps": 0.0}, {"eps": 0.6}):
        with pytest.raises(ValueError, match="k must|beta must|eps must"):
            chapter.fig_idea(**bad)


_LAWS = {"gaussian": GaussianModel(8, 0.8), "student_t": StudentTModel(8, 4.0, 0.8),
         "vmf": VonMisesFisher(dim=3, kappa=4.0)}


def test_temperature_constants_on_the_sphere_and_at_low_temperature():
    setup = chapter.ContinuitySetup()
    gen = torch.Generator().manual_seed(0)
    data = tuple(_LAWS["vmf"].sample_tuples(50, 16, generator=gen))
    # sphere, L = 1/(1 - r) = 2, omega_k = 1: Lambda_star = beta (3 L + min(L, p_max k L)) = 8 beta
    for tau in (1.0, 0.1):
        c = chapter.temperature_constants(setup, _LAWS["vmf"], tau, 16, 128, data)
        assert c["lambda_star"] == pytest.approx(8.0 / tau, rel=1e-12) and c["neg_star"] == pytest.approx(2.0)
        assert c["complexity"] == min(c["covering"], c["vector"])
    data = tuple(_LAWS["student_t"].sample_tuples(50, 16, generator=gen))
    c = chapter.temperature_constants(setup, _LAWS["student_t"], 0.05, 16, 128, data)
    assert c["neg_star"] == pytest.approx(float(data[2].norm(dim=-1).max(dim=1).values.mean()), rel=1e-12)


def test_temperature_sweep_and_its_records():
    table = chapter.temperature_sweep.uncached(
        setup=chapter.ContinuitySetup(), side=chapter.SideClaimsSetup(), models=_LAWS, taus=[1.0, 0.1],
        k=4, n=16, n_test=64, n_seeds=2, steps=3, n_lip=40, device="cpu", seed=0)
    assert len(table) == 3 * 2 * 2 and np.isfinite(table.gap).all()
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    out = chapter.ledger_temperature(ledger, table, _LAWS, k=4)
    ids = {r.alias for r in ledger.records}
    assert {"C5-temperature-tails", "C5-temperature-gap-grows-vmf", "C5-temperature-negatives-max-gaussian",
            "C5-temperature-gap-bound-student_t-tau0.1"} <= ids
    assert out["tau_low"] == 0.1 and out["tau_high"] == 1.0
    # a gap that falls as tau falls fails the growth record
    falling = table.assign(gap=np.where(table.tau == 0.1, -1.0, 1.0) + 0.01 * table.seed_index)
    ledger2 = Ledger(chapter="test2", profile="smoke", device="cpu", seed=0)
    chapter.ledger_temperature(ledger2, falling, _LAWS, k=4)
    assert not ledger2.by_id()["C5-temperature-gap-grows-gaussian"].passed


def test_dimension_sweep_and_its_records():
    side = chapter.SideClaimsSetup()
    table = chapter.dimension_sweep.uncached(side=side, sphere_model=_LAWS["vmf"], dims=[2, 4, 8], n=16, k=3,
                                             n_sigma=2, rad_steps=3, n_seeds=2, steps=3, n_test=64, tau=1.0,
                                             device="cpu", seed=0)
    assert list(table.cls) == ["frobenius", "normalised"] * 3
    assert (table.ci_high[table.cls == "frobenius"] <= table.bound[table.cls == "frobenius"]).all()
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    out = chapter.ledger_dimension(ledger, side, table, tau=1.0)
    recs = ledger.by_id()
    assert recs["C5-dimension-free-below-bound"].passed and out["margin_slope"] == side.margin_slope
    # a complexity that grows like d (slope 1) fails "does not grow with d"
    grows = table.assign(value=table.dim * 0.01, se=1e-4)
    ledger2 = Ledger(chapter="test2", profile="smoke", device="cpu", seed=0)
    chapter.ledger_dimension(ledger2, side, grows, tau=1.0)
    recs2 = ledger2.by_id()
    assert not recs2["C5-dimension-free-slope"].passed and not recs2["C5-dimension-unconstrained-slope"].passed
