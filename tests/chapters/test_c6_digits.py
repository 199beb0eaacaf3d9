"""Chapter 6 (c6_digits): the ledger rules of the page on a small table."""

import numpy as np
import pandas as pd
import pytest

from infonce_book.chapters import c6_digits as chapter
from infonce_book.experiment.ledger import Ledger


def test_gap_change_is_paired_by_seed_and_the_top1_slope_is_one_sided(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c6_digits", "smoke", "cpu", 0)
    rows = []
    for seed, (g1, g2) in enumerate([(0.10, 0.12), (0.20, 0.21), (0.05, 0.08)]):
        rows += [{"tau": 0.5, "k": 16, "seed": seed, "gap": g1, "top1": 0.3 + 0.01 * seed},
                 {"tau": 0.5, "k": 64, "seed": seed, "gap": g2, "top1": 0.5 + 0.01 * seed}]
    out = chapter.ledger(led, pd.DataFrame(rows))
    rec = {r.id: r for r in led.records}
    diffs = np.array([0.02, 0.01, 0.03])
    assert rec["C7-digits-gap-levels-tau0.5"].measured == pytest.approx(diffs.mean())
    assert rec["C7-digits-gap-levels-tau0.5"].n == 3
    assert rec["C7-digits-top1-slope-tau0.5"].passed  # accuracy rises with k
    assert out["gap_k1_0_5"] == 16 and out["gap_k2_0_5"] == 64
