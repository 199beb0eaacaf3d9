"""C6/C7: Theorem 1's terms, ERM training, and the digits data (book chapters c6_generalisation
and c7_digits)."""

import math

import numpy as np
import pytest
import torch

from infonce_book import digits, generalisation
from infonce_book.bounds import loss_range, search_bias_constant, theorem1_terms
from infonce_book.embeddings import NormalisedLinear, SphereMLP, loss_per_tuple
from infonce_book.models import VonMisesFisher
from infonce_book.training import fit

# --- Theorem 1's terms -------------------------------------------------------------------------


def test_loss_range_hand_values():
    beta = 2.0
    assert loss_range(3, 0.5) == pytest.approx(math.log((1 + 3 * math.exp(2 * beta)) / (1 + 3 * math.exp(-2 * beta))),
                                               rel=1e-14)
    assert loss_range(1, 1.0, variant="decoupled") == 4.0
    for k in (1, 10, 10**6, 10**15):
        assert loss_range(k, 0.5) < 4 * beta
    assert loss_range(10**15, 0.5) == pytest.approx(4 * beta, rel=1e-6)
    assert loss_range(10**6, 0.001) < 4000.0  # no overflow at a tiny temperature


@pytest.mark.parametrize("k, s0, sj", [(1, 1.0, -1.0), (1, -1.0, 1.0), (7, -1.0, 1.0), (7, 1.0, -1.0)])
def test_loss_range_is_attained(k, s0, sj):
    from infonce_book.losses import info_nce_from_similarities

    tau = 0.7
    val = float(info_nce_from_similarities(torch.tensor([s0], dtype=torch.float64),
                                           torch.full((1, k), sj, dtype=torch.float64), tau))
    lo, hi = math.log1p(k * math.exp(-2 / tau)), math.log1p(k * math.exp(2 / tau))
    assert val == pytest.approx(lo if s0 > sj else hi, rel=1e-12)
    assert hi - lo == pytest.approx(loss_range(k, tau), rel=1e-12)


def test_theorem1_terms_hand_values():
    t = theorem1_terms(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1, search_constant=20.0)
    B = loss_range(16, 1.0)
    assert t["empirical_risk"] == pytest.approx(3.0 - math.log(16), rel=1e-14)
    assert t["complexity"] == pytest.approx(0.2)
    assert t["confidence"] == pytest.approx(B * math.sqrt(math.log(20) / 2000), rel=1e-14)
    assert t["search_bias"] == pytest.approx(20.0 / 16)
    assert t["bound"] == pytest.approx(3.0 - math.log(16) + 0.2 + t["confidence"] + 1.25, rel=1e-14)
    assert t["bound_on"] == "E H(M_k, Q_k) - log k"
    no_search = theorem1_terms(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1)
    assert math.isnan(no_search["search_bias"]) and no_search["bound_on"] == "L_k - log k"
    assert no_search["bound"] == pytest.approx(t["bound"] - 1.25)


@pytest.mark.parametrize("bad, match", [(dict(delta=0.0), "delta"), (dict(delta=1.5), "delta"),
                                         (dict(rademacher=-1.0), "rademacher"), (dict(k=0), "k"),
                                         (dict(n=0), "n"), (dict(tau=0.0), "tau"),
                                         (dict(train_risk=float("nan")), "train_risk")])
def test_theorem1_terms_rejects_bad_input(bad, match):
    args = dict(train_risk=3.0, k=16, n=1000, tau=1.0, delta=0.05, rademacher=0.1)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        theorem1_terms(**args)


def test_search_constant_formula_and_validity_on_the_vmf_model():
    kappa, tau = 2.0, 0.5
    z = lambda b: math.sinh(b) / b  # noqa: E731  (Z_3)
    second = z(2 * kappa) / z(kappa) ** 2
    expected = 2 / tau * math.sqrt(second - 1) * math.sqrt(second) / (math.exp(-kappa) / z(kappa)) + math.exp(2 / tau)
    C = generalisation.vmf_search_constant(3, kappa, tau)
    assert C == pytest.approx(expected, rel=1e-10)
    # Corollary c6-cor-search-constant: |E H - L_k| <= C / k, checked with the exact curves
    model = VonMisesFisher(3, kappa)
    ks = [1, 4, 64, 1024]
    search = model.search_cross_entropy_curve(ks, tau)
    risk = [model.exact_centred_risk(k, tau) for k in ks]
    for k, h, r in zip(ks, search, risk):
        assert abs(h - r) <= C / k
    with pytest.raises(ValueError, match="m_min"):
        search_bias_constant(1.0, sd_m=1.0, second_moment_m=2.0, m_min=0.0)


