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
        expected = sum(len(b["taus"]) * len(b["ks"]) * len(b["ns"]) * b["seeds"] for b in size["blocks"])
        assert len(cells) == expected, profile
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
    assert r.sharp_search_bias == pytest.approx(min(r.bias_second, r.bias_third, r.bias_two_term), rel=1e-14)
    # every bound lies above the measured value it bounds, and below nothing it should not
    assert r.sharp_bound >= r.search_ce and r.pb_bound >= r.pb_measured
    assert r.pb_emp_upper >= r.pb_emp_risk and r.pb_risk_upper >= r.pb_emp_upper
    # the certificate is the PAC-Bayes bound on the risk of Q, minus log k, plus the search bias
    assert r.pb_bound == pytest.approx(r.pb_risk_upper - math.log(k) + r.sharp_search_bias, rel=1e-12)
    assert r.pb_kl >= 0 and r.pb_post_scale <= r.pb_prior_scale and r.pb_prior_scale in chapter.PRIOR_SCALES
    assert r.trivial == 2 * beta


def test_a_gaussian_cell_has_the_capped_search_term_and_no_certificate():
    model = GaussianModel(8, 0.8)
    r = _tiny_cell(model, "euclid", tau=1.0, k=4, n=64)
    assert r.sharp_search_bias == 2.0  # E m^2 = 0.36^-8: the cap 2 beta
    assert "pb_bound" not in r.index
    beta, k = 1.0, 4
    omega = min(1.0, k * max_negative_weight(k, 1.0))
    assert r.lambda_star_rms == pytest.approx(beta * math.sqrt(8) * (3 * omega + k * max_negative_weight(k, 1.0)))


def _synthetic_grid(violate=False):
    rows = []
    for seed in range(3):
        for k in (16, 256):
            rows.append({"model": "vmf", "n": 2048, "k": k, "tau": 0.5, "seed": seed, "search_ce": -0.45,
                         "search_se": 0.002, "test_risk": 2.3, "test_se": 0.01, "old_bound": 100.0,
                         "old_search_bias": 8.4, "sharp_bound": 1.5 + 0.01 * seed, "sharp_search_bias": 0.3,
                         "old_complexity": 92.0, "sharp_complexity": 1.4,
                         "pb_bound": (-0.6 if violate and seed == 0 else 0.25) - 0.1 * (k == 256),
                         "pb_measured": -0.44 + 0.01 * seed, "pb_measured_se": 0.002, "trivial": 4.0,
                         "pb_risk_upper": 2.7, "pb_emp_upper": 2.4, "pb_emp_risk": 2.38})
    return pd.DataFrame(rows)


def test_ledger_rules_pass_and_fail_as_documented(tmp_path):
    ledger = Ledger(chapter="test", profile="smoke", device="cpu", seed=0)
    out = chapter.ledger_bound(ledger, _synthetic_grid(), delta=0.05, headline={"n": 2048, "k": 16, "tau": 0.5})
    rec = {r.id: r for r in ledger.records}
    assert all(r.passed for r in rec.values())
    assert rec["C6-sharp-nonvacuous-n2048-k16"].predicted == 4.0
    assert rec["C6-pac-bayes-slack-n2048-k16"].measured == pytest.approx(0.25 + 0.44 - 0.01, abs=1e-12)
    assert "C6-pac-bayes-k-uniform-tau0.5-n2048" in rec
    assert out["head_sharp"] == pytest.approx(1.51)
    # the slack decomposes exactly: bias + kl step + Monte Carlo step + rest
    parts = out["head_pb_bias"] + out["head_pb_kl_step"] + out["head_pb_mc_step"] + out["head_pb_rest"]
    assert out["head_pb_kl_step"] == pytest.approx(0.3) and out["head_pb_mc_step"] == pytest.approx(0.02)
    assert out["k_uniform_records"] == 1 and out["vmf_sharp_min"] == pytest.approx(1.5)
    assert math.isfinite(parts)
    ledger2 = Ledger(chapter="test2", profile="smoke", device="cpu", seed=0)
    chapter.ledger_bound(ledger2, _synthetic_grid(violate=True), delta=0.05, headline={"n": 2048, "k": 16, "tau": 0.5})
    rec2 = {r.id: r for r in ledger2.records}
    assert not rec2["C6-pac-bayes-holds-vmf"].passed  # a certificate below the measured value fails


def test_nonvacuous_n_is_the_smallest_grid_n_below_2_beta():
    summary = pd.DataFrame({"model": "vmf", "tau": 0.5, "k": 16, "n": [256, 512, 1024],
                            "old_bound": [200.0, 150.0, 120.0], "sharp_bound": [4.5, 3.5, 2.0],
                            "pb_bound": [0.9, 0.5, 0.3], "trivial": 4.0})
    table = chapter.nonvacuous_n(summary)
    assert table.iloc[0]["old"] is None and table.iloc[0]["sharp"] == 512 and table.iloc[0]["PAC-Bayes"] == 256
    glued = chapter.nonvacuous_glue(table, 0.5)
    assert glued["sharp_k16"] == "512" and glued["old_k16"] == "none on the grid"
    assert "sharp_k4" not in glued  # a k the profile did not train gets no key (and no prose)


def _nonvacuous_table(ks, ns):
    # smallest n per bound (None: vacuous on the whole grid), in the layout of nonvacuous_n
    return pd.DataFrame([{"tau": 0.5, "k": k, "ns": "256, 512", "old": None, "sharp": n, "PAC-Bayes": 256}
                         for k, n in zip(ks, ns)])


def test_nonvacuous_sentence_names_only_the_trained_k_one_k():
    text = chapter.nonvacuous_sentence(_nonvacuous_table([16], [512]), 0.5)
    assert text == ("At τ = 0.5, the sharp bound is non-vacuous from n = 512 at k = 16; the old bound is "
                    "vacuous on the whole grid at k = 16; the certificate is non-vacuous from n = 256 at k = 16.")
    assert "profile" not in text and "(" not in text


def test_nonvacuous_sentence_names_only_the_trained_k_three_ks():
    text = chapter.nonvacuous_sentence(_nonvacuous_table([4, 16, 256], [256, 512, None]), 0.5)
    assert text == ("At τ = 0.5, the sharp bound is non-vacuous from n = 512 at k = 16 (non-vacuous from "
                    "n = 256 at k = 4; vacuous on the whole grid at k = 256); the old bound is vacuous on the "
                    "whole grid at k = 4, 16 and 256; the certificate is non-vacuous from n = 256 at k = 4, 16 "
                    "and 256.")
    with pytest.raises(ValueError, match="tau=1"):
        chapter.nonvacuous_sentence(_nonvacuous_table([16], [512]), 1.0)


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
