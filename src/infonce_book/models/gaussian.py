"""Gaussian positive pairs on R^dim (unbounded input norms; book: notation page, "Reference models")."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from scipy import stats

from ..utils.validation import check_k
from .base import ReferenceModel, register


@register("gaussian")
class GaussianModel(ReferenceModel):
    """Gaussian positive pairs: ``x ~ N(0, I_dim)``, ``x+ = rho x + sqrt(1 - rho^2) xi``.

    The density ratio of the positive-pair kernel with respect to the data distribution is, with
    ``r = rho``, ``log m(x, y) = -|y - r x|^2 / (2 (1 - r^2)) + |y|^2 / 2 - (dim/2) log(1 - r^2)``.
    Input norms are unbounded (``|x|^2 ~ chi^2_dim``), which later chapters use for the
    max-versus-average contrast.

    Args:
        dim: dimension >= 1. rho: correlation in (-1, 1).
    """

    def __init__(self, dim: int, rho: float):
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 1:
            raise ValueError(f"dim must be an integer >= 1, got dim={dim!r}")
        if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not (-1.0 < float(rho) < 1.0):
            raise ValueError(f"rho must be a correlation in (-1, 1) (open interval), got rho={rho!r}")
        self.dim, self.rho = int(dim), float(rho)

    param_names = ("dim", "rho")

    def sample_data(self, n: int, *, generator=None, device=None, dtype=None) -> torch.Tensor:
        """``n`` draws of ``x ~ N(0, I)``: (n, dim), float64 unless ``dtype`` says otherwise."""
        return torch.randn(check_k(n, "n"), self.dim, generator=generator, device=device,
                           dtype=dtype or torch.float64)

    def sample_positive(self, x: torch.Tensor, *, generator=None) -> torch.Tensor:
        """``x+ = rho x + sqrt(1 - rho^2) xi`` per row of ``x``: (n, dim) -> (n, dim)."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be a tensor of shape (n, {self.dim})")
        xi = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
        return self.rho * x + math.sqrt(1.0 - self.rho**2) * xi

    def log_density_ratio(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log m(x, y)``: x (n, dim) and y (n, dim) -> (n,), or y (n, k, dim) -> (n, k)."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be a tensor of shape (n, {self.dim})")
        if (not isinstance(y, torch.Tensor) or y.dim() not in (2, 3) or y.shape[-1] != self.dim
                or y.shape[0] != x.shape[0]):
            raise ValueError(f"y must be a tensor of shape (n, {self.dim}) or (n, k, {self.dim}) with the "
                             f"n = {x.shape[0]} rows of x")
        r2 = 1.0 - self.rho**2
        yb = y.unsqueeze(1) if y.dim() == 2 else y
        diff = yb - self.rho * x.unsqueeze(1)
        out = -(diff**2).sum(-1) / (2 * r2) + (yb**2).sum(-1) / 2 - 0.5 * self.dim * math.log(r2)
        return out.squeeze(1) if y.dim() == 2 else out

    def norm_sf(self, r):
        """``P(|x| > r)``: ``|x|`` follows the chi distribution with ``dim`` degrees of freedom."""
        return stats.chi.sf(np.asarray(r, dtype=float), self.dim)
