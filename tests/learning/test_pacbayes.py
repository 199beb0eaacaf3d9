"""Gaussian-posterior PAC-Bayes certificates of a trained ``NormalisedLinear`` embedding
(``infonce_book.learning.pacbayes``; book, Theorem ``c5-thm-pac-bayes``): the per-tuple losses
against the library's loss and chance level, the canonical mean against the orbit it minimises
over, the Monte Carlo risk against its draws replayed, and the certificate's ordering and
coverage on the vMF model."""

import math

import pytest
import torch

from infonce_book.learning import pacbayes
from infonce_book.learning.embeddings import NormalisedLinear, loss_per_tuple
from infonce_book.learning.pacbayes import (
    POSTERIOR_RATIOS,
    PRIOR_SCALES,
    canonical_mean,
    gaussian_posterior_certificate,
    mc_empirical_risk,
    normalised_linear_losses,
    randomised_search_cross_entropy,
)
from infonce_book.losses import info_nce_from_similarities
from infonce_book.models import VonMisesFisher
from infonce_book.theory.bounds import loss_range
from infonce_book.theory.pacbayes import gaussian_kl_isotropic
from infonce_book.theory.search import search_cross_entropy

EYE = torch.eye(3, dtype=torch.float64).reshape(-1)


def _tuples(n=200, k=5, seed=0):
    return VonMisesFisher(3, 2.0).sample_tuples(n, k, generator=torch.Generator().manual_seed(seed))


def _phi(theta):
    phi = NormalisedLinear(3, 0.9)
    phi.theta_param.data.copy_(theta)
    return phi.requires_grad_(False)


def test_the_design_grids_are_the_books():
    assert len(PRIOR_SCALES) == 16 and PRIOR_SCALES[0] == 0.5
    assert all(b / a == pytest.approx(2 ** -0.5, rel=1e-15) for a, b in zip(PRIOR_SCALES, PRIOR_SCALES[1:]))
    assert POSTERIOR_RATIOS == (1.0, 0.5, 0.25, 0.125)


def test_losses_are_infonce_of_each_tuple_under_its_own_parameters():
    x, xp, xn = _tuples()
    gen = torch.Generator().manual_seed(1)
    thetas = EYE + 0.2 * torch.randn(x.shape[0], 9, generator=gen, dtype=torch.float64)
    got = normalised_linear_losses(thetas, x, xp, xn, 0.5)
    # one tuple at a time through the embedding class and the library's loss
    for i in (0, 17, 199):
        ref = loss_per_tuple(_phi(thetas[i]), x[i:i + 1], xp[i:i + 1], xn[i:i + 1], 0.5)
        assert float(got[i]) == pytest.approx(float(ref[0]), rel=1e-14)
    # the library's loss on the same similarities: equal up to rounding (a few ulp), not bit for bit
    A = thetas.reshape(-1, 3, 3)
    a, p, n = (torch.nn.functional.normalize(torch.einsum(e, A, t), dim=-1)
               for e, t in (("bij,bj->bi", x), ("bij,bj->bi", xp), ("bij,bkj->bki", xn)))
    lib = info_nce_from_similarities((a * p).sum(-1), torch.einsum("bd,bkd->bk", a, n), 0.5, reduction="none")
    assert torch.allclose(got, lib, rtol=4e-15, atol=0)
    # the range of Lemma c5-lem-range
    k, beta = xn.shape[1], 2.0
    assert float(got.min()) >= math.log1p(k * math.exp(-2 * beta)) and float(got.max()) <= math.log1p(k * math.exp(2 * beta))
    assert loss_range(k, 0.5) == pytest.approx(math.log1p(k * math.exp(2 * beta)) - math.log1p(k * math.exp(-2 * beta)))


def test_losses_are_chance_level_when_every_similarity_is_equal():
    x = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    xn = x[:, None, :].expand(1, 7, 3)
    got = normalised_linear_losses(EYE[None, :], x, x, xn, 0.1)
    assert float(got[0]) == pytest.approx(math.log(8), rel=1e-15)


def test_losses_reject_bad_shapes_and_temperatures():
    x, xp, xn = _tuples(n=4)
    with pytest.raises(ValueError, match="thetas"):
        normalised_linear_losses(EYE[None, :].expand(3, -1), x, xp, xn, 0.5)
    with pytest.raises(ValueError, match="shapes"):
        normalised_linear_losses(EYE[None, :].expand(4, -1), x, xp[:3], xn, 0.5)
    with pytest.raises(ValueError, match="tau"):
        normalised_linear_losses(EYE[None, :].expand(4, -1), x, xp, xn, 0.0)
    with pytest.raises(TypeError):
        normalised_linear_losses(EYE[None, :].expand(4, -1), x.long(), xp, xn, 0.5)


