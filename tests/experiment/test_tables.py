"""Tables for readers: headers in mathematics, no index, no NaN, long tables collapsed."""

import numpy as np
import pandas as pd
import pytest

from infonce_book.experiment.ledger import Ledger, Rule
from infonce_book.experiment.tables import DASH_NOTE, ledger_view, show_table, verdict_sentence
from infonce_book.testing.reader_pages import page_problems
from infonce_book.theory.stats import Estimate


def test_show_table_has_math_headers_no_index_a_dash_for_nan_and_thousands_separators():
    df = pd.DataFrame({"k": [16, 2048], "ci_low": [0.25, np.nan]}, index=[7, 8])
    md = str(show_table(df, {"k": "$k$", "ci_low": "95% low"}))
    assert md.splitlines()[:4] == ["| $k$ | 95% low |", "|---|---|", "| 16 | 0.25 |", "| 2,048 | — |"]
    assert DASH_NOTE in md and "7" not in md and "NaN" not in md


def test_a_long_table_shows_its_first_rows_and_the_whole_table_in_a_collapsed_box():
    df = pd.DataFrame({"k": range(73)})
    md = show_table(df, {"k": "$k$"}, preview=5)._repr_markdown_()
    web, printed = md.split("````{only} latex")
    head, box = web.split("::::{admonition} All 73 rows")
    assert head.startswith("````{only} html\n") and head.count("\n| ") == 5 + 1 and "The first 5 of 73 rows" in head
    assert ":class: dropdown" in box and box.count("\n| ") == 73 + 1 and "×" not in md  # rows and header
    # print (the LaTeX build) has the whole table once, and no words about a box
    assert printed.count("\n| ") == 73 + 1 and "box" not in printed


@pytest.mark.parametrize("header", ["ci_low", "r3_err", "n_gap_cv_se", "two_point_max", "asym_law", "tau"])
def test_a_column_name_as_header_is_refused(header):
    with pytest.raises(ValueError, match="not code names"):
        show_table(pd.DataFrame({"a": [1]}), {"a": header})
    with pytest.raises(ValueError, match="not in the table"):
        show_table(pd.DataFrame({"a": [1]}), {"b": "b"})


def test_an_index_that_means_something_is_shown_under_its_header():
    df = pd.DataFrame({"c1": [2.18, -0.54]}, index=pd.Index(["standard", "decoupled"], name="variant"))
    md = str(show_table(df, {"c1": "$c_1$"}, index="variant"))
    assert md.splitlines()[0] == "| variant | $c_1$ |" and "| decoupled | −0.54 |" in md


def test_the_ledger_view_shows_each_record_with_its_test_and_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c0", "smoke", "cpu", 0)
    led.record(claim="C0", id="C0-exact", quantity="c1", predicted=2.0, measured=2.0, ci_low=2.0, ci_high=2.0,
               params={})
    led.record(claim="C0", id="C0-wide", quantity="k_bias", predicted=5.0, params={},
               measured=Estimate.interval(6.1, -38.5, 53.1, n=2))
    led.record(claim="C0", id="C0-bound", quantity="q", predicted=1.0, measured=0.5, ci_low=0.5, ci_high=0.5,
               params={}, rule=Rule.bound("measured", "<="))
    md = str(ledger_view(led.records))
    assert "| `C0-exact` | c1 | 2 | 2 | exact value | exact check | passed |" in md
    assert "| `C0-wide` | `k_bias` | 5 | 6.1 | [−38.5, 53.1] | two-sided interval | **inconclusive** |" in md
    assert "bound holds" in md
    assert verdict_sentence(led.records) == "2 passed and 1 was inconclusive"


def test_the_page_scan_finds_developer_output():
    pandas_html = pd.DataFrame({"ci_low": [np.nan]}).to_html()
    found = page_problems(pandas_html + "<p>73 rows × 7 columns</p>")
    assert any("dataframe" in p for p in found) and any("'ci_low'" in p for p in found)
    assert any("index column" in p for p in found) and any("'NaN'" in p for p in found)
    assert any("73 rows × 7 columns" in p for p in found)
    ok = ('<table class="table"><thead><tr><th class="head"><p><span class="math">\\(\\tau_k\\)</span></p></th>'
          "</tr></thead><tbody><tr><td><p>—</p></td></tr></tbody></table>")
    assert page_problems(ok) == []
