"""The certificates of a trained NormalisedLinear embedding (book, Lemma c5-lem-curvature,
Proposition c5-prop-derandomise, Theorem c5-thm-pac-bernstein, Corollary c5-cor-holdout)."""

import math

import numpy as np
import pytest
import torch

from infonce_book.learning import NormalisedLinear
from infonce_book.learning.certificates import (
    SIMILARITY_CURVATURE,
    bernstein_posterior_certificate,
    derandomisation_cost,
    holdout_certificate,
    loss_curvature,
    mc_decoupled_losses,
)
from infonce_book.learning.exact_erm import fit_exact
from infonce_book.learning.pacbayes import normalised_linear_losses
from infonce_book.models import VonMisesFisher


def _loss(theta, x, xp, xn, tau, variant):
    return normalised_linear_losses(theta[None], x[None], xp[None], xn[None], tau, variant=variant)[0]


@pytest.mark.parametrize("radius", [0.1, 0.3, 0.45])
def test_the_loss_curvature_is_at_least_minus_kappa_r_on_random_tuples(radius):
    # Lemma c5-lem-curvature: lambda_min of the Hessian in theta >= -2 beta C2 / (1 - r)^2
    model, tau, k = VonMisesFisher(3, 2.0), 0.5, 8
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for _ in range(60):
        t = model.sample_tuples(1, k, generator=gen)
        d = torch.randn(9, generator=gen, dtype=torch.float64)
        theta = torch.eye(3, dtype=torch.float64).reshape(-1) + d / d.norm() * radius * float(torch.rand(1, generator=gen))
        for variant in ("standard", "decoupled"):
            H = torch.autograd.functional.hessian(
                lambda q: _loss(q, t.anchor[0], t.positive[0], t.negatives[0], tau, variant), theta)
            worst = min(worst, float(torch.linalg.eigvalsh(H).min()))
    assert worst >= -loss_curvature(1 / tau, radius)
    assert loss_curvature(2.0, 0.25) == pytest.approx(2 * 2 * (4 / math.sqrt(3) + 2) / 0.75**2, rel=1e-15)
    assert SIMILARITY_CURVATURE == pytest.approx(4.309401076758503, rel=1e-15)


@pytest.mark.slow
def test_the_derandomisation_inequality_holds_per_tuple():
    # Proposition c5-prop-derandomise: l(theta_bar) <= E_rho l(theta) + cost, E_rho by 200,000 draws
    model, tau, k = VonMisesFisher(3, 2.0), 0.5, 8
    gen = torch.Generator().manual_seed(1)
    theta_bar = torch.eye(3, dtype=torch.float64).reshape(-1) + 0.05 * torch.randn(9, generator=gen, dtype=torch.float64)
    distance = float((theta_bar - torch.eye(3, dtype=torch.float64).reshape(-1)).norm())
    scale = 0.03
    cost, t = derandomisation_cost(1 / tau, distance, scale, 9, 4 / tau)
    assert 0 < cost < 1 and 0 < t < 1 - distance
    tuples = model.sample_tuples(20, k, generator=gen)
    draws = theta_bar[None] + scale * torch.randn(200_000, 9, generator=gen, dtype=torch.float64)
    for i in range(20):
        x, xp, xn = tuples.anchor[i], tuples.positive[i], tuples.negatives[i]
        at_mean = float(_loss(theta_bar, x, xp, xn, tau, "decoupled"))
        rep = (x[None].expand(len(draws), -1), xp[None].expand(len(draws), -1), xn[None].expand(len(draws), -1, -1))
        values = normalised_linear_losses(draws, *rep, tau, variant="decoupled")
        assert at_mean <= float(values.mean()) + cost + 5 * float(values.std()) / math.sqrt(len(values))


def test_derandomisation_costs_nothing_at_scale_zero_and_more_with_a_wider_posterior():
    assert derandomisation_cost(2.0, 0.1, 0.0, 9, 8.0)[0] == 0.0
    costs = [derandomisation_cost(2.0, 0.1, s, 9, 8.0)[0] for s in (0.005, 0.01, 0.02, 0.04)]
    assert all(a < b for a, b in zip(costs, costs[1:]))
    with pytest.raises(ValueError, match="distance"):
        derandomisation_cost(2.0, 1.0, 0.01, 9, 8.0)


def test_the_holdout_certificate_covers_the_mean_in_repeated_samples():
    # Corollary c5-cor-holdout at delta = 0.1: a bounded loss with mean 0.3, upper bound 4
    rng = np.random.default_rng(2)
    fails = 0
    for _ in range(300):
        ref = np.minimum(rng.normal(0.3, 0.8, 500), 4.0)
        held = np.minimum(rng.normal(0.3, 0.8, 500), 4.0)
        fails += holdout_certificate(ref, held, upper=4.0, delta=0.1)["bound"] < 0.3
    assert fails / 300 <= 0.1
    with pytest.raises(ValueError, match="upper bound"):
        holdout_certificate(np.array([0.0, 5.0]), np.array([0.0, 1.0]), upper=4.0, delta=0.1)


@pytest.mark.slow
def test_the_bernstein_certificate_bounds_the_risk_of_its_posterior_and_its_mean():
    # one training set; the true risks estimated on 200,000 fresh tuples (they must lie below the bounds)
    model, tau, k, n = VonMisesFisher(3, 2.0), 0.5, 8, 512
    gen = torch.Generator().manual_seed(3)
    train = model.sample_tuples(n, k, generator=gen)
    phi = NormalisedLinear(3, 0.5)
    fit_exact(phi, train, tau)
    fresh = model.sample_tuples(200_000, k, generator=gen)
    for derandomise in (False, True):
        cert = bernstein_posterior_certificate(phi.theta.detach(), phi.center.detach(), train, tau, delta=0.04,
                                               delta_mc=0.01, pilot_draws=512, final_draws=20_000, generator=gen,
                                               derandomise=derandomise)
        scale = 0.0 if derandomise else cert["posterior_scale"]
        risk = float(mc_decoupled_losses(cert["mean"], scale, fresh, tau, 200_000, gen).mean())
        assert risk <= cert["bound"]
        assert cert["bound"] - cert["derandomisation"] >= cert["mc_upper"] >= cert["emp_risk"] - 1e-12
        assert (cert["derandomisation"] > 0) == derandomise


def test_the_holdout_size_needed_is_the_smallest_size_that_would_do():
    from infonce_book.learning.certificates import holdout_size_needed

    rng = np.random.default_rng(3)
    ref, held = rng.uniform(0.0, 1.0, 400), rng.uniform(0.0, 1.0, 10)
    n = holdout_size_needed(ref, held, upper=4.0, delta=0.05, target=0.8)
    assert 10 < n < 10**6 and n == int(n)

    def bound(size):  # the same held-out moments at another size: the values repeated whole
        return holdout_certificate(ref, np.tile(held, size // 10), upper=4.0, delta=0.05)["bound"]

    m = int(n) - int(n) % 10
    assert bound(m + 10) < 0.8 and bound(max(m - 10, 10)) >= 0.8  # crosses within one repetition
    assert holdout_size_needed(ref, held, upper=4.0, delta=0.05, target=float(held.mean()) - 0.01) == math.inf
    assert holdout_size_needed(ref, held, upper=4.0, delta=0.05, target=10.0) == 2.0  # already below
