"""Training by empirical risk minimisation (``infonce_book.learning.training.fit``)."""


import numpy as np
import pytest
import torch

from infonce_book.datasets import digits
from infonce_book.learning.embeddings import NormalisedLinear, SphereMLP, loss_per_tuple
from infonce_book.learning.training import fit
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










