"""The claims ledger: records, verdicts, files."""

import json

import pytest

from infonce_book.experiment.ledger import (
    FIELDS,
    Ledger,
    Rule,
    book_id,
    decide,
    find_record,
    format_table,
    load_records,
    summary_line,
    undeclared_zero_resolution,
    verdict_counts,
)
from infonce_book.theory.stats import Estimate


def test_record_has_every_field_and_the_default_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger(chapter="c1_rate", profile="smoke", device="cpu", seed=0)
    led.record(claim="C1", id="C1-a", quantity="c1", predicted=2.18, measured=2.17, ci_low=2.1, ci_high=2.2,
               params={"model": "vmf", "dim": 3, "kappa": 4.0, "tau": 0.5})
    led.record(claim="C1", id="C1-b", quantity="c1", predicted=2.5, measured=2.17, ci_low=2.1, ci_high=2.2,
               params={"model": "vmf"})
    recs = load_records(tmp_path)
    assert [r["id"] for r in recs] == ["1.C1-a", "1.C1-b"] and [r["alias"] for r in recs] == ["C1-a", "C1-b"]
    assert set(recs[0]) == set(FIELDS)
    assert recs[0]["passed"] is True and recs[1]["passed"] is False
    # numbers with an error band and no standard error: a deterministic value, an exact check
    assert "failed" in format_table(recs) and recs[0]["kind"] == "exact" and recs[1]["verdict"] == "failed"
    assert summary_line(recs) == "2 records: 1 passed, 0 inconclusive, 1 failed (1.C1-b)"
    assert format_table(recs).endswith("2 records: 1 passed, 0 inconclusive, 1 failed (1.C1-b)")
    assert "1.C1-a (was C1-a)" in format_table(recs)


def test_summary_line_names_at_most_five_failures():
    recs = [{"id": f"r{i}", "passed": i == 0} for i in range(8)]
    assert summary_line(recs) == "8 records: 1 passed, 0 inconclusive, 7 failed (r1, r2, r3, r4, r5, ...)"
    assert summary_line([]) == "0 records: 0 passed, 0 inconclusive, 0 failed"
    old = [{"id": "a", "passed": True, "verdict": "pass"}, {"id": "b", "passed": False, "verdict": "FAIL"},
           {"id": "c", "passed": False, "verdict": "inconclusive"}]
    assert summary_line(old) == "3 records: 1 passed, 1 inconclusive (c), 1 failed (b)"
    assert verdict_counts(old) == {"passed": 1, "failed": 1, "inconclusive": 1}


