"""The handwritten digits: loader, split, augmentation, tuple sampler and evaluation."""

import pytest
import torch

from infonce_book.datasets import digits
from infonce_book.learning.embeddings import SphereMLP


def test_digits_loader_and_split():
    images, labels = digits.load_digits()
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,)
    assert digits.N_IMAGES == 1797  # the one constant the chapter takes the number from
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


# --- no false negatives, ensembles and banks -----------------------------------------------------


def test_no_negative_shares_its_anchors_source_image():
    # A pool of 4 images: with the old sampler a quarter of the negatives were false negatives.
    images, _ = digits.load_digits()
    sampler = digits.AugmentedTuples(images[:4], 6, return_index=True)
    x, xp, xn, anchor, neg = sampler(4000, torch.Generator().manual_seed(0))
    assert xn.shape == (4000, 6, 64) and anchor.shape == (4000,) and neg.shape == (4000, 6)
    assert not bool((neg == anchor[:, None]).any())
    # ... and the negatives are uniform over the other 3 images: each has probability 1/3
    for a in range(4):
        counts = torch.bincount(neg[anchor == a].reshape(-1), minlength=4).double()
        assert counts[a] == 0
        freq = counts[[i for i in range(4) if i != a]] / counts.sum()
        assert torch.allclose(freq, torch.full((3,), 1 / 3, dtype=torch.float64), atol=0.03)
    # the old sampler, kept to measure its bias, does draw false negatives (about 1/4)
    old = digits.AugmentedTuples(images[:4], 6, false_negatives=True, return_index=True)
    *_, anchor, neg = old(4000, torch.Generator().manual_seed(0))
    assert abs(float((neg == anchor[:, None]).double().mean()) - 0.25) < 0.02
    with pytest.raises(ValueError, match="N >= 2"):
        digits.AugmentedTuples(images[:1], 2)


def test_ensemble_sampler_draws_negatives_outside_the_batch_and_per_member_pools():
    images, _ = digits.load_digits()
    pools = torch.stack([images[:5], images[5:10]])
    sampler = digits.EnsembleTuples(pools, 8, return_index=True)
    for seed in range(50):
        x, xp, xn, anchor, neg = sampler(3, torch.Generator().manual_seed(seed))
        assert x.shape == (2, 3, 64) and xn.shape == (2, 8, 64)
        for s in range(2):
            assert not set(neg[s].tolist()) & set(anchor[s].tolist())
    # member 1 draws from its own pool: with no augmentation, x equals the pool's images
    plain = digits.EnsembleTuples(pools, 2, return_index=True, max_shift=0.0, max_rotation=0.0, noise=0.0)
    x, _, xn, anchor, neg = plain(3, torch.Generator().manual_seed(1))
    assert torch.allclose(x[1], pools[1][anchor[1]].flatten(1), atol=1e-6)
    assert torch.allclose(xn[1], pools[1][neg[1]].flatten(1), atol=1e-6)
    with pytest.raises(ValueError, match="batch_size"):
        digits.EnsembleTuples(pools, 2)(5)
    with pytest.raises(ValueError, match=r"\(S, N, H, W\)"):
        digits.EnsembleTuples(images[:5], 2)


def test_bank_similarity_laws_pick_siblings_and_other_images():
    images, _ = digits.load_digits()
    bank = digits.AugmentationBank(images[:6], 3, torch.Generator().manual_seed(0))
    assert bank.views.shape == (18, 64) and len(bank) == 18
    assert bank.source.tolist() == [i for i in range(6) for _ in range(3)]
    e = torch.nn.functional.normalize(torch.randn(18, 5, generator=torch.Generator().manual_seed(1)), dim=-1)
    s_pos, s_neg, image = digits.bank_similarity_laws(e, 6, 3, anchors_per_image=2)
    assert s_pos.shape == (12, 2) and s_neg.shape == (12, 15) and image.tolist() == [i for i in range(6) for _ in "ab"]
    full = e @ e.T
    # anchor 3 is view 1 of image 1 (row 4): siblings rows 5 and 3, negatives every row outside
    # 3..5, from image 2 on
    assert torch.allclose(s_pos[3], full[4, [5, 3]])
    assert torch.allclose(s_neg[3], full[4, list(range(6, 18)) + [0, 1, 2]])
    with pytest.raises(ValueError, match="n_aug"):
        digits.AugmentationBank(images[:6], 1)
    with pytest.raises(ValueError, match="embedding"):
        digits.bank_similarity_laws(e[:10], 6, 3)
