"""The handwritten digits: loader, split, augmentation, tuple sampler and evaluation."""

import pytest
import torch

from infonce_book.datasets import digits
from infonce_book.learning.embeddings import SphereMLP


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