def test_record_with_the_same_id_replaces_the_old_one(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger(chapter="x", profile="smoke", device="cpu", seed=1)
    for measured in (1.0, 2.0):
        led.record(claim="C1", id="C1-a", quantity="q", predicted=2.0, measured=measured, ci_low=measured - 0.1,
                   ci_high=measured + 0.1, params={})
    data = json.loads((tmp_path / "x.json").read_text())
    assert len(data) == 1 and data[0]["measured"] == 2.0 and data[0]["passed"] is True


def test_non_finite_or_inverted_values_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger(chapter="x", profile="smoke", device="cpu", seed=0)
    with pytest.raises(ValueError, match="finite"):
        led.record(claim="C1", id="a", quantity="q", predicted=float("nan"), measured=1, ci_low=0, ci_high=2, params={})
    with pytest.raises(ValueError, match="ci_low"):
        led.record(claim="C1", id="a", quantity="q", predicted=1, measured=1, ci_low=2, ci_high=0, params={})


def test_an_estimate_is_recorded_with_its_interval_standard_error_and_size(tmp_path, monkeypatch):
    from infonce_book.theory.stats import Estimate

    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger("c0", "smoke", "cpu", 0)
    est = Estimate.from_samples([1.0, 2.0, 3.0, 4.0])
    rec = led.record(claim="C0", id="est", quantity="q", predicted=2.0, measured=est, params={})
    assert (rec.measured, rec.ci_low, rec.ci_high) == (est.mean, *est.ci)
    assert rec.se == est.se and rec.n == 4 and rec.level == 0.95
    # the 95% interval [1.23, 3.77] contains 2 but is wider than 2 itself: it decides nothing
    assert rec.verdict == "inconclusive" and not rec.passed and rec.kind == "two-sided"
    with pytest.raises(ValueError, match="ci_low and ci_high"):
        led.record(claim="C0", id="bad", quantity="q", predicted=0.0, measured=1.0, params={})


@pytest.mark.parametrize("rule, values, expected", [
    # (predicted, measured, ci_low, ci_high): each verdict worked out by hand from the rule's definition.
    (Rule.two_sided(), (1.0, 1.1, 0.9, 1.2), True),
    (Rule.two_sided(), (1.3, 1.1, 0.9, 1.2), False),
    (Rule.one_sided("ci_high", "<"), (0.0, -0.5, -0.7, -0.3), True),
    (Rule.one_sided("ci_high", "<"), (0.0, -0.5, -0.7, 0.0), False),  # strict: an end at 0 is not below 0
    (Rule.one_sided("ci_low", ">="), (0.0, 0.5, 0.0, 1.0), True),
    (Rule.bound("measured", "<=", tol=1e-12), (1.0, 1.0 + 5e-13, 0.0, 2.0), True),
    (Rule.bound("measured", "<=", tol=1e-12), (1.0, 1.0 + 5e-12, 0.0, 2.0), False),
    (Rule.bound("ci_high", "<="), (1.0, 0.5, 0.4, 1.0 + 1e-9), False),
    (Rule.equivalence(0.02), (0.0, 0.0, -0.019, 0.019), True),
    (Rule.equivalence(0.02), (0.0, 0.0, -0.021, 0.019), False),
    (Rule.equivalence(0.02), (0.0, 0.0, -0.02, 0.0), False),  # the margin itself is outside (open interval)
])
def test_the_rule_decides_the_verdict(tmp_path, monkeypatch, rule, values, expected):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    predicted, measured, lo, hi = values
    rec = Ledger("c0", "smoke", "cpu", 0).record(claim="C0", id="r", quantity="q", predicted=predicted,
                                                  measured=measured, ci_low=lo, ci_high=hi, params={}, rule=rule)
    kind = "exact" if rule.kind == "two-sided" else rule.kind  # deterministic values (no standard error)
    assert rec.passed is expected and rec.kind == kind
    assert rec.verdict == ("passed" if expected else "failed") and rec.rule["kind"] == kind
    saved = json.loads((tmp_path / "c0.json").read_text())[0]
    assert saved["rule"]["kind"] == kind and saved["verdict"] == rec.verdict
    if rule.kind != "two-sided":
        assert saved["rule"] == rule.as_dict()


@pytest.mark.parametrize("rule, values, expected", [
    # (predicted, measured, ci_low, ci_high) of a sampled measurement; worked out by hand from the
    # rules of decide(): the C7-aic-n256-k4 (predicted 5, interval -38.5 to 53.1) decides nothing.
    (Rule.two_sided(), (5.0, 7.3, -38.5, 53.1), "inconclusive"),
    (Rule.two_sided(), (5.0, 4.0, 1.65, 6.35), "passed"),  # width 4.7 <= |5|
    (Rule.two_sided(), (5.0, 40.0, 30.0, 50.0), "failed"),  # excludes 5: a failure however wide
    (Rule.two_sided(), (0.0, 0.1, -2.09, 0.33), "inconclusive"),  # contains 0: absence of evidence
    (Rule.two_sided(resolution=3.0), (0.0, 0.1, -2.09, 0.33), "passed"),  # width 2.42 <= declared 3
    (Rule.two_sided(resolution=1.0), (0.0, 0.1, -2.09, 0.33), "inconclusive"),
    (Rule.one_sided("ci_high", ">="), (0.0, 0.04, 0.03, 0.05), "passed"),  # whole interval above 0
    (Rule.one_sided("ci_high", ">="), (0.0, -0.001, -0.006, 0.003), "inconclusive"),  # straddles 0
    (Rule.one_sided("ci_high", ">=", resolution=0.01), (0.0, -0.001, -0.006, 0.003), "passed"),
    (Rule.one_sided("ci_high", ">="), (0.0, -0.01, -0.02, -0.005), "failed"),
    (Rule.one_sided("ci_high", "<"), (0.0, -0.5, -0.9, -0.1), "passed"),  # the strict end decides
    (Rule.one_sided("ci_high", "<"), (0.0, -0.5, -0.9, 0.1), "failed"),
    (Rule.bound("ci_low", "<=", tol=0.1), (1.0, 1.05, 0.9, 1.2), "passed"),  # straddles, width 0.3 <= 1
    (Rule.bound("ci_low", "<=", tol=0.1), (1.0, 1.05, 0.9, 3.2), "inconclusive"),
    (Rule.equivalence(0.5), (0.0, 0.1, -0.3, 0.4), "passed"),
    (Rule.equivalence(0.5), (0.0, 0.1, -0.6, 0.4), "failed"),
])
def test_a_sampled_interval_too_wide_to_decide_is_inconclusive(tmp_path, monkeypatch, rule, values, expected):
    from infonce_book.theory.stats import Estimate

    predicted, measured, lo, hi = values
    assert decide(rule, predicted, measured, lo, hi, sampled=True) == expected
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    kwargs = dict(claim="C0", id="r", quantity="q", predicted=predicted, params={},
                  measured=Estimate.interval(measured, lo, hi, n=10), rule=rule)
    if undeclared_zero_resolution(rule, predicted, lo, hi, sampled=True):  # the ledger refuses these
        with pytest.raises(ValueError, match="no declared resolution"):
            Ledger("c0", "smoke", "cpu", 0).record(**kwargs)
        return
    rec = Ledger("c0", "smoke", "cpu", 0).record(**kwargs)
    assert rec.verdict == expected and rec.passed is (expected == "passed") and rec.kind == rule.kind


def test_a_deterministic_value_is_an_exact_check_and_never_inconclusive():
    # the same wide band, but no sampling error: the verdict rests on the band alone
    assert decide(Rule.exact(), 0.0, 0.0, -1e-10, 1e-10, sampled=False) == "passed"
    assert decide(Rule.two_sided(), 5.0, 7.3, -38.5, 53.1, sampled=False) == "passed"
    assert decide(Rule.bound("measured", ">="), 0.0, 3.9, 3.9, 3.9, sampled=False) == "passed"
    assert decide(Rule.bound("measured", ">="), 0.0, -0.1, -0.1, -0.1, sampled=False) == "failed"
    with pytest.raises(ValueError, match="resolution"):
        Rule.two_sided(resolution=0.0)


def test_a_rule_refuses_what_it_cannot_test(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="side"):
        Rule.one_sided("middle", "<")
    with pytest.raises(ValueError, match="op"):
        Rule.bound("measured", "=<")
    with pytest.raises(ValueError, match="margin"):
        Rule.equivalence(0.0)
    with pytest.raises(ValueError, match="kind"):
        Rule(kind="inconclusive-by-hand")
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    with pytest.raises(TypeError, match="Rule"):
        Ledger("c0", "smoke", "cpu", 0).record(claim="C0", id="r", quantity="q", predicted=0.0, measured=0.0,
                                               ci_low=0.0, ci_high=0.0, params={}, rule="one-sided")


def test_ids_carry_the_chapter_number_and_old_ids_still_find_the_record(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    assert book_id("c4_continuity", "C5-rademacher-slope-k") == "4.C5-rademacher-slope-k"
    assert book_id("c12_more", "C1-x") == "12.C1-x" and book_id("c4_continuity", "4.C5-x") == "4.C5-x"
    assert book_id("appendix", "R-a") == "R-a"
    led = Ledger(chapter="c5_generalisation", profile="smoke", device="cpu", seed=0)
    led.record(claim="C6", id="C6-pac", quantity="q", predicted=1.0, measured=1.0, ci_low=0.9, ci_high=1.1, params={})
    led.record(claim="C6", id="C6-pac", quantity="q", predicted=1.0, measured=1.05, ci_low=0.9, ci_high=1.1, params={})
    assert [r.id for r in led.records] == ["5.C6-pac"] and led.records[0].measured == 1.05
    assert led.by_id()["C6-pac"] is led.by_id()["5.C6-pac"]
    recs = load_records(tmp_path)
    assert find_record(recs, "C6-pac")["id"] == "5.C6-pac" and find_record(recs, "5.C6-pac")["alias"] == "C6-pac"
    with pytest.raises(KeyError, match="C6-other"):
        find_record(recs, "C6-other")


def test_a_zero_prediction_without_a_declared_resolution_is_refused(tmp_path, monkeypatch):
    """The failing case of the rule 'no record decides by a resolution of zero': a sampled slope
    predicted 0 under a two-sided rule, and a lenient one-sided difference, are refused; the same
    records with a declared resolution, a strict one-sided test or an equivalence margin decide."""
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    led = Ledger(chapter="c4_continuity", profile="smoke", device="cpu", seed=0)
    slope = Estimate(0.062, 0.058, 6)
    with pytest.raises(ValueError, match="predicts 0 .* no declared resolution"):
        led.record(claim="C5", id="C5-slope", quantity="q", predicted=0.0, measured=slope, params={})
    with pytest.raises(ValueError, match="no declared resolution"):
        led.record(claim="C2", id="C2-diff", quantity="q", predicted=0.0, measured=Estimate(-0.001, 0.002, 1000),
                   rule=Rule.one_sided("ci_high", ">="), params={})
    assert not led.records
    ok = [led.record(claim="C5", id="a", quantity="q", predicted=0.0, measured=slope, params={},
                     rule=Rule.two_sided(resolution=0.5)),
          led.record(claim="C5", id="b", quantity="q", predicted=0.0, measured=slope, params={},
                     rule=Rule.equivalence(0.3)),
          led.record(claim="C5", id="c", quantity="q", predicted=0.0, measured=slope, params={},
                     rule=Rule.one_sided("ci_low", ">")),
          led.record(claim="C5", id="d", quantity="q", predicted=0.0, measured=Estimate.exact(0.0, 1e-12), params={})]
    assert [r.verdict for r in ok] == ["passed", "passed", "failed", "passed"]
    assert undeclared_zero_resolution(Rule.bound("measured", "<="), 0.0, -1.0, 1.0, sampled=True)
    assert not undeclared_zero_resolution(Rule.bound("measured", "<="), 0.0, -1.0, 1.0, sampled=False)
    assert not undeclared_zero_resolution(Rule.two_sided(), 0.5, 0.4, 0.6, sampled=True)


def test_cli_ledger_finds_a_record_by_its_old_id(tmp_path, monkeypatch, capsys):
    from infonce_book.pipeline.cli import main

    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path / "ledger"))
    led = Ledger(chapter="c4_continuity", profile="smoke", device="cpu", seed=0)
    led.record(claim="C5", id="C5-x", quantity="q", predicted=1.0, measured=1.0, ci_low=0.9, ci_high=1.1, params={})
    led.record(claim="C5", id="C5-y", quantity="q", predicted=1.0, measured=1.0, ci_low=0.9, ci_high=1.1, params={})
    assert main(["ledger", "--build-dir", str(tmp_path), "--format", "json", "--id", "C5-x"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in out] == ["4.C5-x"]
    assert main(["ledger", "--build-dir", str(tmp_path), "--id", "4.C5-y"]) == 0
    assert "4.C5-y (was C5-y)" in capsys.readouterr().out
    assert main(["ledger", "--build-dir", str(tmp_path), "--id", "C5-z"]) == 2
    assert "C5-z" in capsys.readouterr().err
