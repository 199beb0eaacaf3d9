"""Real data for chapter C7: scikit-learn's bundled handwritten digits (1797 images, 8 x 8 pixels,
10 classes; shipped with scikit-learn, no download), a random augmentation as the positive-pair
kernel ``M``, and the evaluations of the chapter.

* :func:`load_digits` -- images scaled to [0, 1] and labels, as tensors.
* :func:`split` -- a seeded train/test split.
* :func:`augment` -- ``M(x, .)``: a random rotation (uniform in +-``max_rotation`` degrees) and
  shift (uniform in +-``max_shift`` pixels, both by bilinear resampling with zero padding), then
  Gaussian pixel noise of standard deviation ``noise``, then clipping to [0, 1] (part of the
  definition of M: pixel intensities live in [0, 1]).
* :class:`AugmentedTuples` -- a sampler of InfoNCE tuples for :func:`infonce_book.training.fit`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..learning.embeddings import loss_per_tuple
from ..utils.validation import check_at_least, check_float_tensor, check_k, check_nonneg, check_seed, check_tau


def load_digits(*, device=None, dtype=torch.float32):
    """The 1797 digits: ``(images (1797, 8, 8) in [0, 1], labels (1797,) int64 in 0..9)``."""
    from sklearn.datasets import load_digits as _load  # scikit-learn is heavy to import: only when used

    data = _load()
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
    max_shift, max_rotation = check_nonneg(max_shift, "max_shift"), check_nonneg(max_rotation, "max_rotation")
    noise = check_nonneg(noise, "noise")
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


class AugmentedTuples:
    """Sampler of InfoNCE tuples from a set of images: anchor and positive are two augmentations of
    the same image, the k negatives augmentations of images drawn uniformly (with replacement).

    ``sampler(batch_size, generator) -> (x (B, 64), x_pos (B, 64), x_neg (B, k, 64))`` (flattened).
    """

    def __init__(self, images: torch.Tensor, k: int, **augment_kwargs):
        check_float_tensor(images, "images")
        if images.dim() != 3 or images.shape[0] == 0:
            raise ValueError(f"images must have shape (N, H, W) with N >= 1, got {tuple(images.shape)}")
        self.images, self.k, self.kw = images, check_k(k), augment_kwargs

    def __call__(self, batch_size: int, generator: torch.Generator | None = None):
        B, k, n = check_k(batch_size, "batch_size"), self.k, self.images.shape[0]
        dev = self.images.device
        idx = torch.randint(0, n, (B,), generator=generator, device=dev)
        neg = torch.randint(0, n, (B * k,), generator=generator, device=dev)
        base = self.images[torch.cat([idx, idx, neg])]
        views = augment(base, generator, **self.kw).flatten(1)
        return views[:B], views[B:2 * B], views[2 * B:].reshape(B, k, -1)


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
    n_queries = check_at_least(n_queries, "n_queries", 2, "a standard error needs two queries")
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