def test_canonical_mean_keeps_every_loss_and_is_closer_to_the_centre():
    gen = torch.Generator().manual_seed(0)
    model = VonMisesFisher(3, 2.0)
    data = model.sample_tuples(200, 5, generator=gen)
    phi = NormalisedLinear(3, 0.9)
    A = torch.eye(3, dtype=torch.float64) + 0.15 * torch.randn(3, 3, generator=gen, dtype=torch.float64)
    Q, _ = torch.linalg.qr(torch.randn(3, 3, generator=gen, dtype=torch.float64))
    theta = (1.3 * Q @ A).reshape(-1)  # a rotated, rescaled copy: far from I, same similarities as A
    centre = torch.eye(3, dtype=torch.float64).reshape(-1)
    mean = canonical_mean(theta, centre, 3)
    losses = []
    for t in (A.reshape(-1), mean):
        phi.theta_param.data.copy_(t)
        losses.append(loss_per_tuple(phi, *data, 0.5))
    assert torch.allclose(losses[0], losses[1], atol=1e-12)
    assert float(torch.linalg.vector_norm(mean - centre)) < float(torch.linalg.vector_norm(theta - centre))
    assert float(torch.linalg.vector_norm(mean - centre)) <= float(torch.linalg.vector_norm(A.reshape(-1) - centre)) + 1e-12


def test_canonical_mean_is_the_closest_point_of_the_orbit():
    gen = torch.Generator().manual_seed(3)
    A = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    C = torch.eye(3, dtype=torch.float64) + 0.3 * torch.randn(3, 3, generator=gen, dtype=torch.float64)
    mean = canonical_mean(A.reshape(-1), C.reshape(-1), 3).reshape(3, 3)
    # it lies on the orbit: mean A^{-1} = c R with R orthogonal, c > 0
    cR = mean @ torch.linalg.inv(A)
    c = float(torch.linalg.det(cR @ cR.T) ** (1 / 6))
    assert c > 0 and torch.allclose(cR @ cR.T / c**2, torch.eye(3, dtype=torch.float64), atol=1e-12)
    # and no other point c' R' A (random orthogonal R', best c') is closer to C
    best = float(torch.linalg.matrix_norm(mean - C))
    R, _ = torch.linalg.qr(torch.randn(5000, 3, 3, generator=gen, dtype=torch.float64))
    B = R @ A
    cb = ((B * C).sum((1, 2)) / (B * B).sum((1, 2))).clamp_min(0.0)
    assert float(torch.linalg.matrix_norm(cb[:, None, None] * B - C).min()) >= best - 1e-12
    # when the centre itself is on the orbit, the canonical mean is the centre
    Q, _ = torch.linalg.qr(torch.randn(3, 3, generator=gen, dtype=torch.float64))
    on_orbit = canonical_mean((0.7 * Q @ C).reshape(-1), C.reshape(-1), 3)
    assert torch.allclose(on_orbit, C.reshape(-1), atol=1e-12)
    with pytest.raises(ValueError, match="dim"):
        canonical_mean(EYE[:8], EYE, 3)


