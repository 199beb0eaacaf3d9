"""Chapter 3 (c3_temperature): the ledger rules of the page on small tables."""

import numpy as np
import pandas as pd
import pytest

from infonce_book.chapters import c3_temperature as chapter
from infonce_book.experiment.ledger import Ledger
from infonce_book.models import VonMisesFisher


def test_ledger_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c3_temperature", "smoke", "cpu", 0)
    kl = pd.DataFrame({"tau": [0.5, 1.0, 0.5], "embedding": ["vmf identity", "vmf identity", "too sharp"],
                       "kl": [0.9, 0.2, 2.1], "kl_se": [0.01, 0.01, 0.01], "kl_low": [0.88, 0.18, 2.08],
                       "kl_high": [0.92, 0.22, 2.12], "closed_form": [0.9, 0.2, float("nan")],
                       "bound": [2.0, 0.5, 2.0]})
    learned = pd.DataFrame({"seed": [0, 1, 2], "k": [64] * 3, "tau": [0.24, 0.25, 0.26]})
    out = chapter.ledger_kl_and_tau(led, chapter.TemperatureSetup(), VonMisesFisher(3, 4.0), kl, learned)
    rec = led.by_id()
    assert rec["C3-bound-vmf-identity"].passed and not rec["C3-bound-too-sharp"].passed
    assert rec["C3-tau-star"].passed and out["tau_star"] == pytest.approx(0.25, abs=1e-6)
    assert rec["C3-learned-tau"].measured == pytest.approx(0.25) and rec["C3-learned-tau"].passed
    assert rec["C3-kl-vmf-tau0.5"].level == pytest.approx(1 - 0.05 / 2)


def test_two_cluster_sample_is_on_two_antipodal_points():
    import torch

    x = chapter.runners._two_cluster_sample(1000, 3, torch.Generator().manual_seed(0), "cpu")
    assert set(map(tuple, x.numpy().tolist())) == {(1.0, 0.0, 0.0), (-1.0, 0.0, 0.0)}


def test_sharp_kl_records(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c3_temperature", "smoke", "cpu", 0)
    table = chapter.sharp_kl_check(chapter.TemperatureSetup(sharp_betas=(2.0, 10.0)), n_random=3, seed=0)
    chapter.ledger_sharp_kl(led, table)
    rec = led.by_id()
    assert all(r.passed for r in led.records) and "C3-kl-asym-beta10" in rec
    assert table.random_max.max() <= table.psi.max() + 1e-12


def test_decoupled_record_uses_richardson(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c3_temperature", "smoke", "cpu", 0)
    C = 8.0
    table = pd.DataFrame({"k": [256, 512, 1024], "k_shift": [C + 48 / 256, C + 48 / 512, C + 48 / 1024],
                          "C": [C] * 3, "tau_k": [0.248] * 3})
    out = chapter.ledger_decoupled(led, VonMisesFisher(3, 4.0), table)
    assert led.records[0].passed and out["richardson"] == pytest.approx(C, abs=1e-12)


def test_approximation_records(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c3_temperature", "smoke", "cpu", 0)
    model = VonMisesFisher(3, 4.0)
    table = chapter.approximation_table.uncached(model, [1.0, 0.5, 0.2])
    mc = pd.DataFrame({"gain": [0.0035, 0.0036, 0.0037], "identity_error": [0.176, 0.1765, 0.1762],
                       "a1": [0.88] * 3, "a2": [0.12] * 3, "predicted_gain": [0.003583] * 3,
                       "identity_closed_form": [0.1763396] * 3})
    out = chapter.ledger_approximation(led, chapter.TemperatureSetup(tau_example=0.5), model, table, mc)
    assert all(r.passed for r in led.records)
    assert out["infimum"] == pytest.approx(0.172757, abs=2e-6)  # the convex programme (certified)
    assert table.set_index("tau").loc[0.2, "infimum"] == 0.0


def test_gap_ledger_slope_below_tau_star_is_one_sided_and_the_summary_pools_sets(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c3_temperature", "smoke", "cpu", 0)
    taus = [0.05, 0.1, 0.2, 0.5, 1.0]
    # gap / B_k = 0.01 - 0.01 log(tau) + set noise below 1/kappa = 0.25: the slope is -0.01 exactly
    # on average; above, 0.02 flat.
    rows = []
    for s, noise in enumerate([-0.001, 0.0, 0.001]):
        for tau in taus:
            ratio = (0.01 - 0.01 * np.log(tau) if tau <= 0.25 else 0.02) + noise
            rows.append({"set": s, "tau": tau, "gap": ratio * 4 / tau, "range_bk": 4 / tau, "gap_over_range": ratio,
                         "train_risk": 1.0})
    out = chapter.ledger_gap(led, chapter.TemperatureSetup(), VonMisesFisher(3, 4.0), pd.DataFrame(rows))
    rec = led.by_id()["C3-gap-range-below-tau-star"]
    assert rec.measured == pytest.approx(-0.01, rel=1e-9) and rec.passed
    assert rec.params["taus"] == [0.05, 0.1, 0.2] and rec.params["n_sets"] == 3
    assert out["slope_above"] == pytest.approx(0.0, abs=1e-12)
    summary = chapter.gap_summary(pd.DataFrame(rows))
    # mean over the three sets at tau = 1: 0.02 (the noise averages out)
    assert summary.set_index("tau").gap_over_range[1.0] == pytest.approx(0.02, rel=1e-12)
    assert out["ratio_best_tau"] == 0.5  # the first of the two equal minima


def test_the_opening_diagram_labels_each_temperature_with_its_kl():
    import re

    fig = chapter.fig_idea(taus=(2.0, 0.5))
    labels = [t.get_text() for t in fig.legends[0].get_texts() if "KL" in t.get_text()]  # the legend below
    assert len(labels) == 2
    for tau, label in zip((2.0, 0.5), labels):
        kl, bound = (float(v) for v in re.search(r"KL \$= ([0-9.]+)\$ \(bound \$([0-9.]+)\$\)", label).groups())
        # Independent value: the vMF closed form beta A_3(beta) - log Z_3(beta) of the model class.
        assert kl == pytest.approx(VonMisesFisher(3, 1.0).kl_softmax_vs_data(tau), abs=0.006)
        assert bound == pytest.approx(min(0.5 / tau**2, 2 / tau), abs=0.006) and kl <= bound
    with pytest.raises(ValueError, match="must be > 0"):
        chapter.fig_idea(taus=(1.0, 0.0))
