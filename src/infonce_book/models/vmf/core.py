"""The core of the vMF reference model: its parameters, the log partition function, the limit
risk ``L_inf``, the density ratio, and the samplers (uniform data on the sphere, vMF positives).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...utils.validation import check_float_tensor, check_k, check_scalar, check_tau, check_unit_norm
from ..base import ReferenceModel
from .special_functions import _check_dim, log_vmf_partition, mean_resultant_length


def _check_points(x, name: str, dim: int, ndim: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != ndim or x.shape[-1] != dim:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        want = f"(n, {dim})" if ndim == 2 else f"(n, k, {dim})"
        raise ValueError(f"{name} must be a tensor of shape {want}, got {shape}")
    check_float_tensor(x, name)


class VmfCore(ReferenceModel):
    """The vMF model's parameters, log partition function, limit risk, density ratio and samplers
    (the parts every chapter uses; :class:`~infonce_book.models.vmf.VonMisesFisher` adds the closed
    forms of each chapter)."""

    identity_embedding = True
    param_names = ("dim", "kappa")

    def __init__(self, dim: int, kappa: float):
        self.dim = _check_dim(dim)
        self.kappa = check_scalar(kappa, "kappa", ge=0)

    def log_partition(self, beta) -> float | np.ndarray:
        """``log Z(beta)``, ``Z(beta) = E_{y ~ pi} e^{beta <x,y>}`` (see :func:`log_vmf_partition`)."""
        out = log_vmf_partition(self.dim, beta)
        return float(out) if out.ndim == 0 else out

    def mean_resultant_length(self) -> float:
        """``A_p(kappa) = E <x, x+>``."""
        return float(mean_resultant_length(self.dim, self.kappa))

    def limit_risk(self, tau) -> float:
        """``L_inf(tau) = -beta A_p(kappa) + log Z(beta)`` in nats (book, notation page, "Reference models")."""
        beta = 1.0 / check_tau(tau)
        return -beta * self.mean_resultant_length() + float(self.log_partition(beta))

    def log_density_ratio(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log m(x, y) = kappa <x, y> - log Z(kappa)``: x (n, dim) and y (n, dim) -> (n,), or
        y (n, k, dim) -> (n, k). Points must lie on the sphere (unit rows)."""
        _check_points(x, "x", self.dim, 2)
        _check_points(y, "y", self.dim, y.dim() if isinstance(y, torch.Tensor) and y.dim() in (2, 3) else 2)
        if y.shape[0] != x.shape[0]:
            raise ValueError(f"x and y must have the same number of rows n, got x {tuple(x.shape)}, y {tuple(y.shape)}")
        s = (x * y).sum(-1) if y.dim() == 2 else torch.einsum("nd,nkd->nk", x, y)
        return self.kappa * s - float(self.log_partition(self.kappa))

    def log_density_ratio_of_cosine(self, s) -> np.ndarray:
        """``log m(x, y) = kappa s - log Z(kappa)`` as a function of ``s = <x, y>`` in [-1, 1]."""
        s = np.asarray(s, dtype=np.float64)
        if not np.all(np.isfinite(s)) or np.any(np.abs(s) > 1.0 + 1e-12):
            raise ValueError(f"s must hold cosines <x, y> in [-1, 1] (finite), got values in "
                             f"[{np.min(s):.6g}, {np.max(s):.6g}]")
        return self.kappa * s - float(self.log_partition(self.kappa))

    def _lz(self, b) -> float:
        return float(self.log_partition(b))

    def _A(self, b) -> float:
        return float(mean_resultant_length(self.dim, b))

    def sample_data(self, n: int, *, generator: torch.Generator | None = None, device=None,
                    dtype=None) -> torch.Tensor:
        """``n`` points uniform on ``S^{dim-1}`` (the data distribution pi): (n, dim) tensor
        (normalised Gaussians), float64 unless ``dtype`` says otherwise."""
        n = check_k(n, "n")
        dtype = dtype or torch.float64
        g = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        return g / torch.linalg.vector_norm(g, dim=-1, keepdim=True)

    def sample_cosines(self, n: int, *, generator: torch.Generator | None = None, device=None,
                       dtype=None) -> torch.Tensor:
        """``n`` draws of ``w = <x, x+>`` for ``x+ ~ vMF(x, kappa)``: (n,) tensor in [-1, 1].

        dim = 3: exact inverse CDF ``w = 1 + log(u + (1-u) e^{-2 kappa}) / kappa``. Other dims:
        Wood's (1994) rejection sampler, with the Beta((p-1)/2, (p-1)/2) proposal drawn as the
        first coordinate of a uniform point on the sphere (so that a torch generator seeds it).
        """
        n = check_k(n, "n")
        dtype = dtype or torch.float64
        p, kap = self.dim, self.kappa
        if kap == 0.0:
            return self.sample_data(n, generator=generator, device=device, dtype=dtype)[:, 0]
        if p == 3:
            u = torch.rand(n, generator=generator, device=device, dtype=dtype)
            return 1.0 + torch.log(u + (1.0 - u) * math.exp(-2.0 * kap)) / kap
        b = (p - 1.0) / (2.0 * kap + math.sqrt(4.0 * kap * kap + (p - 1.0) ** 2))
        x0 = (1.0 - b) / (1.0 + b)
        c = kap * x0 + (p - 1.0) * math.log(1.0 - x0 * x0)
        out = torch.empty(n, device=device, dtype=dtype)
        todo = torch.arange(n, device=device)
        while todo.numel():
            m = todo.numel()
            z = (1.0 + self.sample_data(m, generator=generator, device=device, dtype=dtype)[:, 0]) / 2.0
            u = torch.rand(m, generator=generator, device=device, dtype=dtype)
            w = (1.0 - (1.0 + b) * z) / (1.0 - (1.0 - b) * z)
            ok = kap * w + (p - 1.0) * torch.log(1.0 - x0 * w) - c >= torch.log(u)
            out[todo[ok]] = w[ok]
            todo = todo[~ok]
        return out

    def sample_positive(self, anchors: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """One positive ``x+ ~ vMF(x, kappa)`` per anchor row ``x``: (n, dim) -> (n, dim)."""
        if not isinstance(anchors, torch.Tensor) or anchors.dim() != 2 or anchors.shape[1] != self.dim:
            shape = tuple(anchors.shape) if isinstance(anchors, torch.Tensor) else type(anchors).__name__
            raise ValueError(f"anchors must be a tensor of shape (n, {self.dim}), got {shape}")
        check_float_tensor(anchors, "anchors")
        if anchors.shape[0] == 0:
            raise ValueError(f"anchors must have at least one row, got shape {tuple(anchors.shape)}")
        check_unit_norm(anchors, "anchors")  # the kernel vMF(x, kappa) needs x on the sphere
        n = anchors.shape[0]
        w = self.sample_cosines(n, generator=generator, device=anchors.device, dtype=anchors.dtype)
        g = torch.randn(n, self.dim, generator=generator, device=anchors.device, dtype=anchors.dtype)
        v = g - (g * anchors).sum(-1, keepdim=True) * anchors
        v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)
        out = w.unsqueeze(-1) * anchors + torch.sqrt(torch.clamp_min(1.0 - w * w, 0.0)).unsqueeze(-1) * v
        return out / torch.linalg.vector_norm(out, dim=-1, keepdim=True)  # remove rounding off the sphere