def test_mc_risk_is_the_mean_loss_of_its_draws_and_at_scale_zero_the_empirical_risk():
    tuples = _tuples(n=50, k=4)
    mean = EYE + 0.05 * torch.randn(9, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    # its draws replayed: indices, then parameters, chunk by chunk
    gen, replay = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    got = mc_empirical_risk(mean, 0.1, tuples, 0.5, 700, gen, chunk=300)
    total = 0.0
    for b in (300, 300, 100):
        idx = torch.randint(0, 50, (b,), generator=replay)
        th = mean[None, :] + 0.1 * torch.randn(b, 9, generator=replay, dtype=torch.float64)
        total += float(normalised_linear_losses(th, *(t[idx] for t in tuples), 0.5).sum())
    assert got == pytest.approx(total / 700, rel=1e-15)
    # scale 0 and one tuple: every draw is the empirical risk
    one = tuple(t[:1] for t in tuples)
    emp = float(loss_per_tuple(_phi(mean), *one, 0.5).mean())
    assert mc_empirical_risk(mean, 0.0, one, 0.5, 1000, torch.Generator().manual_seed(0)) == pytest.approx(emp, rel=1e-13)
    # scale 0, all tuples: an unbiased estimate of the empirical risk (within 4 standard errors)
    losses = loss_per_tuple(_phi(mean), *tuples, 0.5)
    est = mc_empirical_risk(mean, 0.0, tuples, 0.5, 20000, torch.Generator().manual_seed(0))
    assert abs(est - float(losses.mean())) <= 4 * float(losses.std()) / math.sqrt(20000)
    for bad in ({"n_draws": 0}, {"scale": -0.1}):
        args = {"scale": 0.1, "n_draws": 10, **bad}
        with pytest.raises(ValueError):
            mc_empirical_risk(mean, args["scale"], tuples, 0.5, args["n_draws"], torch.Generator())


def _certificate(tuples, seed=0, **kw):
    gen = torch.Generator().manual_seed(seed)
    theta = (EYE + 0.1 * torch.randn(9, generator=torch.Generator().manual_seed(4), dtype=torch.float64))
    return theta, gaussian_posterior_certificate(theta, EYE, tuples, 0.5, delta=0.04, delta_mc=0.01, pilot_draws=64,
                                                 final_draws=4000, generator=gen, **kw)


def test_certificate_orders_its_terms_and_uses_the_design():
    tuples = _tuples(n=300, k=4)
    theta, cert = _certificate(tuples)
    assert cert["prior_scale"] in PRIOR_SCALES
    assert cert["posterior_scale"] / cert["prior_scale"] in POSTERIOR_RATIOS
    kl = gaussian_kl_isotropic(cert["mean"].numpy(), EYE.numpy(), cert["posterior_scale"], cert["prior_scale"])
    assert cert["kl"] == kl and kl >= 0
    assert cert["emp_upper"] >= cert["emp_risk"] and cert["risk_upper"] >= cert["emp_upper"]
    lmin = math.log1p(4 * math.exp(-4.0))
    assert cert["risk_upper"] <= lmin + loss_range(4, 0.5)
    assert cert["distance"] == pytest.approx(float(torch.linalg.vector_norm(cert["mean"] - EYE)), rel=1e-15)
    assert torch.equal(cert["mean"], canonical_mean(theta, EYE, 3)) and cert["draws"] == 4000
    # the same generator state gives the same certificate
    assert _certificate(tuples)[1]["risk_upper"] == cert["risk_upper"]
    # a one-point grid is used as given
    _, one = _certificate(tuples, prior_scales=(0.125,), posterior_ratios=(0.5,))
    assert (one["prior_scale"], one["posterior_scale"]) == (0.125, 0.0625)


def test_certificate_covers_the_risk_of_the_posterior():
    tuples = _tuples(n=300, k=4)
    _, cert = _certificate(tuples)
    fresh = _tuples(n=10000, k=4, seed=9)  # the population risk of Q, by fresh tuples and draws
    risk = mc_empirical_risk(cert["mean"], cert["posterior_scale"], fresh, 0.5, 50000, torch.Generator().manual_seed(1))
    assert cert["risk_upper"] >= risk


def test_certificate_refuses_a_mean_that_changes_the_training_losses(monkeypatch):
    monkeypatch.setattr(pacbayes, "canonical_mean", lambda theta, centre, dim: centre + 0.3)
    with pytest.raises(RuntimeError, match="Procrustes"):
        _certificate(_tuples(n=50, k=4))


def test_randomised_search_at_scale_zero_is_the_search_of_the_mean_embedding():
    model = VonMisesFisher(3, 2.0)
    x, _, db = model.sample_tuples(300, 8, generator=torch.Generator().manual_seed(0))
    mean = EYE + 0.1 * torch.randn(9, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    phi = _phi(mean)
    with torch.no_grad():
        ref = search_cross_entropy(torch.einsum("bd,bkd->bk", phi(x), phi(db)), model.log_density_ratio(x, db), 0.5)
    got = randomised_search_cross_entropy(mean, 0.0, x, db, model.log_density_ratio(x, db), 0.5, torch.Generator())
    assert got.shape == (300,) and torch.allclose(got, ref, rtol=1e-13, atol=0)
    # a positive scale draws one parameter per query from the generator
    a = randomised_search_cross_entropy(mean, 0.05, x, db, model.log_density_ratio(x, db), 0.5,
                                        torch.Generator().manual_seed(3))
    b = randomised_search_cross_entropy(mean, 0.05, x, db, model.log_density_ratio(x, db), 0.5,
                                        torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and not torch.allclose(a, ref)
    with pytest.raises(ValueError, match="scale"):
        randomised_search_cross_entropy(mean, -1.0, x, db, model.log_density_ratio(x, db), 0.5, torch.Generator())
