"""Chapter 6 (c6_digits): the ledger rules and summaries of the page on small tables."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from infonce_book.chapters import c6_digits as chapter
from infonce_book.chapters.c6_digits import prose
from infonce_book.datasets import digits
from infonce_book.experiment.ledger import Ledger


@pytest.fixture
def led(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path))
    return Ledger("c6_digits", "smoke", "cpu", 0)


def _gap_table(changes_by_tau):
    rows = []
    for tau, changes in changes_by_tau.items():
        for seed, change in enumerate(changes):
            for k, gap, top1 in ((16, 0.05, 0.5), (64, 0.10, 0.6), (256, 0.10 + change, 0.7)):
                rows.append({"tau": tau, "k": k, "seed": seed, "gap": gap, "top1": top1 + 0.01 * seed,
                             "train_risk": 1.0 + k / 1000, "steps_run": 1000, "converged": seed % 2 == 0,
                             "nn_class": 0.9})
    return pd.DataFrame(rows)


def test_gap_levels_off_only_when_the_90_interval_is_inside_the_margin(led):
    # tau 0.5: changes 0.001 +- 0.002 -> 90% interval well inside +-0.02: equivalent.
    # tau 0.1: changes spread widely, mean 0.01 -> interval contains 0 but leaves the margin:
    # not shown equivalent (an interval containing 0 is not evidence).
    setup = chapter.DigitsSetup(margin=0.02, alpha=0.05)
    table = _gap_table({0.5: [0.001, -0.001, 0.003, 0.0, 0.002], 0.1: [0.05, -0.03, 0.04, -0.02, 0.01]})
    out = chapter.ledger_gap(led, table, setup)
    rec = led.by_id()
    eq, noteq = rec["C7-digits-gap-levels-tau0.5"], rec["C7-digits-gap-levels-tau0.1"]
    assert eq.passed and not noteq.passed
    assert noteq.ci_low < 0.0 < noteq.ci_high  # contains 0, yet does not pass
    d = np.array([0.001, -0.001, 0.003, 0.0, 0.002])
    half = 2.131846786326649 * d.std(ddof=1) / math.sqrt(5)  # t_{0.95, 4} (tables)
    assert eq.measured == pytest.approx(d.mean()) and eq.ci_high == pytest.approx(d.mean() + half, rel=1e-9)
    assert eq.level == pytest.approx(0.9) and eq.n == 5
    assert eq.params["delta"] == 0.02 and eq.params["n_seeds"] == 5 and eq.params["k_pair"] == [64, 256]
    assert eq.params["training_risk_reached"] == {"16": 1.016, "64": 1.064, "256": 1.256}
    assert out["verdict_hi"] == "equivalent" and out["verdict_lo"] == "not shown equivalent"
    assert out["gap_hi_k1"] == pytest.approx(0.10) and out["diff_hi"] == pytest.approx(d.mean())
    assert rec["C7-digits-top1-slope-tau0.5"].passed  # accuracy rises with k
    # the page's summary names each temperature once, the highest first
    assert out["verdict_summary"] == "equivalent at τ = 0.5 and not shown equivalent at τ = 0.1"


def test_gap_summary_with_one_temperature_names_it_once(led):
    setup = chapter.DigitsSetup(margin=0.02, alpha=0.05)
    out = chapter.ledger_gap(led, _gap_table({0.5: [0.001, -0.001, 0.003, 0.0, 0.002]}), setup)
    assert out["verdict_summary"] == "equivalent at τ = 0.5"


def test_seeds_needed_matches_the_t_interval_condition():
    # mean 0.01, sd 0.01, margin 0.02: n = 4 gives 0.01 + t_{0.95,3} 0.01/2 = 0.01 + 2.3534 * 0.005
    # = 0.0218 > 0.02; n = 5 gives 0.01 + 2.1318 * 0.01/sqrt(5) = 0.0195 < 0.02.
    d = np.array([0.0, 0.01, 0.02]) + 0.0  # mean 0.01, sd 0.01
    assert chapter.seeds_needed(d, 0.02) == 5.0
    assert chapter.seeds_needed(d, 0.009) == math.inf  # the mean itself exceeds the margin


def _rate_table(c1=2.0, c2=-4.0, tau=0.5):
    # an exact two-term bias with small relative errors, and a positive term with its limit
    ks = 2 ** np.arange(0, 13)
    bias = c1 / ks + c2 / ks**2
    return pd.DataFrame({"tau": tau, "k": ks, "bias": bias, "bias_se": 1e-3 * np.abs(bias),
                         "bias_low": bias - 2e-3 * np.abs(bias), "bias_high": bias + 2e-3 * np.abs(bias),
                         "estimator": "cv", "kbias": ks * bias, "c1": c1, "c1_low": c1 - 0.1, "c1_high": c1 + 0.1,
                         "c2": c2, "diff": ks * bias - c1, "diff_low": ks * bias - c1 - 0.01,
                         "diff_high": ks * bias - c1 + 0.01, "pos_k": 3.0 - 1.0 / ks, "pos_low": 0.0,
                         "pos_high": 0.0, "u1": 3.0, "u1_low": 2.9, "u1_high": 3.1, "pos_diff": -1.0 / ks,
                         "pos_diff_low": -1.0 / ks - 0.01, "pos_diff_high": -1.0 / ks + 0.01, "pos_c2": -1.0,
                         "top1": 1.0 / ks, "top1_low": 0.0, "top1_high": 1.0, "xent": 0.0, "xent_low": 0.0,
                         "xent_high": 0.0, "linf": -1.0, "n_images": 100})


def test_rate_records_compare_with_c1_with_the_declared_truncation(led):
    out = chapter.ledger_rate(led, _rate_table())
    rec = led.by_id()
    kb = rec["C1-digits-kbias-tau0.5"]
    # at k = 4096, k bias = c1 + c2/k: inside c1 + [diff -+ 0.01] -+ |c2|/k
    assert kb.predicted == 2.0 and kb.measured == pytest.approx(2.0 - 4.0 / 4096) and kb.passed
    assert kb.ci_high - kb.ci_low == pytest.approx(0.02 + 2 * 4.0 / 4096)
    sl = rec["C1-digits-slope-tau0.5"]
    # fitted where |c2|/(|c1| k) <= 0.1, i.e. k >= 20: k = 32 .. 4096
    assert sl.params["k_min"] == 32 and sl.passed and sl.measured == pytest.approx(-1.0, abs=0.02)
    assert rec["C2-digits-positive-term-tau0.5"].passed
    assert out["k_01"] == 32.0 and out["k_01_pred"] == pytest.approx(20.0)  # first k with |bias| < 0.1
    table = chapter.needed_negatives({0.5: _rate_table()})
    assert table["k for 0.01 nats (measured)"].iloc[0] == 256.0  # 2/256 - 4/65536 < 0.01 <= 2/128 - ...


def test_a_wrong_c1_fails_the_rate_record(led):
    bad = _rate_table()
    bad["c1"] = 2.5  # the prediction is off by 0.5, far outside the interval
    bad["diff"], bad["diff_low"], bad["diff_high"] = (bad.kbias - 2.5, bad.kbias - 2.51, bad.kbias - 2.49)
    chapter.ledger_rate(led, bad)
    assert not led.by_id()["C1-digits-kbias-tau0.5"].passed


def test_kl_record_is_one_sided_and_roles_cover_one_temperature(led):
    kl = pd.DataFrame({"tau": [0.5, 1.0], "kl": [0.3, 0.05], "kl_low": [0.29, 0.04], "kl_high": [0.31, 0.06],
                       "bound": [2.0, 0.5], "ratio_high": [0.155, 0.12]})
    out = chapter.ledger_kls(led, {0.5: kl})
    rec = led.records[-1]
    assert rec.alias == "C3-digits-bound-tau0.5" and rec.passed and rec.ci_high == pytest.approx(0.155)
    # one training temperature: both roles are filled with it
    assert out["kl_ratio_max_lo"] == out["kl_ratio_max_hi"] == pytest.approx(0.155)
    assert out["kl_own_hi"] == pytest.approx(0.3) and out["kl_verdict"] == "holds with room to spare"
    assert out["kl_ratio_text"] == "0.155 for the embedding trained at τ = 0.5"  # one embedding, named once
    chapter.ledger_kl(led, kl.assign(ratio_high=[1.2, 0.12]), 0.5)
    assert not led.records[-1].passed  # an upper end above the bound fails


def test_kl_ratio_text_with_two_temperatures_names_each_embedding(led):
    kl = pd.DataFrame({"tau": [0.5, 1.0], "kl": [0.3, 0.05], "kl_low": [0.29, 0.04], "kl_high": [0.31, 0.06],
                       "bound": [2.0, 0.5], "ratio_high": [0.155, 0.12]})
    out = chapter.ledger_kls(led, {0.5: kl, 0.1: kl.assign(ratio_high=[0.4, 0.2])})
    assert out["kl_ratio_text"] == ("0.155 for the embedding trained at τ = 0.5 and "
                                    "0.400 for the one trained at τ = 0.1")


def test_learned_embeddings_phrase_counts_the_temperatures():
    assert chapter.learned_embeddings_phrase([0.5]) == "the learned embedding"
    assert chapter.learned_embeddings_phrase([0.5, 0.5]) == "the learned embedding"  # distinct taus
    assert chapter.learned_embeddings_phrase([0.1, 0.5]) == ("the two learned embeddings "
                                                             "(one per training temperature)")
    smoke, standard = (chapter.describe(chapter.DigitsSetup(), chapter.SIZES[p], [0.5]) for p in ("smoke", "standard"))
    assert smoke["learned_embeddings"] == "the learned embedding"
    assert standard["learned_embeddings"].startswith("the two learned embeddings")


def test_member_state_round_trips_into_a_sphere_mlp():
    setup = chapter.DigitsSetup(hidden=8, dim_out=4)
    phi = chapter.SphereMLP(64, 8, 4, seed=3)
    state = {name: t.numpy().tolist() for name, t in phi.state_dict().items()}
    trained = pd.DataFrame([{"k": 64, "tau": 0.5, "seed": 0, "state": state}])
    again = chapter.embedding_from_state(setup, chapter.member_state(trained, 64, 0.5), "cpu")
    x = torch.rand(5, 64)
    assert torch.allclose(again(x), phi(x))
    with pytest.raises(ValueError, match="no trained embedding"):
        chapter.member_state(trained, 16, 0.5)


def test_records_of_the_analysed_embedding_carry_its_training(led):
    trained = pd.DataFrame([{"k": 256, "tau": 0.5, "seed": 0, "train_monitor": 3.96, "steps_run": 1100,
                             "converged": True},
                            {"k": 256, "tau": 0.5, "seed": 1, "train_monitor": 3.97, "steps_run": 1500,
                             "converged": False}])
    out = chapter.ledger_rates(led, {0.5: _rate_table()}, trained)
    rec = led.by_id()["C1-digits-kbias-tau0.5"]
    assert rec.params["training_risk_reached"] == 3.96 and rec.params["steps_run"] == 1100
    assert rec.params["n_seeds"] == 1 and rec.params["stopped_by_rule"] is True
    assert out["c1_lo"] == out["c1_hi"] == 2.0 and out["temperature_note"] == ""


def test_one_temperature_note_only_for_a_single_temperature():
    assert chapter.one_temperature_note([0.1, 0.5]) == ""
    note = chapter.one_temperature_note([0.5, 0.5])  # distinct taus count
    assert note.startswith(" ") and "τ = 0.5" in note and "one temperature only" in note


def test_generated_sentences_of_the_page():
    assert prose.stopped_text(3, 3) == "all 3 runs met the rule"
    assert prose.stopped_text(0, 3) == "no run met the rule" and prose.stopped_text(2, 3) == "2 of 3 runs met the rule"
    assert prose.gap_change_text(-0.01, 0.01) == "" and "grew" in prose.gap_change_text(0.001, 0.01)
    assert "shrank" in prose.gap_change_text(-0.01, -0.001)
    assert prose.temperature_note(2.0, 1.0, True).startswith("The lower temperature")
    assert prose.temperature_note(2.0, 1.0, False) == prose.temperature_note(1.0, 2.0, True) == ""
    assert [prose.kl_verdict_text(w) for w in (0.5, 1.0, 1.01)] == ["holds with room to spare", "holds",
                                                                    "is exceeded (see the records)"]
    assert prose.failed_note(6, 6) == "" and "failed" in prose.failed_note(5, 6)
    assert prose.seeds_text(7.0) == "7" and prose.seeds_text(math.inf).startswith("none")


def test_image_counts_come_from_the_dataset_constant():
    out = chapter.describe(chapter.DigitsSetup(n_train=1000), chapter.SIZES["smoke"], [0.5])
    assert out["n_images"] == digits.N_IMAGES
    assert out["n_heldout"] == digits.N_IMAGES - 1000 and out["n_eval"] == digits.N_IMAGES - 1000


def test_the_opening_diagram_plants_one_positive_and_leaves_the_global_random_state_alone():
    import matplotlib.pyplot as plt

    state = torch.random.get_rng_state()
    fig = chapter.fig_idea(k=5, tau=0.1, seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    titles = [ax.get_title() for ax in fig.axes]
    assert titles.count(r"$x^+$") == 1 and sum(t.startswith(r"$x^-_") for t in titles) == 5
    weights = [p.get_height() for p in fig.axes[-1].patches]
    assert len(weights) == 6 and math.isclose(sum(weights), 1.0, rel_tol=1e-5)
    plt.close(fig)
    for bad in ({"k": 0}, {"k": 13}, {"k": 2.5}, {"tau": 0.0}):
        with pytest.raises(ValueError, match="k must|tau must"):
            chapter.fig_idea(**bad)


def test_holdout_certificates_are_recorded_with_their_verdicts_and_sentences(led):
    # two cells: k = 16 clearly below log 17 on every seed; k = 256 above log 257 on one seed
    rows, evals = [], []
    for seed in range(3):
        for k, cert, needed in ((16, math.log(17) - 0.9 - 0.01 * seed, 200.0), (256, math.log(257) - 0.2 + 0.3 * seed,
                                                                               2.5e4)):
            rows.append({"k": k, "tau": 0.5, "seed": seed, "groups": 899 // (k + 1), "heldout_mean": cert - 0.5,
                         "bound": cert, "uniform": math.log(k + 1), "upper": 9.0, "images_needed": needed,
                         "delta": 0.05})
            evals.append({"k": k, "tau": 0.5, "seed": seed, "test_risk": cert - 0.4})
    table = chapter.ledger_certificates(led, pd.DataFrame(rows), pd.DataFrame(evals))
    rec = led.by_id()
    assert rec["6.C6-digits-holdout-holds"].passed and rec["6.C6-digits-holdout-holds"].measured == pytest.approx(0.4)
    assert rec["6.C6-digits-holdout-informative-k16-tau0.5"].passed
    assert not rec["6.C6-digits-holdout-informative-k256-tau0.5"].passed
    assert rec["6.C6-digits-holdout-informative-k16-tau0.5"].params["delta"] == 0.05  # the run's level
    assert list(table.passed) == [True, False] and list(table.groups) == [52, 3]
    text = prose.certificate_text(table, 1797, 899)
    assert "below the uniform search" in text and "(k, τ) = (16, 0.5);" in text and "0.91 nats below" in text
    assert "not informative at (k, τ) = (256, 0.5), whose record fails" in text and "only 3 groups" in text
    assert "would need are about 25,000 at (256, 0.5);" in text and "1,797" in text
    assert "_" not in text  # no code names in the page's prose


def test_group_losses_are_the_mean_infonce_loss_of_disjoint_groups():
    from infonce_book.chapters.c6_digits.runners import _group_losses

    setup = chapter.DigitsSetup()
    images, _ = digits.load_digits()
    phi = chapter.SphereMLP(64, setup.hidden, setup.dim_out)
    vals = _group_losses(phi, images[:40], 4, 0.5, 7, setup)
    assert vals.shape == (8,)  # 40 images, groups of k + 1 = 5
    assert np.all(vals <= math.log1p(4 * math.exp(4.0))) and np.all(vals >= math.log1p(4 * math.exp(-4.0)))
    assert np.array_equal(vals, _group_losses(phi, images[:40], 4, 0.5, 7, setup))  # seeded
    # Group 0 recomputed from the InfoNCE formula in float64: the same seeded partition and views
    # (anchor: view 0; positive: view 1; negatives: view 2 of the group's other images).
    order = torch.randperm(40, generator=torch.Generator().manual_seed(7))[:40]
    bank = digits.AugmentationBank(images[:40][order], 3, torch.Generator().manual_seed(7), **setup.augment)
    with torch.no_grad():
        emb = phi(bank.views).double().reshape(8, 5, 3, -1)[0]
    losses = [torch.logsumexp(torch.stack([emb[i, 0] @ emb[i, 1]] + [emb[i, 0] @ emb[j, 2] for j in range(5) if j != i])
                              / 0.5, 0) - emb[i, 0] @ emb[i, 1] / 0.5 for i in range(5)]
    assert float(torch.stack(losses).mean()) == pytest.approx(float(vals[0]), rel=1e-12)
