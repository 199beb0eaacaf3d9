"""Chapter 5 (c5_generalisation): the runners, ledger rules and constants of the page: the search
constants, the training cell (terms of the sharp bound and the PAC-Bayes certificate), the
ledger rules, the non-vacuity table and the numbers of the exercises."""

import dataclasses
import math

import pandas as pd
import pytest
import torch
from scipy import integrate

from infonce_book.chapters import c5_generalisation as chapter
from infonce_book.experiment.ledger import Ledger
from infonce_book.models import GaussianModel, VonMisesFisher
from infonce_book.theory.bounds import max_negative_weight, rademacher_covering_bound, search_bias_constant
from infonce_book.utils.device import one_thread


def test_search_constant_formula_and_validity_on_the_vmf_model():
    kappa, tau = 2.0, 0.5
    z = lambda b: math.sinh(b) / b  # noqa: E731  (Z_3)
    second = z(2 * kappa) / z(kappa) ** 2
    expected = 2 / tau * math.sqrt(second - 1) * math.sqrt(second) / (math.exp(-kappa) / z(kappa)) + math.exp(2 / tau)
    C = chapter.vmf_search_constant(VonMisesFisher(3, kappa), tau)
    assert C == pytest.approx(expected, rel=1e-10)
    # Corollary c5-cor-search-constant: |E H - L_k| <= C / k, checked with the exact curves
    model = VonMisesFisher(3, kappa)
    ks = [1, 4, 64, 1024]
    search = model.search_cross_entropy_curve(ks, tau)
    risk = [model.exact_centred_risk(k, tau) for k in ks]
    for k, h, r in zip(ks, search, risk):
        assert abs(h - r) <= C / k
    with pytest.raises(ValueError, match="m_min"):
        search_bias_constant(1.0, sd_m=1.0, second_moment_m=2.0, m_min=0.0)


# --- the sharp bound and the PAC-Bayes certificate (issue "Theorem 1 made non-vacuous") ---------



def test_cells_expand_every_block_of_every_profile():
    for profile, size in chapter.SIZES.items():
        cells = chapter.cells(size, tau_star=0.5, tau_other=1.0)
        named = {(b["model"], n, k, t, s, b.get("batch")) for b in size["blocks"] for t in b["taus"]
                 for k in b["ks"] for n in b["ns"] for s in range(b["seeds"])}
        assert len(cells) == len(named), profile  # every cell a block names, each once
        keys = [(c["model"], c["n"], c["k"], {0.5: "star", 1.0: "other"}[c["tau"]], c["seed"], c["batch"]) for c in cells]
        assert len(set(keys)) == len(keys) and set(keys) == named
        assert {c["tau"] for c in cells} <= {0.5, 1.0}
        assert all(c["batch"] is None for c in cells if c["gap"])  # the gap needs exact (full-batch) ERM
    # every profile has the headline cell with two seeds (the non-vacuity and slack records)
    for size in chapter.SIZES.values():
        head = [c for c in chapter.cells(size, 0.5, 1.0) if (c["model"], c["n"], c["k"], c["tau"]) == ("vmf", 2048, 16, 0.5)]
        assert len(head) >= 2


def test_ratio_moments_against_quadrature():
    kappa = 2.0
    mom = chapter.vmf_ratio_moments(VonMisesFisher(3, kappa))
    Z = math.sinh(kappa) / kappa
    e = {j: integrate.quad(lambda s: 0.5 * (math.exp(kappa * s) / Z) ** j, -1, 1, epsrel=1e-13)[0] for j in (2, 3, 4)}
    assert mom["e_m2"] == pytest.approx(e[2], rel=1e-10)
    assert mom["sd_M_m"] == pytest.approx(math.sqrt(e[3] - e[2] ** 2), rel=1e-9)
    assert mom["mu4"] == pytest.approx(e[4] - 4 * e[3] + 6 * e[2] - 3, rel=1e-9)
    # Gaussian: E_x E_pi m^2 = (1 - rho^2)^(-p): one coordinate by 2-D quadrature, to the power p
    rho, p = 0.5, 3
    v = 1 - rho**2

    def integrand(y, x):
        m = math.exp(-(y - rho * x) ** 2 / (2 * v) + y * y / 2) / math.sqrt(v)
        return m * m * math.exp(-(x * x + y * y) / 2) / (2 * math.pi)

    one, _ = integrate.dblquad(integrand, -12, 12, -12, 12, epsabs=1e-11)
    assert chapter.gaussian_ratio_moments(GaussianModel(p, rho))["e_m2"] == pytest.approx(one**p, rel=1e-7)


