"""Training by empirical risk minimisation (``infonce_book.learning.training.fit``)."""


import numpy as np
import pytest
import torch

from infonce_book.datasets import digits
from infonce_book.learning.embeddings import NormalisedLinear, SphereMLP, SphereMLPEnsemble, loss_per_tuple
from infonce_book.learning.training import PlateauStop, fit, fit_ensemble, fit_linear_embedding, fit_linear_embeddings
from infonce_book.models import VonMisesFisher

# --- Theorem 1's terms -------------------------------------------------------------------------












# --- ERM ------------------------------------------------------------------------------------------


def _vmf_tuples(n, k, seed=0):
    m = VonMisesFisher(3, 2.0)
    return m.sample_tuples(n, k, generator=torch.Generator().manual_seed(seed))


def test_fit_reduces_the_empirical_risk_and_stays_in_theta():
    data = _vmf_tuples(128, 4)
    phi = NormalisedLinear(3, 0.5)
    with torch.no_grad():
        phi.set_theta_(phi.random_parameters(torch.Generator().manual_seed(3)))
        before = float(loss_per_tuple(phi, *data, 0.5).mean())
    res = fit(phi, data, 0.5, steps=100, lr=0.02)
    with torch.no_grad():
        after = float(loss_per_tuple(phi, *data, 0.5).mean())
    assert after < before - 1e-3
    assert list(res.history.columns) == ["step", "loss"] and len(res.history) == 100
    assert float(torch.linalg.vector_norm(phi.theta.detach() - phi.center)) <= 0.5 + 1e-12
    assert "FitResult" in repr(res)


def test_fit_is_deterministic_and_accepts_samplers_and_minibatches():
    data = _vmf_tuples(64, 4)
    outs = []
    for _ in range(2):
        phi = NormalisedLinear(3, 0.5)
        fit(phi, data, 0.5, steps=20, lr=0.02, batch_size=16, seed=5)
        outs.append(phi.theta.detach().clone())
    assert torch.equal(outs[0], outs[1])
    images, _ = digits.load_digits()
    phi = SphereMLP(64, 16, 4)
    res = fit(phi, digits.AugmentedTuples(images[:50], 3), 0.5, steps=5, lr=1e-3, batch_size=8)
    assert len(res.history) == 5 and np.isfinite(res.history.loss).all()


def test_fit_rejects_bad_input():
    data = _vmf_tuples(8, 2)
    with pytest.raises(ValueError, match="tau"):
        fit(NormalisedLinear(3, 0.5), data, 0.0)
    with pytest.raises(ValueError, match="lr"):
        fit(NormalisedLinear(3, 0.5), data, 1.0, lr=-1.0)
    with pytest.raises(ValueError, match="steps"):
        fit(NormalisedLinear(3, 0.5), data, 1.0, steps=0)
    with pytest.raises(ValueError, match="data must be"):
        fit(NormalisedLinear(3, 0.5), (data[0], data[1], data[2][0]), 1.0)
    with pytest.raises(ValueError, match="batch_size is required"):
        fit(NormalisedLinear(3, 0.5), lambda b, g: data, 1.0)
    with pytest.raises(ValueError, match="variant"):
        fit(NormalisedLinear(3, 0.5), data, 1.0, variant="both")


# --- digits ------------------------------------------------------------------------------------------












# --- the stopping rule and ensembles -------------------------------------------------------------


def test_plateau_rule_compares_with_the_value_window_checks_earlier():
    rule = PlateauStop(lambda m: 0.0, every=10, window=2, rtol=0.01, min_steps=30)
    assert not rule.met([1.0, 0.5], 20)  # fewer than window + 1 checks
    assert not rule.met([1.0, 0.5, 0.499], 30)  # |0.499 - 1.0| > 1% of 1.0
    assert rule.met([1.0, 0.5, 0.499, 0.496], 40)  # |0.496 - 0.5| <= 0.005
    assert not PlateauStop(lambda m: 0.0, window=1, rtol=0.01, min_steps=100).met([1.0, 1.0], 50)
    with pytest.raises(ValueError, match="rtol"):
        PlateauStop(lambda m: 0.0, rtol=0.0)
    with pytest.raises(TypeError, match="monitor"):
        PlateauStop(None)


def test_fit_with_a_stopping_rule_stops_at_the_plateau_and_without_one_runs_all_steps():
    data = _vmf_tuples(128, 4)
    calls = []

    def monitor(phi):  # a risk that levels off after the third check
        calls.append(1)
        return [3.0, 2.0, 1.5, 1.5, 1.5, 1.5][len(calls) - 1]

    res = fit(NormalisedLinear(3, 0.5), data, 0.5, steps=100, lr=0.02,
              stop=PlateauStop(monitor, every=5, window=1, rtol=1e-3))
    # checks at steps 5, 10, 15, 20: the values 3, 2, 1.5, 1.5 -> stop after step 20
    assert len(res.history) == 20 and res.converged is True
    assert res.history.monitor.notna().sum() == 4 and res.history.monitor.iloc[-1] == 1.5
    res = fit(NormalisedLinear(3, 0.5), data, 0.5, steps=12, lr=0.02)
    assert res.converged is None and list(res.history.columns) == ["step", "loss"] and len(res.history) == 12
    with pytest.raises(TypeError, match="PlateauStop"):
        fit(NormalisedLinear(3, 0.5), data, 0.5, steps=2, stop=5)


