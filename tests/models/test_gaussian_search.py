"""The Gaussian model's search gap for phi(x) = x/|x| (C2 chapter), against Monte Carlo and closed forms."""

import math

import numpy as np
import pytest
import torch

from infonce_book.chapters import c2_search
from infonce_book.models import GaussianModel


def test_density_ratio_second_moment_matches_monte_carlo():
    model = GaussianModel(2, 0.6)
    gen = torch.Generator().manual_seed(0)
    x = torch.tensor([[0.7, -1.1]], dtype=torch.float64)
    y = model.sample_data(400000, generator=gen)
    m2 = torch.exp(2 * model.log_density_ratio(x.expand(len(y), 2), y))
    est, se = float(m2.mean()), float(m2.std()) / math.sqrt(len(y))
    closed = float(model.density_ratio_second_moment(np.linalg.norm(x.numpy())))
    assert abs(est - closed) < 5 * se
    assert model.chi2_second_moment() == pytest.approx((1 - 0.36) ** -2, rel=1e-14)


@pytest.mark.slow
def test_exact_gap_is_accurate_and_bounded_and_matches_monte_carlo():
    model = GaussianModel(2, 0.5)
    r = model.exact_search_gap_of_direction([1, 4, 64], 0.5, n_r=12, n_theta=20, per_panel=3)
    assert r["k1_identity"] < 1e-10 and r["em_err"] < 1e-3 and abs(r["outer_mass"] - 1) < 1e-4
    assert np.all(np.abs(np.array(r["k"]) * r["gap"]) <= r["model_constant"])
    assert r["model_constant"] <= r["uniform_constant"]
    # an independent estimate: Monte Carlo of -beta (I_hat - s(x, x+)) - log(1 + W+/sum W) at k = 4
    mc = c2_search.gaussian_gap_monte_carlo.uncached(setup=c2_search.SearchSetup(tau=0.5), model=model, ks=[4],
                                                     n_queries=200000, device="cpu", seed=1)
    assert abs(mc["mean"].iloc[0] - r["gap"][1]) < 4 * mc["se"].iloc[0]
