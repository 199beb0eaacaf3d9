"""The one model interface: ``sample_tuples``, ``log_density_ratio``, ``params`` / ``from_params``."""

import math

import numpy as np
import pytest
import torch

import infonce_book.models
from infonce_book.models import MODELS, FiniteModel, GaussianModel, StudentTModel, Tuples, VonMisesFisher, from_params

ALL = [VonMisesFisher(3, 4.0), VonMisesFisher(5, 1.5), FiniteModel.random(5, 3, concentration=2.0, seed=1),
       GaussianModel(4, 0.7), StudentTModel(4, 5.0, 0.6)]


def test_the_interface_tests_cover_every_registered_model():
    # MODELS is the one list of the models; a model added to it must be added to ALL as well.
    assert {type(m) for m in ALL} == set(MODELS.values())
    assert {cls.__name__ for cls in MODELS.values()} <= set(infonce_book.models.__all__)


@pytest.mark.parametrize("model", ALL, ids=repr)
def test_sample_tuples_has_the_documented_shapes(model):
    t = model.sample_tuples(6, 4, generator=torch.Generator().manual_seed(0))
    assert isinstance(t, Tuples)
    event = () if isinstance(model, FiniteModel) else (model.dim,)
    assert t.anchor.shape == (6, *event) and t.positive.shape == (6, *event)
    assert t.negatives.shape == (6, 4, *event)


@pytest.mark.parametrize("model", ALL, ids=repr)
def test_sample_tuples_is_seeded_and_params_round_trip(model):
    a = model.sample_tuples(3, 2, generator=torch.Generator().manual_seed(5))
    b = from_params(model.params).sample_tuples(3, 2, generator=torch.Generator().manual_seed(5))
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    assert from_params({**model.params, "tau": 0.5, "k": 16}).params == model.params  # extra keys ignored
    assert model.params["model"] in MODELS


def test_sample_tuples_draws_anchors_positives_then_negatives():
    # The documented order: the same draws as sample_data, sample_positive, sample_negatives in turn.
    m = VonMisesFisher(3, 4.0)
    t = m.sample_tuples(4, 3, generator=torch.Generator().manual_seed(2))
    g = torch.Generator().manual_seed(2)
    x = m.sample_data(4, generator=g)
    xp = m.sample_positive(x, generator=g)
    xn = m.sample_data(12, generator=g).reshape(4, 3, 3)
    assert torch.equal(t.anchor, x) and torch.equal(t.positive, xp) and torch.equal(t.negatives, xn)


def test_vmf_density_ratio_is_the_normalised_tilt():
    # m(x, y) = e^{kappa <x,y>} / Z(kappa), Z_3(kappa) = sinh(kappa)/kappa (closed form on S^2).
    m = VonMisesFisher(3, 2.0)
    t = m.sample_tuples(5, 3, generator=torch.Generator().manual_seed(0))
    s = torch.einsum("nd,nkd->nk", t.anchor, t.negatives)
    want = 2.0 * s - math.log(math.sinh(2.0) / 2.0)
    torch.testing.assert_close(m.log_density_ratio(t.anchor, t.negatives), want, rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(m.log_density_ratio(t.anchor, t.positive), 2.0 * (t.anchor * t.positive).sum(-1)
                               - math.log(math.sinh(2.0) / 2.0), rtol=1e-13, atol=1e-13)


def test_finite_density_ratio_and_points_are_indices():
    m = FiniteModel.random(4, 2, seed=3)
    t = m.sample_tuples(7, 5, generator=torch.Generator().manual_seed(1))
    assert t.anchor.dtype == torch.int64 and int(t.negatives.max()) < 4
    got = m.log_density_ratio(t.anchor, t.negatives).numpy()
    want = np.log(m.kernel[t.anchor.numpy()[:, None], t.negatives.numpy()] / m.pi[t.negatives.numpy()])
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert m.embed(t.anchor).shape == (7, 2)
    with pytest.raises(ValueError, match=r"indices in \[0, 3\]"):
        m.log_density_ratio(t.anchor, torch.full((7,), 9))


def test_density_ratio_integrates_to_one_under_pi():
    # E_pi m(x, .) = 1 for every x: Monte Carlo over pi for the Gaussian model (closed-form m).
    m = GaussianModel(3, 0.5)
    g = torch.Generator().manual_seed(0)
    x = m.sample_data(3, generator=g)
    y = m.sample_data(200000, generator=g).expand(3, -1, -1)
    mean = m.log_density_ratio(x, y).exp().mean(-1)
    torch.testing.assert_close(mean, torch.ones(3, dtype=torch.float64), rtol=0.02, atol=0.0)


def test_student_t_positives_come_only_with_their_anchors():
    m = StudentTModel(3, 4.0, 0.5)
    with pytest.raises(NotImplementedError, match="sample_tuples"):
        m.sample_positive(torch.zeros(2, 3, dtype=torch.float64))


def test_unknown_or_incomplete_params_are_clear_errors():
    with pytest.raises(ValueError, match="known models"):
        from_params({"model": "mixture"})
    with pytest.raises(ValueError, match="'model' key"):
        from_params({"dim": 3})
    with pytest.raises(ValueError, match="FiniteModel.random"):
        from_params({"model": "finite", "N": 3, "d": 2})
    with pytest.raises(ValueError, match=r"k \(number of negatives\) must be"):
        VonMisesFisher(3, 1.0).sample_tuples(2, 0)
