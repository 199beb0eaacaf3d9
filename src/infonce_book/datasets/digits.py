"""Real data for chapter C7: scikit-learn's bundled handwritten digits (:data:`N_IMAGES` = 1797
images, 8 x 8 pixels, 10 classes; shipped with scikit-learn, no download), a random augmentation
as the positive-pair kernel ``M``, and the evaluations of the chapter.

* :data:`N_IMAGES` -- the number of images, the one place the book takes it from.
* :func:`load_digits` -- images scaled to [0, 1] and labels, as tensors.
* :func:`split` -- a seeded train/test split.
* :func:`augment` -- ``M(x, .)``: a random rotation (uniform in +-``max_rotation`` degrees) and
  shift (uniform in +-``max_shift`` pixels, both by bilinear resampling with zero padding), then
  Gaussian pixel noise of standard deviation ``noise``, then clipping to [0, 1] (part of the
  definition of M: pixel intensities live in [0, 1]).
* :class:`AugmentedTuples` -- a sampler of InfoNCE tuples for :func:`infonce_book.learning.training.fit`,
  without false negatives: a negative never comes from the anchor's own source image.
* :class:`EnsembleTuples` -- the sampler of :func:`infonce_book.learning.training.fit_ensemble`:
  one training pool per member, negatives shared by a member's batch and drawn from the images
  that are not among that batch's anchors.
* :class:`AugmentationBank` -- a fixed set of ``A`` augmentations of each image of a pool, and
  :func:`bank_similarity_laws`, the similarities of an embedding from which the held-out laws of
  the weights (positives: the other augmentations of the anchor's image; negatives: the
  augmentations of the other images) are formed.
* :func:`evaluate` -- risk, top-1 retrieval and nearest-neighbour class agreement of an embedding.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..learning.embeddings import loss_per_tuple
from ..utils.validation import check_float_tensor, check_k, check_scalar, check_seed, check_tau

N_IMAGES = 1797
"""The number of images in scikit-learn's digits (``sklearn.datasets.load_digits``: the test set
of the UCI "Optical Recognition of Handwritten Digits" data, 1797 images); :func:`load_digits`
checks that the loaded data have it."""


def load_digits(*, device=None, dtype=torch.float32):
    """The :data:`N_IMAGES` digits: ``(images (N_IMAGES, 8, 8) in [0, 1], labels (N_IMAGES,) int64
    in 0..9)``.

    Raises:
        RuntimeError: the installed scikit-learn ships another number of images than :data:`N_IMAGES`.
    """
    from sklearn.datasets import load_digits as _load  # scikit-learn is heavy to import: only when used

    data = _load()
    if data.images.shape[0] != N_IMAGES:
        raise RuntimeError(f"scikit-learn's digits have {data.images.shape[0]} images, the book expects "
                           f"N_IMAGES = {N_IMAGES}")
    images = torch.as_tensor(data.images / 16.0, dtype=dtype, device=device)
    labels = torch.as_tensor(data.target, dtype=torch.int64, device=device)
    return images, labels


def split(images: torch.Tensor, labels: torch.Tensor, n_train: int, *, seed: int = 0):
    """A seeded random split: ``(train_images, train_labels, test_images, test_labels)``."""
    check_float_tensor(images, "images")
    if not isinstance(labels, torch.Tensor) or labels.dim() != 1 or images.dim() < 1 \
            or labels.shape[0] != images.shape[0]:
        raise ValueError(f"labels must be a 1-D tensor with one label per image; got images "
                         f"{tuple(images.shape)}, labels {tuple(getattr(labels, 'shape', ()))}")
    n_train = check_k(n_train, "n_train")
    n = images.shape[0]
    if n_train >= n:
        raise ValueError(f"n_train must be < {n} (the number of images), got n_train={n_train}")
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(check_seed(seed))).to(images.device)
    tr, te = perm[:n_train], perm[n_train:]
    return images[tr], labels[tr], images[te], labels[te]


def augment(images: torch.Tensor, generator: torch.Generator | None = None, *, max_shift: float = 1.0,
            max_rotation: float = 10.0, noise: float = 0.05) -> torch.Tensor:
    """One random augmentation per image: ``(N, H, W) -> (N, H, W)``, values in [0, 1].

    Args:
        images: (N, H, W) floating tensor with values in [0, 1]. generator: seeds the draw.
        max_shift: pixels (>= 0). max_rotation: degrees (>= 0). noise: pixel noise sd (>= 0).
    Raises:
        TypeError: non-floating images. ValueError: wrong rank, empty, values outside [0, 1],
        negative parameters.
    """
    check_float_tensor(images, "images")
    if images.dim() != 3 or images.shape[0] == 0:
        raise ValueError(f"images must have shape (N, H, W) with N >= 1, got {tuple(images.shape)}")
    if float(images.min()) < 0.0 or float(images.max()) > 1.0:
        raise ValueError("images must have values in [0, 1] (use load_digits, which scales them)")
    max_shift = check_scalar(max_shift, "max_shift", ge=0)
    max_rotation = check_scalar(max_rotation, "max_rotation", ge=0)
    noise = check_scalar(noise, "noise", ge=0)
    n, h, w = images.shape
    dev, dt = images.device, images.dtype
    u = torch.rand(n, 3, generator=generator, device=dev, dtype=torch.float32).to(dt) * 2 - 1
    angle = u[:, 0] * math.radians(max_rotation)
    # affine_grid works in normalised coordinates: one pixel is 2/W (x) and 2/H (y)
    tx, ty = u[:, 1] * max_shift * 2 / w, u[:, 2] * max_shift * 2 / h
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.stack([torch.stack([cos, -sin, tx], -1), torch.stack([sin, cos, ty], -1)], 1)
    grid = torch.nn.functional.affine_grid(theta, (n, 1, h, w), align_corners=False)
    out = torch.nn.functional.grid_sample(images.unsqueeze(1), grid, mode="bilinear", padding_mode="zeros",
                                          align_corners=False).squeeze(1)
    if noise > 0:
        out = out + noise * torch.randn(out.shape, generator=generator, device=dev, dtype=torch.float32).to(dt)
    return out.clamp(0.0, 1.0)


def _check_pool(images: torch.Tensor, name: str = "images", minimum: int = 1) -> None:
    check_float_tensor(images, name)
    if images.dim() != 3 or images.shape[0] < minimum:
        raise ValueError(f"{name} must have shape (N, H, W) with N >= {minimum}, got {tuple(images.shape)}")


class AugmentedTuples:
    """Sampler of InfoNCE tuples from a pool of N images: anchor and positive are two augmentations
    of the same (uniformly drawn) image; the k negatives are augmentations of images drawn
    uniformly, with replacement, from the *other* N - 1 images, so that no negative is an
    augmentation of the anchor's own image (a false negative).

    ``sampler(batch_size, generator) -> (x (B, 64), x_pos (B, 64), x_neg (B, k, 64))`` (flattened);
    with ``return_index=True`` also the source images ``(anchor (B,), negatives (B, k))``.

    Args:
        images: (N, H, W) pool with values in [0, 1]; N >= 2 unless ``false_negatives``.
        k: negatives per tuple >= 1.
        false_negatives: draw negatives from all N images, the anchor's included (the sampler of
            earlier versions of the book, kept to measure the bias it causes).
        return_index: also return the source indices.
        augment_kwargs: passed to :func:`augment`.
    Raises:
        ValueError: a pool of the wrong shape, or of one image without ``false_negatives``.
    """

    def __init__(self, images: torch.Tensor, k: int, *, false_negatives: bool = False, return_index: bool = False,
                 **augment_kwargs):
        _check_pool(images, minimum=1 if false_negatives else 2)
        self.images, self.k, self.kw = images, check_k(k), augment_kwargs
        self.false_negatives, self.return_index = bool(false_negatives), bool(return_index)

    def __call__(self, batch_size: int, generator: torch.Generator | None = None):
        B, k, n = check_k(batch_size, "batch_size"), self.k, self.images.shape[0]
        dev = self.images.device
        idx = torch.randint(0, n, (B,), generator=generator, device=dev)
        if self.false_negatives:
            neg = torch.randint(0, n, (B, k), generator=generator, device=dev)
        else:  # uniform over the other n - 1 images: shift the anchor's index by 1 .. n-1
            neg = (idx[:, None] + torch.randint(1, n, (B, k), generator=generator, device=dev)) % n
        base = self.images[torch.cat([idx, idx, neg.reshape(-1)])]
        views = augment(base, generator, **self.kw).flatten(1)
        out = (views[:B], views[B:2 * B], views[2 * B:].reshape(B, k, -1))
        return (*out, idx, neg) if self.return_index else out


class EnsembleTuples:
    """Sampler for :func:`infonce_book.learning.training.fit_ensemble`: member ``s`` draws from its
    own pool ``pools[s]`` (S pools of N images each).

    Per member and call: B anchors' images uniformly (with replacement), a positive and an anchor
    view of each, and k negatives *shared by the member's B anchors*, drawn uniformly (with
    replacement) from the images that are not among the batch's anchors -- so no negative is an
    augmentation of any anchor's image. For one tuple, each negative is then (marginally over the
    other anchors) uniform over the other N - 1 images, as for :class:`AugmentedTuples`; sharing
    costs ``2B + k`` embeddings per step instead of ``B (k + 2)``.

    ``sampler(batch_size, generator) -> (x (S, B, 64), x_pos (S, B, 64), x_neg (S, k, 64))``; with
    ``return_index=True`` also ``(anchor (S, B), negatives (S, k))`` indices into the pools.

    Raises:
        ValueError: pools not of shape (S, N, H, W); a batch that leaves no image for negatives.
    """

    def __init__(self, pools: torch.Tensor, k: int, *, return_index: bool = False, **augment_kwargs):
        check_float_tensor(pools, "pools")
        if pools.dim() != 4 or pools.shape[0] < 1 or pools.shape[1] < 2:
            raise ValueError(f"pools must have shape (S, N, H, W) with S >= 1, N >= 2, got {tuple(pools.shape)}")
        self.pools, self.k, self.kw, self.return_index = pools, check_k(k), augment_kwargs, bool(return_index)

    def __call__(self, batch_size: int, generator: torch.Generator | None = None):
        B, k = check_k(batch_size, "batch_size"), self.k
        S, n = self.pools.shape[:2]
        if B >= n:
            raise ValueError(f"batch_size must be < {n} (the pool size), so that images remain for the "
                             f"negatives; got batch_size={B}")
        dev = self.pools.device
        idx = torch.randint(0, n, (S, B), generator=generator, device=dev)
        taken = torch.zeros(S, n, dtype=torch.bool, device=dev)
        taken.scatter_(1, idx, True)
        neg = torch.randint(0, n, (S, k), generator=generator, device=dev)
        clash = taken.gather(1, neg)
        while bool(clash.any()):  # redraw the clashes: uniform on the images not in the batch
            neg = torch.where(clash, torch.randint(0, n, (S, k), generator=generator, device=dev), neg)
            clash = taken.gather(1, neg)
        rows = torch.arange(S, device=dev)[:, None]
        base = torch.cat([self.pools[rows, idx], self.pools[rows, idx], self.pools[rows, neg]], 1)
        views = augment(base.reshape(-1, *self.pools.shape[2:]), generator, **self.kw).reshape(S, 2 * B + k, -1)
        out = (views[:, :B], views[:, B:2 * B], views[:, 2 * B:])
        return (*out, idx, neg) if self.return_index else out


class AugmentationBank:
    """``n_aug`` augmentations of each image of a pool, drawn once: the held-out draws from which
    an embedding's laws of similarities are formed (:func:`bank_similarity_laws`).

    Attributes:
        views: (N * n_aug, H * W) flattened augmented images, image-major (rows ``i * n_aug`` to
            ``(i + 1) * n_aug - 1`` are augmentations of image ``i``).
        source: (N * n_aug,) the source image of each row. n_images, n_aug: N and A.
    Raises:
        ValueError: a pool of the wrong shape; ``n_aug < 2`` (a positive needs another view).
    """

    def __init__(self, images: torch.Tensor, n_aug: int, generator: torch.Generator | None = None,
                 **augment_kwargs):
        _check_pool(images, minimum=2)
        self.n_aug = check_scalar(n_aug, "n_aug", ge=2, integer=True,
                                  why="a positive is another augmentation of the anchor's image")
        self.n_images = images.shape[0]
        self.source = torch.arange(self.n_images, device=images.device).repeat_interleave(self.n_aug)
        self.views = augment(images[self.source], generator, **augment_kwargs).flatten(1)

    def __len__(self) -> int:
        return self.views.shape[0]


def bank_similarity_laws(embedding: torch.Tensor, n_images: int, n_aug: int, *, anchors_per_image: int = 1):
    """Similarities of an embedded :class:`AugmentationBank` that define the held-out laws.

    The anchors are the first ``anchors_per_image`` augmentations of each image. For each anchor,
    ``s_pos`` holds its similarities to the other ``n_aug - 1`` augmentations of its image (the
    positive kernel ``M(x, .)`` of the bank) and ``s_neg`` to the ``(N - 1) n_aug`` augmentations of
    the other images (the law of a negative, without false negatives), in the order of the images
    ``i + 1, ..., N - 1, 0, ..., i - 1`` (the order plays no role in a law).

    Args:
        embedding: (N * n_aug, d) embeddings of ``bank.views`` (image-major). n_images, n_aug: N, A.
        anchors_per_image: in 1 .. n_aug.
    Returns:
        ``(s_pos (n, A - 1), s_neg (n, (N - 1) A), anchor_image (n,))`` with ``n = N anchors_per_image``.
    """
    check_float_tensor(embedding, "embedding")
    N, A = check_scalar(n_images, "n_images", ge=2, integer=True), check_scalar(n_aug, "n_aug", ge=2, integer=True)
    r = check_k(anchors_per_image, "anchors_per_image")
    if embedding.dim() != 2 or embedding.shape[0] != N * A:
        raise ValueError(f"embedding must have shape ({N * A}, d) = (n_images * n_aug, d), got {tuple(embedding.shape)}")
    if r > A:
        raise ValueError(f"anchors_per_image must be <= n_aug={A}, got {r}")
    dev = embedding.device
    image = torch.arange(N, device=dev).repeat_interleave(r)
    view = torch.arange(r, device=dev).repeat(N)
    sims = (embedding[image * A + view] @ embedding.T).reshape(N * r, N, A)
    rows = torch.arange(N * r, device=dev)
    sib = (view[:, None] + torch.arange(1, A, device=dev)[None]) % A
    s_pos = sims[rows, image][rows[:, None], sib]
    others = (image[:, None] + torch.arange(1, N, device=dev)[None]) % N  # images i+1, ..., i-1
    s_neg = torch.gather(sims, 1, others[:, :, None].expand(-1, -1, A)).reshape(N * r, (N - 1) * A)
    return s_pos, s_neg, image


@torch.no_grad()
def evaluate(phi, images: torch.Tensor, labels: torch.Tensor, *, k: int, tau: float, k_eval: int,
             n_queries: int, generator: torch.Generator | None = None) -> dict:
    """Evaluate an embedding on a set of images (all in nats or fractions):

    * ``risk``: mean InfoNCE of ``n_queries`` fresh tuples with k negatives (and its ``risk_se``);
    * ``top1``: fraction of queries (an augmented image) whose positive (another augmentation of
      the same image) is ranked first among itself and ``k_eval`` augmented other items;
    * ``nn_class``: fraction of (clean) images whose nearest other image in the embedding has the
      same label.
    """
    tau, k_eval = check_tau(tau), check_k(k_eval, "k_eval")
    n_queries = check_scalar(n_queries, "n_queries", ge=2, integer=True, why="a standard error needs two queries")
    if not isinstance(labels, torch.Tensor) or labels.shape != images.shape[:1]:
        raise ValueError(f"labels must be a tensor of shape (N,) = ({images.shape[0]},), got "
                         f"{tuple(getattr(labels, 'shape', ()))}")
    x, xp, xn = AugmentedTuples(images, k)(n_queries, generator)
    loss = loss_per_tuple(phi, x, xp, xn, tau).double()
    qx, qp, qn = AugmentedTuples(images, k_eval)(n_queries, generator)
    a, p, ng = phi(qx), phi(qp), phi(qn)
    s_pos = (a * p).sum(-1)
    s_neg = torch.einsum("bd,bkd->bk", a, ng)
    top1 = (s_pos > s_neg.max(dim=1).values).double()
    e = phi(images.flatten(1))
    sim = e @ e.T
    sim.fill_diagonal_(-float("inf"))
    nn_class = (labels[sim.argmax(dim=1)] == labels).double()
    return {"risk": float(loss.mean()), "risk_se": float(loss.std() / math.sqrt(n_queries)),
            "top1": float(top1.mean()), "top1_se": float(top1.std() / math.sqrt(n_queries)),
            "nn_class": float(nn_class.mean())}


def embedding_2d(phi, images: torch.Tensor) -> np.ndarray:
    """A 2-D view (PCA, scikit-learn) of the embeddings of ``images``: (N, 2)."""
    from sklearn.decomposition import PCA  # heavy import, only when used

    with torch.no_grad():
        e = phi(images.flatten(1)).double().cpu().numpy()
    return PCA(n_components=2, random_state=0).fit_transform(e)
