"""Heavy-tailed positive pairs on R^dim (multivariate Student-t; book, continuity chapter)."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from scipy import stats

from ..utils.validation import check_k
from .base import ReferenceModel, Tuples, register


@register("student_t")
class StudentTModel(ReferenceModel):
    """Heavy-tailed positive pairs: ``x = g / sqrt(w / nu)`` and ``x+ = (rho g + sqrt(1 - rho^2) xi) / sqrt(w / nu)``
    with ``g, xi ~ N(0, I_dim)`` and ``w ~ chi^2_nu`` shared by the pair, so both are multivariate
    Student-t with ``nu`` degrees of freedom. ``|x|^2 / dim`` follows ``F(dim, nu)``, so the input
    norms have polynomial tails (``P(|x| > r) ~ r^{-nu}``): the maximum of k of them grows like
    ``k^{1/nu}``, against ``sqrt(2 log k)`` for :class:`GaussianModel`.

    Args:
        dim: dimension >= 1. nu: degrees of freedom > 1 (finite mean norm). rho: in (-1, 1).
    """

    def __init__(self, dim: int, nu: float, rho: float):
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 1:
            raise ValueError(f"dim must be an integer >= 1, got dim={dim!r}")
        if isinstance(nu, bool) or not isinstance(nu, numbers.Real) or not (1.0 < float(nu) < math.inf):
            raise ValueError(f"nu must be a finite number > 1 (the norm must have a mean), got nu={nu!r}")
        if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not (-1.0 < float(rho) < 1.0):
            raise ValueError(f"rho must be a correlation in (-1, 1) (open interval), got rho={rho!r}")
        self.dim, self.nu, self.rho = int(dim), float(nu), float(rho)

    param_names = ("dim", "nu", "rho")

    def _scale(self, n, generator, device, dtype):
        """``sqrt(w / nu)`` with ``w ~ chi^2_nu`` by inversion of a seeded uniform (scipy's ppf)."""
        u = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
        u = u.clamp(min=torch.finfo(torch.float64).tiny)  # u = 0 has probability 2^-53 per draw
        w = stats.chi2.ppf(u.cpu().numpy(), self.nu)
        return torch.as_tensor(np.sqrt(w / self.nu), dtype=dtype, device=device)

    def sample_pairs(self, n: int, *, generator=None, device=None, dtype=None):
        """``n`` pairs ``(x, x+)``: two (n, dim) tensors."""
        n = check_k(n, "n")
        dtype = dtype or torch.float64
        g = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        xi = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        s = self._scale(n, generator, device, dtype).unsqueeze(-1)
        return g / s, (self.rho * g + math.sqrt(1.0 - self.rho**2) * xi) / s

    def sample_data(self, n: int, *, generator=None, device=None, dtype=None) -> torch.Tensor:
        """``n`` draws of ``x``: (n, dim), float64 unless ``dtype`` says otherwise."""
        n = check_k(n, "n")
        dtype = dtype or torch.float64
        g = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        return g / self._scale(n, generator, device, dtype).unsqueeze(-1)

    def sample_positive(self, anchor, *, generator=None):
        """Not available: the pair shares its scale ``w``, so a positive cannot be drawn from the
        anchor alone; draw tuples with :meth:`sample_tuples` (or pairs with :meth:`sample_pairs`)."""
        raise NotImplementedError("StudentTModel draws positives jointly with their anchors (shared scale): "
                                  "use sample_tuples(n, k) or sample_pairs(n)")

    def sample_tuples(self, n: int, k: int, *, generator=None, device=None, dtype=None) -> Tuples:
        """``n`` tuples: the pairs ``(x, x+)`` (:meth:`sample_pairs`), then ``n k`` negatives."""
        n, k = check_k(n, "n"), check_k(k)
        x, xp = self.sample_pairs(n, generator=generator, device=device, dtype=dtype)
        return Tuples(x, xp, self.sample_negatives(n, k, generator=generator, device=x.device, dtype=dtype))

    def norm_sf(self, r):
        """``P(|x| > r)`` (scipy's F distribution: ``|x|^2/dim ~ F(dim, nu)``)."""
        return stats.f.sf(np.asarray(r, dtype=float) ** 2 / self.dim, self.dim, self.nu)