def test_the_setup_is_frozen_hashed_and_sizes_the_cells_per_k():
    size = chapter.SIZES["smoke"]
    setup = chapter.GeneralisationSetup(delta=0.05, delta_pb=0.04, delta_mc=0.01, steps=size["steps"],
                                        n_test=size["n_test"], test_elements=size["test_elements"],
                                        pb_pilot_elements=size["pb_pilot_elements"],
                                        pb_final_elements=size["pb_final_elements"])
    assert setup.params["delta_pb"] == 0.04 and setup.params["prior_scales"] == chapter.PRIOR_SCALES
    assert setup.n_test_for(16) == min(5000, 360_000 // 18) and setup.n_test_for(4) == 5000
    assert setup.pilot_draws(16) == 1024 and setup.final_draws(16) == 50_000
    assert setup.pilot_draws(10**6) == 64  # at least 64 pilot pairs
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.delta = 0.1
    for bad in ({"delta": 1.0}, {"delta_mc": 0.0}, {"steps": 0}, {"prior_scales": ()}, {"posterior_ratios": (0.5, -1.0)}):
        with pytest.raises(ValueError):
            dataclasses.replace(setup, **bad)


def _tiny_cell(model, name, tau=0.5, k=4, n=96):
    # 600 test tuples, 64 pilot and 3000 final Monte Carlo pairs at k = 4 (sizes are per k + 2)
    setup = chapter.GeneralisationSetup(delta=0.05, delta_pb=0.04, delta_mc=0.01, steps=15, n_test=600,
                                        test_elements=600 * (k + 2), pb_pilot_elements=64 * (k + 2),
                                        pb_final_elements=3000 * (k + 2))
    mom = chapter.vmf_ratio_moments(model) if name == "sphere" else chapter.gaussian_ratio_moments(model)
    cell = {"model": name, "n": n, "k": k, "tau": tau, "seed": 0, "gap": True, "batch": None}
    return chapter.train_cell.uncached(model=model, cell=cell, cell_seed=7, setup=setup, moments=mom,
                                       input_m2=1.0 if name == "sphere" else float(model.dim),
                                       device="cpu").iloc[0]


def test_a_training_cell_gives_consistent_terms_and_certified_bounds():
    model, tau, k, n = VonMisesFisher(3, 2.0), 0.5, 4, 96
    r = _tiny_cell(model, "sphere", tau, k, n)
    beta = 1 / tau
    omega = min(1.0, k * max_negative_weight(k, tau))
    assert r.lambda_star_rms == pytest.approx(4 * beta * 2.0 * omega, rel=1e-14)  # 4 beta L omega, L = 2
    assert r.sharp_cover == pytest.approx(2 * rademacher_covering_bound(r.lambda_star_rms, 0.5, 9, n), rel=1e-14)
    assert r.sharp_complexity == pytest.approx(min(r.sharp_cover, r.sharp_vector), rel=1e-14)
    terms = r.sharp_empirical_risk + r.sharp_complexity + r.sharp_confidence + r.sharp_search_bias
    assert r.sharp_bound == pytest.approx(terms, rel=1e-12)
    assert r.sharp_search_bias <= r.old_search_bias and r.sharp_complexity <= r.old_complexity
    # the search term is the sharp bias b*_k of the model, at most every moment form
    assert r.bias_moments == pytest.approx(min(r.bias_second, r.bias_third, r.bias_two_term), rel=1e-14)
    assert r.sharp_search_bias == r.bias_sharp == pytest.approx(model.sharp_search_bias([k], tau)[0], rel=1e-12)
    assert r.bias_sharp < r.bias_moments
    # the old bound's search constant is Chapter 2's, which needs no density floor
    assert r.old_search_bias == pytest.approx(model.search_bias_constants(tau)["uniform"] / k, rel=1e-12)
    # every bound lies above the measured value it bounds
    assert r.sharp_bound >= r.search_ce and r.pb_bound >= r.pb_measured
    assert r.bern_bound >= r.bern_measured and r.det_bound >= r.search_ce and r.ho_bound >= r.ho_measured
    assert r.pb_emp_upper >= r.pb_emp_risk and r.pb_risk_upper >= r.pb_emp_upper
    # each certificate is its bound on the (decoupled) risk, minus log k, plus the search bias
    assert r.pb_bound == pytest.approx(r.pb_risk_upper - math.log(k) + r.bias_sharp, rel=1e-12)
    for prefix in ("bern", "det", "ho"):
        assert r[f"{prefix}_bound"] == pytest.approx(r[f"{prefix}_dec_bound"] + r.bias_sharp, rel=1e-12)
    assert r.bern_derand == 0.0 and r.det_derand > 0.0 and r.det_mc_upper >= r.det_emp - 1e-12
    assert r.pb_kl >= 0 and r.pb_post_scale <= r.pb_prior_scale and r.pb_prior_scale in chapter.PRIOR_SCALES
    assert r.trivial == 2 * beta
    # the baselines on the same databases: the uniform search scores 0 exactly; the oracle its exact value
    assert abs(r.uniform_measured) < 1e-12 and r.uniform_risk == pytest.approx(math.log1p(1 / k), rel=1e-15)
    oracle = model.search_cross_entropy(k, tau).mean
    assert abs(r.oracle_measured - oracle) < 5 * r.oracle_measured_se


def test_a_gaussian_cell_has_the_capped_search_term_and_no_certificate():
    model = GaussianModel(8, 0.8)
    r = _tiny_cell(model, "euclid", tau=1.0, k=4, n=64)
    assert r.sharp_search_bias == 2.0  # E m^2 = 0.36^-8: the cap 2 beta
    assert "pb_bound" not in r.index and "det_bound" not in r.index and math.isnan(r.bias_sharp)
    beta, k = 1.0, 4
    omega = min(1.0, k * max_negative_weight(k, 1.0))
    assert r.lambda_star_rms == pytest.approx(beta * math.sqrt(8) * (3 * omega + k * max_negative_weight(k, 1.0)))


def _synthetic_grid(violate=False, ks=(16, 256)):
    # Three seeds per k at one (n, tau): values chosen so that every rule's outcome is known by hand.
    rows = []
    for seed in range(3):
        for k in ks:
            rows.append({"model": "vmf", "n": 2048, "k": k, "tau": 0.5, "seed": seed,
                         "search_ce": -0.4525 + 0.0005 * seed,  # within p_eff / n = 0.0024 of the oracle
                         "search_se": 0.002, "test_risk": 2.3, "test_se": 0.01, "old_bound": 100.0,
                         "old_search_bias": 3.7, "sharp_bound": 1.5 + 0.01 * seed, "sharp_search_bias": 0.13,
                         "old_complexity": 92.0, "sharp_complexity": 1.4,
                         "pb_bound": (-0.6 if violate and seed == 0 else 0.25) - 0.1 * (k == 256),
                         "pb_measured": -0.44 + 0.01 * seed, "pb_measured_se": 0.002, "trivial": 4.0,
                         "pb_risk_upper": 2.7, "pb_emp_upper": 2.4, "pb_emp_risk": 2.38, "pb_kl": 0.2,
                         "pb_range": 6.5, "pb_log_term": 10.0, "uniform_measured": 0.0, "uniform_risk": 0.06,
                         "oracle_measured": -0.454 + 0.001 * (seed - 1), "oracle_measured_se": 0.001,
                         "bias_sharp": 0.13 * 16 / k, "bias_moments": 0.3, "dec_test": -0.51, "dec_train": -0.52,
                         "bern_bound": -0.28 + 0.01 * seed, "bern_measured": -0.44, "bern_measured_se": 0.002,
                         "det_bound": -0.24 + 0.01 * seed - 0.05 * (k == 256), "det_dec_bound": -0.37,
                         "det_measured": -0.45, "det_measured_se": 0.002, "det_emp": -0.5, "det_derand": 0.01,
                         "det_kl": 12.0, "bern_kl": 5.0, "det_scale": 0.008,
                         "ho_bound": -0.33, "ho_measured": -0.45, "ho_measured_se": 0.002,
                         "var_std": 0.70 + 0.01 * (k == 256), "var_dec": 0.82 - 0.05 * (k == 256)})
    return pd.DataFrame(rows)


HEADLINES = [{"n": 2048, "k": 16, "tau": 0.5}]


def test_ledger_rules_pass_and_fail_as_documented(tmp_path):
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    out = chapter.ledger_bound(ledger, _synthetic_grid(), delta=0.05, headlines=HEADLINES, oracle={0.5: -0.454})
    rec = ledger.by_id()
    assert all(r.passed for r in rec.values()), [r.id for r in rec.values() if not r.passed]
    assert rec["C6-sharp-below-cap-n2048-k16-tau0.5"].predicted == 4.0
    assert rec["C6-pac-bayes-slack-n2048-k16-tau0.5"].measured == pytest.approx(0.25 + 0.44 - 0.01, abs=1e-12)
    assert rec["C6-uniform-baseline-tau0.5"].measured == 0.0 and rec["C6-oracle-tau0.5"].predicted == -0.454
    # the derandomised certificate: -0.23 on average, 0.224 above the oracle (the target is 0.25)
    assert rec["C6-derandomised-informative-tau0.5"].measured == pytest.approx(-0.23)
    assert out["head_det_minus_oracle"] == pytest.approx(0.224) and "C6-derandomised-near-oracle-tau0.5" not in rec
    assert "C6-pac-bayes-k-uniform-tau0.5-n2048" in rec
    assert out["head_sharp"] == pytest.approx(1.51) and out["head_correction"] == pytest.approx(0.058)
    assert out["k_uniform_records"] == 1 and out["vmf_sharp_min"] == pytest.approx(1.5)
    assert out["k_slope_records"] == 0  # two values of k: no slope in k
    ledger2 = Ledger(chapter="test2", profile="smoke", device="cpu", seed=0)
    chapter.ledger_bound(ledger2, _synthetic_grid(violate=True), delta=0.05, headlines=HEADLINES,
                         oracle={0.5: -0.454})
    rec2 = ledger2.by_id()
    assert not rec2["C6-pac-bayes-holds-vmf"].passed  # a certificate below the measured value fails


def test_the_slopes_in_k_need_three_k_and_follow_their_rules():
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    out = chapter.ledger_bound(ledger, _synthetic_grid(ks=(4, 16, 64, 256)), delta=0.05, headlines=HEADLINES,
                               oracle={0.5: -0.454})
    rec = ledger.by_id()
    assert out["k_slope_records"] == 4
    # the standard loss's variance rises (0.70 to 0.71 at k = 256), the decoupled one's falls
    assert rec["C6-variance-standard-k-slope"].passed and rec["C6-variance-decoupled-k-slope"].passed
    assert rec["C6-derandomised-slack-k-slope"].measured < 0 and rec["C6-derandomised-slack-k-slope"].passed


def test_informative_n_is_the_smallest_grid_n_below_the_uniform_search():
    summary = pd.DataFrame({"model": "vmf", "tau": 0.5, "k": 16, "n": [256, 512, 1024],
                            "old_bound": [200.0, 150.0, 120.0], "sharp_bound": [4.5, 3.5, 2.0],
                            "pb_bound": [0.9, 0.5, 0.3], "det_bound": [0.1, -0.05, -0.2], "trivial": 4.0,
                            "seeds": 3, "det_bound_se": [0.01, 0.01, 0.01]})
    # decided by the upper end of the t-interval over seeds: at n = 512, -0.05 + 4.303 * 0.01 < 0
    wide = summary.assign(det_bound_se=[0.01, 0.02, 0.01])  # -0.05 + 4.303 * 0.02 > 0: not yet at 512
    assert chapter.informative_n(wide).iloc[0]["derandomised"] == 1024
    assert chapter.informative_n(summary.assign(seeds=1)).iloc[0]["derandomised"] is None  # one seed: no interval
    table = chapter.informative_n(summary)
    row = table.iloc[0]
    assert row["old"] is None and row["sharp"] is None and row["PAC-Bayes-kl"] is None
    assert row["derandomised"] == 512 and row["hold-out"] is None  # a certificate absent from the grid: None
    assert chapter.below_cap_n(summary).iloc[0]["sharp"] == 512  # 3.5 < 2 beta = 4
    glued = chapter.informative_glue(table, 0.5)
    assert glued["det_k16"] == "512" and glued["sharp_k16"] == "none on the grid"
    assert "det_k4" not in glued  # a k the profile did not train gets no key (and no prose)


def _informative_table(ks, ns):
    # smallest informative n per bound (None: never on the grid), in the layout of informative_n
    return pd.DataFrame([{"tau": 0.5, "k": k, "ns": "256, 512", "old": None, "sharp": None, "PAC-Bayes-kl": None,
                          "Bernstein": 256, "derandomised": n, "hold-out": 256} for k, n in zip(ks, ns)])


def test_informative_sentence_names_only_the_trained_k_one_k():
    text = chapter.informative_sentence(_informative_table([16], [512]), 0.5)
    assert text == ("At τ = 0.5, the derandomised certificate is informative from n = 512 at k = 16; the "
                    "randomised Bernstein certificate is informative from n = 256 at k = 16; the hold-out "
                    "certificate is informative from n = 256 at k = 16; the kl certificate is not informative "
                    "on the grid at k = 16; the sharp uniform bound is not informative on the grid at k = 16.")
    assert "profile" not in text and "(" not in text


def test_informative_sentence_names_only_the_trained_k_three_ks():
    text = chapter.informative_sentence(_informative_table([4, 16, 256], [None, 512, 256]), 0.5)
    assert text.startswith("At τ = 0.5, the derandomised certificate is informative from n = 512 at k = 16 "
                           "(not informative on the grid at k = 4; informative from n = 256 at k = 256);")
    with pytest.raises(ValueError, match="tau=1"):
        chapter.informative_sentence(_informative_table([16], [512]), 1.0)


def test_the_target_sentence_reads_the_interval():
    base = {"head_det_minus_oracle": 0.2, "head_det_minus_oracle_low": 0.18}
    assert "whole interval is within" in chapter.target_sentence({**base, "head_det_minus_oracle_high": 0.22})
    assert "upper end of the interval is not" in chapter.target_sentence({**base, "head_det_minus_oracle_high": 0.26})
    assert "misses" in chapter.target_sentence({"head_det_minus_oracle": 0.3, "head_det_minus_oracle_low": 0.28,
                                                "head_det_minus_oracle_high": 0.32})
    z = {"head_oracle_z": 2.5, "head_oracle_measured": -0.4547, "head_oracle_se": 0.0003, "head_measured": -0.4537}
    assert "record fails" in chapter.oracle_sentence({**z, "head_oracle_passed": False})
    passed = chapter.oracle_sentence({**z, "head_oracle_passed": True})
    assert "lies 0.0010 above the oracle" in passed and "\u22120.4547" in passed and "-0" not in passed
    failed = chapter.oracle_sentence({**z, "head_oracle_passed": False})
    assert "record fails" in failed and failed.endswith("fluctuation.") and "-0" not in failed


def test_profile_dependent_sentences_say_what_was_not_run():
    assert "trains no cell" in chapter.other_temperature_sentence({}, 1.0)
    assert "fewer than three" in chapter.k_sweep_sentence({"k_slope_records": 0}, 2048, 0.5)
    assert "does not train the sweep" in chapter.gap_sweep_sentence({})
    assert chapter.seeds_needed_sentence({}) == ""


def test_exercise_numbers_are_the_smallest_n_and_the_closed_forms():
    nums = chapter.exercise_numbers(VonMisesFisher(3, 2.0), 0.5, 1.0)
    beta = 2.0
    assert nums["lam_avg_star"] == pytest.approx(beta * 4 + beta * math.exp(2 * beta) * 16 / 17 * 4, rel=1e-13)
    assert nums["lam_star_star"] == pytest.approx(4 * beta * 2.0, rel=1e-14)
    for name in ("avg_star", "star_star", "avg_other", "star_other"):
        lam, n = nums[f"lam_{name.split('_')[0]}_{name.split('_')[1]}"], nums[f"n_{name}"]
        assert 2 * rademacher_covering_bound(lam, 0.5, 9, n) < 1.0 <= 2 * rademacher_covering_bound(lam, 0.5, 9, n - 1)
    assert nums["b3_4"] < nums["b4_4"] and nums["b4_16"] < nums["b3_16"]
    kp = [kk * max_negative_weight(kk, 0.5) for kk in (16, 256)]
    assert nums["vector_ratio"] == pytest.approx((3 + math.sqrt(kp[1])) / (3 + math.sqrt(kp[0])), rel=1e-14)


def test_one_thread_on_cpu_restores_the_thread_count():
    before = torch.get_num_threads()
    with one_thread("cpu"):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_the_control_variate_sentence_lists_the_ratios_and_explains_one_below_1():
    from infonce_book.chapters.c5_generalisation import cv_ratio_sentence

    gaps = pd.DataFrame({"model": ["vmf"] * 3, "tau": [0.5] * 3, "k": [16] * 3, "n": [256, 512, 2048],
                         "seeds": [3] * 3, "gap_se": [0.0035, 0.009, 0.018], "gap_cv_se": [0.0127, 0.002, 0.0009]})
    text = cv_ratio_sentence(gaps, 0.5)
    assert "0.28 at n = 256" in text and "4.5 at n = 512" in text and "20 at n = 2,048" in text
    assert "below 1 at n = 256" in text
    assert "below 1" not in cv_ratio_sentence(gaps.iloc[1:], 0.5)
    assert "no cell with two seeds" in cv_ratio_sentence(gaps.assign(gap_se=float("nan")), 0.5)


def _with_direct(grid, det=-0.37, ho=-0.43):
    # the direct and variant columns of the headline cell's seeds (values chosen by hand)
    g = grid.copy()
    seed = g.seed.to_numpy(float)
    for col, base in (("dir_det", det), ("dir_bern", -0.39), ("dir_ho", ho), ("dir_truth", -0.41),
                      ("ddp_det", -0.17), ("ddp_bern", -0.21), ("away_det", -0.2), ("away_bern", -0.22)):
        g[f"{col}_bound"] = base + 0.004 * (seed - 1)
    for col in ("dir_det", "dir_bern", "dir_ho", "dir_truth"):
        g[f"{col}_measured"], g[f"{col}_measured_se"] = -0.452, 0.001
    g["ddp_bern_measured"], g["away_bern_measured"] = -0.44, -0.44
    g["dir_det_variance"] = 0.012
    return g


def test_direct_and_variant_records_decide_against_the_declared_margins():
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    out = chapter.ledger_bound(ledger, _with_direct(_synthetic_grid()), delta=0.05, headlines=HEADLINES,
                               oracle={0.5: -0.454})
    rec = ledger.by_id()
    for rid in ("direct-derandomised", "direct-bernstein", "direct-hold-out", "direct-truth-prior",
                "derandomised-half-prior", "bernstein-half-prior", "derandomised-away-prior"):
        assert rec[f"C6-{rid}-informative-tau0.5"].passed, rid
    # -0.37 is 0.084 above the oracle (margin 0.10); -0.43 is 0.024 above it (margin 0.03)
    assert rec["C6-direct-derandomised-near-oracle-tau0.5"].verdict == "passed"
    assert rec["C6-direct-hold-out-near-oracle-tau0.5"].verdict == "passed"
    assert out["v_dir_det_minus_oracle"] == pytest.approx(0.084) and out["v_dir_det_variance"] == pytest.approx(0.012)
    assert rec["C6-direct-derandomised-holds-vmf"].passed
    ledger2 = Ledger(chapter="test2", profile="smoke", device="cpu", seed=0)
    chapter.ledger_bound(ledger2, _with_direct(_synthetic_grid(), det=-0.34, ho=-0.42), delta=0.05,
                         headlines=HEADLINES, oracle={0.5: -0.454})
    rec2 = ledger2.by_id()
    assert rec2["C6-direct-derandomised-near-oracle-tau0.5"].verdict == "failed"  # 0.114 > 0.10
    assert rec2["C6-direct-hold-out-near-oracle-tau0.5"].verdict == "failed"  # 0.034 > 0.03
    assert "outside the 0.10" in chapter.direct_target_sentence(
        chapter.ledger_bound(Ledger(chapter="t3", profile="smoke", device="cpu", seed=0),
                             _with_direct(_synthetic_grid(), det=-0.34), delta=0.05, headlines=HEADLINES,
                             oracle={0.5: -0.454}))


def test_every_sampled_record_that_predicts_zero_declares_its_resolution():
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    chapter.ledger_bound(ledger, _with_direct(_synthetic_grid(ks=(4, 16, 64, 256))), delta=0.05,
                         headlines=HEADLINES, oracle={0.5: -0.454})
    sampled = [r for r in ledger.records if r.predicted == 0.0 and (r.se or r.n is not None)]
    assert sampled  # the informative records and the slopes are sampled
    missing = [r.id for r in sampled if "resolution" not in r.rule and "margin" not in r.rule]
    assert not missing, missing
    assert not [r.id for r in ledger.records if r.verdict == "inconclusive"]
