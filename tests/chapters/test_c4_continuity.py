"""Chapter 4 (c4_continuity): the predictions, runners and ledger rules of the page."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import special, stats

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


# The replications of the side claims: the design (pilots, power, kappa_d) and the records.

def test_aligned_concentration_holds_the_mean_cosine_fixed():
    a = chapter.alignment(2, 4.0)
    assert a == pytest.approx(special.iv(1, 4.0) / special.iv(0, 4.0), rel=1e-12)  # A_2 = I_1/I_0
    for d in (3, 8, 32, 128):
        kappa = chapter.aligned_concentration(d, a)
        # A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa), scaled Bessel functions (float64 reference)
        ratio = special.ive(d / 2, kappa) / special.ive(d / 2 - 1, kappa)
        assert ratio == pytest.approx(a, rel=1e-9)
    # on S^2, A_3(kappa) = coth(kappa) - 1/kappa in closed form
    kappa3 = chapter.aligned_concentration(3, 0.5)
    assert 1 / math.tanh(kappa3) - 1 / kappa3 == pytest.approx(0.5, rel=1e-10)
    with pytest.raises(ValueError, match="alignment"):
        chapter.aligned_concentration(8, 1.0)


def test_seeds_for_power_meets_its_power_and_no_fewer_do():
    sd, dist = 0.0236, 0.023
    s = chapter.seeds_for_power(sd, dist, power=0.9)
    q = lambda n: (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.9, n - 1)) * sd / math.sqrt(n)  # noqa: E731
    assert q(s) <= dist < q(s - 1)
    # the normal approximation (z_0.975 + z_0.9)^2 (sd/dist)^2 is a lower bound
    assert s >= ((1.959964 + 1.281552) * sd / dist) ** 2
    assert chapter.seeds_for_power(sd, dist, tests=3) > s  # Bonferroni asks for more
    with pytest.raises(ValueError, match="power"):
        chapter.seeds_for_power(1.0, 1.0, power=1.0)


def test_pilot_standard_errors_come_from_their_intervals():
    p = chapter.PILOTS["tails"]
    assert p.se == pytest.approx((0.040 - 0.023) / (2 * stats.t.ppf(0.975, 31)))
    design = chapter.replication_design(0.02, n_dims=4)
    assert design["dim_tests"] == 3 and design["hump_seeds"] > design["dim_seeds"] >= 3


def _dim_table(diffs, seeds=10, noise=0.001):
    rng = np.random.default_rng(0)
    rows = []
    for d, mean in diffs.items():
        for s in range(seeds):
            rows.append({"dim": d, "kappa": 1.0, "alignment": 0.86, "seed_index": s,
                         "gap": 0.01 + mean + noise * rng.standard_normal()})
    return pd.DataFrame(rows)


def test_dimension_replication_tests_every_d_against_the_margin(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    side = chapter.SideClaimsSetup()
    led = Ledger("c4_continuity", "smoke", "cpu", 0)
    out = chapter.ledger_dimension_replication(led, side, _dim_table({2: 0.0, 8: 0.001, 32: 0.05, 128: 0.0}),
                                               1.0, {})
    rec = led.by_id()
    assert rec["C5-dimension-free-gap-flat-d8-replication"].passed
    assert rec["C5-dimension-free-gap-flat-d128-replication"].passed
    assert rec["C5-dimension-free-gap-flat-d32-replication"].verdict == "failed"  # the hump crosses the margin
    assert rec["4.C5-dimension-free-gap-flat-d32-replication"].level == pytest.approx(1 - 0.05 / 3)
    assert out["rep_dim_passed"] == 2 and out["rep_dim_word"] == "not every"
    table = chapter.replication_table(_dim_table({2: 0.0, 8: 0.001, 32: 0.05, 128: 0.0}))
    assert table["diff"].iloc[2] == pytest.approx(rec["C5-dimension-free-gap-flat-d32-replication"].measured)


def test_temperature_replication_separates_a_level_from_an_interaction(tmp_path, monkeypatch):
    """Gaps with a constant factor 1.5 between the laws: the level test passes (the heavy rise is
    larger), the interaction (change of the log-ratio) is 0 and fails its one-sided test."""
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    rng = np.random.default_rng(1)
    base = {1.0: 0.001, 0.1: 0.02, 0.05: 0.05}
    rows = []
    for name, factor in (("gaussian", 1.0), ("student_t", 1.5)):
        for tau, g in base.items():
            for s in range(20):
                rows.append({"data": name, "tau": tau, "seed_index": s, "vector": factor,
                             "gap": factor * g * (1 + 0.05 * rng.standard_normal())})
    table = pd.DataFrame(rows)
    led = Ledger("c4_continuity", "smoke", "cpu", 0)
    out = chapter.ledger_temperature_replication(led, table, table, {})
    rec = led.by_id()
    assert rec["C5-temperature-tails-replication"].passed
    inter = rec["C5-temperature-tails-interaction"]
    assert inter.verdict == "failed" and inter.ci_low < 0 < inter.ci_high
    assert out["rep_inter_tau_a"] == 0.1 and out["rep_inter_tau_b"] == 0.05
    assert out["rep_vector_ratio_a"] == pytest.approx(1.5) and out["rep_ratio_b"] == pytest.approx(1.5, rel=0.05)
