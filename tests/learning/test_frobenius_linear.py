"""FrobeniusLinear: values in the unit ball, the parameter-Lipschitz constant |x|, the similarity
linear in W^T W, bad input, and the Rademacher lower estimate below the dimension-free bound."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from infonce_book.learning.embeddings import FrobeniusLinear
from infonce_book.learning.rademacher import empirical_rademacher
from infonce_book.models import VonMisesFisher
from infonce_book.theory.bounds import similarity_contraction_bound


def _unit_ball(gen, n, p):
    x = torch.randn(n, p, generator=gen, dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True) * torch.rand(n, 1, generator=gen, dtype=torch.float64)


@given(st.integers(1, 6), st.integers(1, 6), st.floats(0.05, 1.0), st.integers(0, 2**31 - 1))
@settings(max_examples=40, deadline=None)
def test_values_in_ball_and_lipschitz_in_parameters(p, d, b, seed):
    gen = torch.Generator().manual_seed(seed)
    phi = FrobeniusLinear(p, d, b)
    x = _unit_ball(gen, 20, p)
    t1, t2 = phi.random_parameters(gen), phi.random_parameters(gen)
    with torch.no_grad():
        y1 = phi.set_theta_(t1)(x)
        y2 = phi.set_theta_(t2)(x)
    assert (y1.norm(dim=-1) <= 1 + 1e-12).all()
    # |W x - W' x| <= |x| |W - W'|_F (Lemma c4-lem-classes, case 2, without the projection)
    assert ((y1 - y2).norm(dim=-1) <= phi.lipschitz(x) * (t1 - t2).norm() * (1 + 1e-12) + 1e-15).all()


def test_similarity_is_linear_in_the_gram_matrix():
    gen = torch.Generator().manual_seed(3)
    phi = FrobeniusLinear(4, 3, 0.8)
    x, y = _unit_ball(gen, 5, 4), _unit_ball(gen, 5, 4)
    with torch.no_grad():
        phi.set_theta_(phi.random_parameters(gen))
        W = phi.theta.reshape(3, 4)
        s = (phi(x) * phi(y)).sum(-1)
    M = (W.T @ W).detach()
    assert torch.allclose(s, torch.einsum("ij,ni,nj->n", M, y, x), atol=1e-14)  # <M, y x^T>_F
    assert float(torch.linalg.matrix_norm(M)) <= 0.8**2 + 1e-12  # |W^T W|_F <= |W|_F^2


def test_bad_input():
    with pytest.raises(ValueError, match="radius"):
        FrobeniusLinear(3, 3, 1.5)
    with pytest.raises(ValueError, match="unit ball"):
        FrobeniusLinear(3, 2, 1.0)(torch.full((2, 3), 1.0, dtype=torch.float64))


@pytest.mark.slow
@pytest.mark.parametrize("d", [3, 12])
def test_rademacher_lower_estimate_below_dimension_free_bound(d):
    model = VonMisesFisher(dim=d, kappa=4.0)
    gen = torch.Generator().manual_seed(d)
    data = tuple(model.sample_tuples(32, 4, generator=gen))
    est = empirical_rademacher(FrobeniusLinear(d, d, 1.0), data, 3, tau=1.0, steps=10, n_starts=2, seed=0)
    bound = similarity_contraction_bound(32, 4, 1.0, frobenius_radius=1.0)
    assert 0.0 < est.value and np.max(est.samples) <= bound
