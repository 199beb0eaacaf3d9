"""Chapter 1 (c1_rate): the runners and ledger rules of the page, on small configurations."""

import math

import numpy as np
import pandas as pd
import pytest

from infonce_book.chapters import c1_rate as chapter
from infonce_book.experiment.ledger import Ledger
from infonce_book.models import VonMisesFisher


def test_exact_curve_is_the_exact_bias_with_the_series_coefficients():
    model = VonMisesFisher(3, 4.0)
    t = chapter.exact_curve.uncached(chapter.RateSetup(tau=0.5), model, [1, 16, 256], variants=("standard",))
    np.testing.assert_allclose(t.bias, [model.exact_bias(k, 0.5) for k in (1, 16, 256)], rtol=1e-12)
    np.testing.assert_allclose(t.k_bias, t.k * t.bias, rtol=1e-15)
    assert t.c1.iloc[0] == pytest.approx(2.18000, abs=5e-6)  # the value computed in the chapter's text


def test_richardson_c1_recovers_c1_within_its_error():
    model = VonMisesFisher(3, 4.0)
    est, err = chapter.richardson_c1(model, 0.5, 1024)
    c1 = model.bias_coefficients(0.5, order=1)[0]
    assert abs(est - c1) <= err and err < 1e-4


def test_bound_records_are_one_sided(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c1_rate", "smoke", "cpu", 0)
    rows = []
    for k, exact, ours in ((1, 0.5, 1.0), (2, 0.3, 0.2)):  # the bound fails at k = 2
        rows += [{"k": k, "curve": "exact |bias|", "value": exact}, {"k": k, "curve": "ours, model moments", "value": ours},
                 {"k": k, "curve": r"ours, uniform $C(\tau)/k$", "value": 10.0},
                 {"k": k, "curve": "Lipschitz-of-log, model moments", "value": 5.0}]
    chapter.ledger_bounds(led, chapter.RateSetup(tau=0.5), VonMisesFisher(3, 4.0), pd.DataFrame(rows))
    rec = led.by_id()
    assert not rec["C1-bound-model-holds"].passed and rec["C1-bound-model-holds"].measured == pytest.approx(1.5)
    assert rec["C1-bound-uniform-holds"].passed


def test_monte_carlo_records_use_a_bonferroni_level(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c1_rate", "smoke", "cpu", 0)
    mc = pd.DataFrame({"k": [64, 256, 1024, 4096], "exact": [0.034, 0.0085, 0.0021, 0.00053],
                       "cv_mean": [0.034, 0.0085, 0.0021, 0.00053], "cv_se": [1e-3, 2e-4, 5e-5, 1e-5],
                       "covered": [True] * 4, "n_tuples": [1000] * 4, "device": ["cpu"] * 4})
    out = chapter.ledger_monte_carlo(led, chapter.RateSetup(tau=0.5, k_min_slope=64), VonMisesFisher(3, 4.0), mc)
    rec = led.by_id()
    z = 2.4977054744  # two-sided normal quantile at level 1 - 0.05/4 (tables)
    assert rec["C1-mc-k64"].ci_high - rec["C1-mc-k64"].measured == pytest.approx(z * 1e-3, rel=1e-9)
    assert rec["C1-mc-k64"].level == pytest.approx(1 - 0.05 / 4)
    assert out["coverage"] == 1.0 and math.isfinite(out["slope"])


def test_third_order_records_use_the_declared_tolerance(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c1_rate", "smoke", "cpu", 0)
    table = pd.DataFrame({"k": [128, 256], "r3": [0.95, 0.90], "r3_err": [1e-7, 1e-6], "c3": [0.98, 0.98],
                          "c4": [-1.4, -1.4]})
    out = chapter.ledger_third_order(led, chapter.RateSetup(tau=0.5), VonMisesFisher(3, 4.0), table)
    rec = led.by_id()
    # k = 128: |0.95 - 0.98| = 0.03 > 2 * 1.4 / 128 + 3e-7 = 0.0219 -> fails; k = 256: 0.08 > 0.011 -> fails
    assert not rec["C1-c3-k128"].passed and not rec["C1-c3-k256"].passed
    assert out["r3_tol_k128"] == pytest.approx(2 * 1.4 / 128 + 3e-7)


def test_third_order_table_measures_c3_at_moderate_k():
    model = VonMisesFisher(3, 4.0)
    t = chapter.third_order_table.uncached(chapter.RateSetup(tau=0.5), model, [128])
    row = t.iloc[0]
    # Proposition c1-prop-third-order: r3 = c3 + c4/k + O(k^-3/2); c3 = 0.980452 (mpmath, tests/models)
    assert abs(row["r3"] - row["c3"]) <= 2 * abs(row["c4"]) / 128 + 3 * row["r3_err"]
    assert row["c3"] == pytest.approx(0.9804516, abs=1e-6)


@pytest.mark.slow
def test_in_batch_records_are_bonferroni_and_the_richardson_constant(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c1_rate", "smoke", "cpu", 0)
    model = VonMisesFisher(3, 4.0)
    exact = chapter.in_batch_exact.uncached(chapter.RateSetup(tau=0.5), model, [2, 8])
    mc = pd.DataFrame({"form": ["clip", "nt_xent"], "B": [8, 8], "k": [7, 14],
                       "cv_mean": [exact.bias.iloc[1], exact.bias.iloc[3] + 1.0], "cv_se": [1e-3, 1e-3],
                       "plain_mean": [0.0, 0.0], "plain_se": [1.0, 1.0], "n_batches": [1000, 1000],
                       "device": ["cpu", "cpu"]})
    out = chapter.ledger_in_batch(led, chapter.RateSetup(tau=0.5), model, exact, mc)
    rec = led.by_id()
    assert rec["C1-inbatch-clip-B8"].passed and not rec["C1-inbatch-ntxent-B8"].passed
    assert rec["C1-inbatch-clip-B8"].level == pytest.approx(1 - 0.05 / 2)
    assert rec["C1-ntxent-c1"].passed and out["mc_covered"] == 1
    # CLIP rows are InfoNCE tuples with k = B - 1 (Proposition c1-prop-clip)
    assert exact.bias.iloc[1] == pytest.approx(model.exact_bias(7, 0.5), rel=1e-12)


def test_the_opening_diagram_shows_the_tuple_and_the_logarithm_with_math_labels():
    fig = chapter.fig_idea(k=6)
    left, right = fig.axes[:2]
    labels = left.get_legend_handles_labels()[1]
    assert labels == [r"anchor $x$", r"positive $x^+$", r"negatives $x_1, \dots, x_k$"]
    assert len(left.lines) == 1 + 2 * (2 + 6)  # the circle, then a radius and a marker per point
    assert right.get_xlabel() == r"$t$" and "nats" in right.get_ylabel()
    with pytest.raises(ValueError, match="k must be at least 1"):
        chapter.fig_idea(k=0)
