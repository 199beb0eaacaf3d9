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
    t = chapter.exact_curve.uncached(model, 0.5, [1, 16, 256], variants=("standard",))
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
    chapter.ledger_bounds(led, VonMisesFisher(3, 4.0), 0.5, pd.DataFrame(rows))
    rec = {r.id: r for r in led.records}
    assert not rec["C1-bound-model-holds"].passed and rec["C1-bound-model-holds"].measured == pytest.approx(1.5)
    assert rec["C1-bound-uniform-holds"].passed


def test_monte_carlo_records_use_a_bonferroni_level(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c1_rate", "smoke", "cpu", 0)
    mc = pd.DataFrame({"k": [64, 256, 1024, 4096], "exact": [0.034, 0.0085, 0.0021, 0.00053],
                       "cv_mean": [0.034, 0.0085, 0.0021, 0.00053], "cv_se": [1e-3, 2e-4, 5e-5, 1e-5],
                       "covered": [True] * 4, "n_tuples": [1000] * 4, "device": ["cpu"] * 4})
    out = chapter.ledger_monte_carlo(led, VonMisesFisher(3, 4.0), 0.5, mc, k_min_slope=64)
    rec = {r.id: r for r in led.records}
    z = 2.4977054744  # two-sided normal quantile at level 1 - 0.05/4 (tables)
    assert rec["C1-mc-k64"].ci_high - rec["C1-mc-k64"].measured == pytest.approx(z * 1e-3, rel=1e-9)
    assert rec["C1-mc-k64"].level == pytest.approx(1 - 0.05 / 4)
    assert out["coverage"] == 1.0 and math.isfinite(out["slope"])