# --- ERM ------------------------------------------------------------------------------------------


def _vmf_tuples(n, k, seed=0):
    m = VonMisesFisher(3, 2.0)
    return generalisation._c6_tuples(m, n, k, torch.Generator().manual_seed(seed), "cpu")


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


def test_digits_loader_and_split():
    images, labels = digits.load_digits()
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,)
    assert float(images.min()) == 0.0 and float(images.max()) == 1.0
    assert set(labels.tolist()) == set(range(10))
    tr, trl, te, tel = digits.split(images, labels, 1000, seed=0)
    assert tr.shape[0] == 1000 and te.shape[0] == 797 and trl.shape[0] == 1000 and tel.shape[0] == 797
    tr2, *_ = digits.split(images, labels, 1000, seed=0)
    assert torch.equal(tr, tr2)
    with pytest.raises(ValueError, match="n_train"):
        digits.split(images, labels, 1797)


def test_augment_shapes_ranges_and_determinism():
    images, _ = digits.load_digits()
    x = images[:32]
    a1 = digits.augment(x, torch.Generator().manual_seed(1))
    a2 = digits.augment(x, torch.Generator().manual_seed(1))
    a3 = digits.augment(x, torch.Generator().manual_seed(2))
    assert a1.shape == x.shape and torch.equal(a1, a2) and not torch.equal(a1, a3)
    assert float(a1.min()) >= 0.0 and float(a1.max()) <= 1.0
    # no rotation, no shift, no noise: the identity (bilinear resampling at the pixel centres)
    ident = digits.augment(x, torch.Generator().manual_seed(1), max_shift=0.0, max_rotation=0.0, noise=0.0)
    assert torch.allclose(ident, x, atol=1e-6)
    # a one-pixel shift moves the image's centre of mass by at most about one pixel
    cols = torch.arange(8.0)
    com = lambda im: (im.sum(1) * cols).sum(-1) / im.sum((1, 2))  # noqa: E731
    shifted = digits.augment(x, torch.Generator().manual_seed(1), max_rotation=0.0, noise=0.0)
    assert float((com(shifted) - com(x)).abs().max()) <= 1.5


def test_augment_and_sampler_reject_bad_input():
    images, _ = digits.load_digits()
    with pytest.raises(TypeError, match="floating"):
        digits.augment((images * 16).long())
    with pytest.raises(ValueError, match=r"\(N, H, W\)"):
        digits.augment(images[0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        digits.augment(images[:3] * 2)
    with pytest.raises(ValueError, match="noise"):
        digits.augment(images[:3], noise=-0.1)
    with pytest.raises(ValueError, match="k"):
        digits.AugmentedTuples(images, 0)


def test_sampler_evaluate_and_sphere_mlp():
    images, labels = digits.load_digits()
    x, xp, xn = digits.AugmentedTuples(images[:100], 5)(7, torch.Generator().manual_seed(0))
    assert x.shape == (7, 64) and xp.shape == (7, 64) and xn.shape == (7, 5, 64)
    phi = SphereMLP(64, 32, 8, seed=0)
    e = phi(x)
    assert torch.allclose(torch.linalg.vector_norm(e, dim=-1), torch.ones(7), atol=1e-6)
    out = digits.evaluate(phi, images[:200], labels[:200], k=4, tau=0.5, k_eval=8, n_queries=100,
                          generator=torch.Generator().manual_seed(0))
    assert 0.0 <= out["top1"] <= 1.0 and 0.0 <= out["nn_class"] <= 1.0 and out["risk"] > 0
    with pytest.raises(ValueError, match="dim_out"):
        SphereMLP(64, 8, 1)
    view = digits.embedding_2d(phi, images[:50])
    assert view.shape == (50, 2)


def test_loss_range_width_symbolic():
    import sympy as sp

    from infonce_book import symbolic

    width, limit, dwidth = symbolic.loss_range_width()
    assert sp.simplify(limit - 4 * symbolic.beta) == 0
    f = sp.lambdify((symbolic.beta, symbolic.k), width)
    assert f(2.0, 3) == pytest.approx(loss_range(3, 0.5), rel=1e-12)
    g = sp.lambdify((symbolic.beta, symbolic.k), dwidth)
    assert all(g(b, kk) > 0 for b in (0.1, 1.0, 5.0) for kk in (1, 10, 1000))