def test_ensemble_members_are_the_sphere_mlps_of_their_seeds():
    ens = SphereMLPEnsemble([3, 8], 64, 16, 4)
    x = torch.rand(2, 7, 64)
    out = ens(x)
    for s, seed in enumerate([3, 8]):
        single = SphereMLP(64, 16, 4, seed=seed)
        assert torch.allclose(out[s], single(x[s]), atol=1e-6)
        assert torch.equal(ens.member(s).l1.weight, single.l1.weight)
    assert torch.allclose(ens(x[0])[1], SphereMLP(64, 16, 4, seed=8)(x[0]), atol=1e-6)  # shared inputs
    with pytest.raises(ValueError, match="shape"):
        ens(torch.rand(3, 7, 64))
    with pytest.raises(ValueError, match="member"):
        ens.member_state(2)


def test_a_member_trained_in_an_ensemble_follows_the_steps_it_would_follow_alone():
    # Adam is coordinate-wise and the members' parameters are disjoint: the ensemble of two
    # members gives member 1 exactly the trajectory of a one-member ensemble with its data.
    g = torch.Generator().manual_seed(0)
    x, xp, xn = torch.rand(2, 8, 64, generator=g), torch.rand(2, 8, 64, generator=g), torch.rand(2, 5, 64, generator=g)
    pair = SphereMLPEnsemble([0, 1], 64, 16, 4)
    fit_ensemble(pair, lambda b, gen: (x, xp, xn), [0.5, 0.2], steps=25, lr=0.01, batch_size=8)
    alone = SphereMLPEnsemble([1], 64, 16, 4)
    fit_ensemble(alone, lambda b, gen: (x[1:], xp[1:], xn[1:]), [0.2], steps=25, lr=0.01, batch_size=8)
    for name, value in alone.member_state(0).items():
        assert torch.allclose(pair.member_state(1)[name], value, atol=1e-6), name
    # and the step lowers the member's InfoNCE at its own temperature (here tau = 0.2)
    def loss(phi):  # InfoNCE at tau = 0.2 with the 5 shared negatives, written out
        with torch.no_grad():
            a, p, n = phi(x[1]), phi(xp[1]), phi(xn[1])
            s_pos = (a * p).sum(-1) / 0.2
            return float((torch.logsumexp(torch.cat([s_pos[:, None], a @ n.T / 0.2], 1), 1) - s_pos).mean())

    assert loss(pair.member(1)) < loss(SphereMLP(64, 16, 4, seed=1))


def test_fit_ensemble_freezes_a_member_once_the_rule_is_met():
    g = torch.Generator().manual_seed(1)
    x, xp, xn = torch.rand(2, 8, 64, generator=g), torch.rand(2, 8, 64, generator=g), torch.rand(2, 5, 64, generator=g)
    values = iter([[2.0, 3.0], [1.0, 2.0], [1.0, 1.5], [1.0, 1.2], [1.0, 1.1]])
    ens = SphereMLPEnsemble([0, 1], 64, 16, 4)
    res = fit_ensemble(ens, lambda b, gen: (x, xp, xn), [0.5, 0.5], steps=25, lr=0.01, batch_size=8,
                       stop=PlateauStop(lambda e: next(values), every=5, window=1, rtol=1e-6))
    # member 0: values 2, 1, 1 -> met at the third check (step 15); member 1 never
    assert res.steps_run.tolist() == [15, 25] and res.converged.tolist() == [True, False]
    frozen = {k: v.clone() for k, v in ens.member_state(0).items()}
    assert (res.history[res.history.member == 0].step.max(), res.history[res.history.member == 1].step.max()) == (14, 24)
    assert len(res.monitor) == 10 and "EnsembleFitResult" in repr(res)
    # the frozen member's weights are those at its stop: retraining 15 steps alone gives them
    alone = SphereMLPEnsemble([0], 64, 16, 4)
    fit_ensemble(alone, lambda b, gen: (x[:1], xp[:1], xn[:1]), [0.5], steps=15, lr=0.01, batch_size=8)
    for name, value in alone.member_state(0).items():
        assert torch.allclose(frozen[name], value, atol=1e-6), name


def test_fit_ensemble_rejects_bad_input():
    ens = SphereMLPEnsemble([0, 1], 64, 8, 4)
    data = (torch.rand(2, 4, 64), torch.rand(2, 4, 64), torch.rand(2, 3, 64))
    with pytest.raises(ValueError, match="one temperature per member"):
        fit_ensemble(ens, lambda b, g: data, [0.5], steps=2, batch_size=4)
    with pytest.raises(ValueError, match="schedule"):
        fit_ensemble(ens, lambda b, g: data, [0.5, 0.5], steps=2, batch_size=4, schedule="linear")
    with pytest.raises(ValueError, match="sampler must return"):
        fit_ensemble(ens, lambda b, g: (data[0][:1], data[1][:1], data[2][:1]), [0.5, 0.5], steps=2, batch_size=4)


def test_batched_linear_fits_equal_the_single_fits_they_replace():
    # Oracle: fit_linear_embedding, one fit at a time, with the set's seed.
    m = VonMisesFisher(3, 4.0)
    out = fit_linear_embeddings(m, [0.1, 0.5], n_sets=2, n_train=16, k=4, steps=20, seed=3, device="cpu",
                                n_test=200)
    for j in range(2):
        for i, tau in enumerate([0.1, 0.5]):
            ref = fit_linear_embedding(m, tau, n_train=16, k=4, steps=20, seed=3 + j, device="cpu", n_test=200)
            assert torch.allclose(out[j][i]["A"], ref["A"], atol=1e-12)
            for key in ("train_risk", "test_risk", "test_se"):
                assert out[j][i][key] == pytest.approx(ref[key], rel=1e-12), key
    with pytest.raises(ValueError, match="n_sets"):
        fit_linear_embeddings(m, [0.5], n_sets=0, n_train=4, k=2, device="cpu")
