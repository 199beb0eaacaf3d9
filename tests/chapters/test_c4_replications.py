"""Chapter 4's replications of its side claims: the design (pilots, power, kappa_d) and the records."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from infonce_book.chapters import c4_continuity as chapter
from infonce_book.experiment.ledger import Ledger


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
