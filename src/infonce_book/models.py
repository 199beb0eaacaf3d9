"""Reference models with samplers and closed forms (book: notation page, "Reference models").

:class:`VonMisesFisher` -- data uniform on the sphere ``S^{p-1}``, positives drawn from the von
Mises--Fisher kernel ``M(x, dy) = e^{kappa <x,y>} pi(dy) / Z(kappa)``, embedding ``phi = identity``
(any orthogonal map gives the same numbers).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from scipy import special

from ._validation import check_choice, check_k, check_nonneg, check_tau
from .losses import VARIANTS


def _check_dim(dim) -> int:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"dim must be an integer >= 2 (the sphere S^(dim-1) in R^dim), got {dim!r}")
    if dim < 2:
        raise ValueError(f"dim must be an integer >= 2 (the sphere S^(dim-1) in R^dim), got dim={dim}")
    return int(dim)


def log_vmf_partition(dim: int, b) -> np.ndarray:
    """``log Z_p(b)`` with ``Z_p(b) = E_{y ~ unif(S^{p-1})} e^{b <x,y>}``, ``p = dim``.

    ``Z_p(b) = Gamma(p/2) (2/b)^{p/2-1} I_{p/2-1}(b)`` (for p = 3: ``sinh(b)/b``). Computed in log
    space with the exponentially scaled Bessel function ``ive`` for ``b > 1`` and with the series
    ``Z = sum_n (b^2/4)^n / (n! (p/2)_n)`` (via ``log1p``) for ``b^2/4 <= 8 (p/2)``, where the
    Bessel form would cancel. Finite for any finite ``b >= 0`` and any dim (no overflow: ``log I = log ive +
    b``; where ``ive`` underflows at large order, mpmath's arbitrary-precision Bessel function).

    Args:
        dim: p >= 2. b: array-like of values >= 0 (dimensionless: an inverse temperature).
    Returns:
        ``log Z_p(b)``, float64 array of b's shape.
    Source: Mardia & Jupp (2000), sec. 9.3.
    """
    dim = _check_dim(dim)
    b = np.asarray(b, dtype=np.float64)
    if np.any(~np.isfinite(b)) or np.any(b < 0):
        raise ValueError(f"b must be finite and >= 0, got {b!r}")
    nu = dim / 2.0 - 1.0
    out = np.empty_like(b)
    # Series while b^2/4 <= 8 (nu + 1): the term ratio x / (n (nu + n)) is then below 8/n, so 90
    # terms leave less than 1e-40; all terms are positive (no cancellation).
    small = (b / 2.0) ** 2 <= 8.0 * (nu + 1.0)
    if np.any(small):
        x = (b[small] / 2.0) ** 2
        term = np.ones_like(x)
        total = np.zeros_like(x)
        for n in range(1, 90):
            term = term * x / (n * (nu + n))
            total = total + term
        out[small] = np.log1p(total)
    if np.any(~small):
        bb = b[~small]
        out[~small] = special.gammaln(dim / 2.0) + nu * np.log(2.0 / bb) + _log_bessel_i(nu, bb)
    return out


def _log_bessel_i(nu: float, x: np.ndarray) -> np.ndarray:
    """``log I_nu(x)`` for ``x > 0``: ``log ive + x`` (scipy), and mpmath's arbitrary-precision
    ``besseli`` where ``ive`` underflows (large order, e.g. nu = 255 for dim = 512, x = 10)."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore"):
        out = np.log(special.ive(nu, x)) + x
    bad = ~np.isfinite(out) | (special.ive(nu, x) < 1e-290)
    if np.any(bad):
        import mpmath

        out[bad] = [float(mpmath.log(mpmath.besseli(nu, float(v)))) for v in x[bad]]
    return out


def mean_resultant_length(dim: int, kappa) -> np.ndarray:
    """``A_p(kappa) = I_{p/2}(kappa) / I_{p/2-1}(kappa) = E <x, x+>`` for ``x+ ~ vMF(x, kappa)``."""
    dim = _check_dim(dim)
    kappa = np.asarray(kappa, dtype=np.float64)
    pos = np.maximum(kappa, 1e-8).reshape(-1)
    ratio = np.exp(_log_bessel_i(dim / 2.0, pos) - _log_bessel_i(dim / 2.0 - 1.0, pos)).reshape(kappa.shape)
    return np.where(kappa < 1e-8, kappa / dim, ratio)


class VonMisesFisher:
    """The vMF reference model on ``S^{dim-1}`` (book: notation page, "Reference models").

    ``pi`` is the uniform distribution on the sphere, ``M(x, .) = vMF(x, kappa)``, and the
    embedding is ``phi(x) = x``. With ``beta = 1/tau`` and ``W = e^{beta <x, y>}``:

    * ``mu = E W = Z(beta)``, ``E W^j = Z(j beta)``, ``E (W+)^j = Z(kappa + j beta) / Z(kappa)``,
    * ``L_inf(tau) = -beta A_p(kappa) + log Z(beta)``,
    * ``m(x, y) = dM(x, .)/dpi (y) = e^{kappa <x,y>} / Z(kappa)``.

    Args:
        dim: ambient dimension p >= 2 (the sphere is ``S^{p-1}``).
        kappa: concentration of the positive-pair kernel, >= 0 (0: positives independent).
    Raises:
        TypeError/ValueError: dim not an integer >= 2; kappa negative or not finite.
    """

    def __init__(self, dim: int, kappa: float):
        self.dim = _check_dim(dim)
        self.kappa = check_nonneg(kappa, "kappa")

    def __repr__(self) -> str:
        return f"VonMisesFisher(dim={self.dim}, kappa={self.kappa:g})"

    @property
    def params(self) -> dict:
        """The model's parameters as recorded in the claims ledger."""
        return {"model": "vmf", "dim": self.dim, "kappa": self.kappa}

    # ------------------------------------------------------------------ closed forms
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

    def log_density_ratio(self, s) -> np.ndarray:
        """``log m(x, y) = kappa s - log Z(kappa)`` as a function of ``s = <x, y>``."""
        return self.kappa * np.asarray(s, dtype=np.float64) - float(self.log_partition(self.kappa))

    def weight_moments(self, tau) -> dict:
        """Normalised moments of the weights given an anchor (constant in x for this model).

        Returns a dict with ``mu = E W``, ``sigma2 = Var W``, the raw moments ``u1, u2, u3`` of
        ``U = W+/mu`` and the central moments ``m2, m3, m4`` of ``V = W/mu``.
        """
        beta = 1.0 / check_tau(tau)
        lz = lambda b: float(self.log_partition(b))  # noqa: E731
        lmu = lz(beta)
        ev = {j: math.exp(lz(j * beta) - j * lmu) for j in range(1, 5)}  # E V^j
        u = {j: math.exp(lz(self.kappa + j * beta) - lz(self.kappa) - j * lmu) for j in range(1, 4)}
        m2 = ev[2] - 1.0
        m3 = ev[3] - 3.0 * ev[2] + 2.0
        m4 = ev[4] - 4.0 * ev[3] + 6.0 * ev[2] - 3.0
        mu = math.exp(lmu)
        return {"mu": mu, "sigma2": m2 * mu * mu, "u1": u[1], "u2": u[2], "u3": u[3],
                "m2": m2, "m3": m3, "m4": m4}

    def bias_coefficients(self, tau, variant: str = "standard", order: int = 2) -> tuple:
        """``(c1, c2)`` (or ``(c1, c2, c3)`` with ``order=3``) with
        ``k (L_k - log k - L_inf) = c1 + c2/k + c3/k^2 + o(1/k^2)``.

        ``c1 = E(W+)/mu - sigma^2/(2 mu^2)`` (standard) or ``-sigma^2/(2 mu^2)`` (decoupled);
        the higher coefficients are those derived by :func:`infonce_book.symbolic.bias_expansion`.
        Source: book, Theorem ``c1-thm-rate`` and Proposition ``c1-prop-second-order``.
        """
        check_choice(variant, "variant", VARIANTS)
        if order not in (1, 2, 3):
            raise ValueError(f"order must be 1, 2 or 3, got order={order!r}")
        from .symbolic import bias_coefficient_functions

        mom = self.weight_moments(tau)
        args = (mom["u1"], mom["u2"], mom["u3"], mom["m2"], mom["m3"], mom["m4"])
        return tuple(float(f(*args)) for f in bias_coefficient_functions(variant, order))

    def exact_bias(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k - L_inf`` by the Laplace/Frullani quadrature (see :mod:`infonce_book.exact`)."""
        from .exact import exact_bias

        return float(exact_bias(self, [check_k(k)], tau, variant)[0])

    def exact_centred_risk(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k`` exactly (quadrature, no Monte Carlo), in nats.

        Accurate to about 1e-9 absolute for k up to 10^6 (dim 3: closed-form Laplace transform;
        other dims: Gauss--Jacobi quadrature of the 1-D density of ``<x, y>``).
        Source: book, C1 chapter, eq. ``c1-eq-frullani``.
        """
        return self.limit_risk(tau) + self.exact_bias(k, tau, variant)

    # ------------------------------------------------------------------ samplers
    def sample_uniform(self, n: int, *, generator: torch.Generator | None = None, device=None,
                       dtype=torch.float64) -> torch.Tensor:
        """``n`` points uniform on ``S^{dim-1}``: (n, dim) tensor (normalised Gaussians)."""
        n = check_k(n, "n")
        g = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        return g / torch.linalg.vector_norm(g, dim=-1, keepdim=True)

    def sample_cosines(self, n: int, *, generator: torch.Generator | None = None, device=None,
                       dtype=torch.float64) -> torch.Tensor:
        """``n`` draws of ``w = <x, x+>`` for ``x+ ~ vMF(x, kappa)``: (n,) tensor in [-1, 1].

        dim = 3: exact inverse CDF ``w = 1 + log(u + (1-u) e^{-2 kappa}) / kappa``. Other dims:
        Wood's (1994) rejection sampler, with the Beta((p-1)/2, (p-1)/2) proposal drawn as the
        first coordinate of a uniform point on the sphere (so that a torch generator seeds it).
        """
        n = check_k(n, "n")
        p, kap = self.dim, self.kappa
        if kap == 0.0:
            return self.sample_uniform(n, generator=generator, device=device, dtype=dtype)[:, 0]
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
            z = (1.0 + self.sample_uniform(m, generator=generator, device=device, dtype=dtype)[:, 0]) / 2.0
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
        n = anchors.shape[0]
        w = self.sample_cosines(n, generator=generator, device=anchors.device, dtype=anchors.dtype)
        g = torch.randn(n, self.dim, generator=generator, device=anchors.device, dtype=anchors.dtype)
        v = g - (g * anchors).sum(-1, keepdim=True) * anchors
        v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)
        out = w.unsqueeze(-1) * anchors + torch.sqrt(torch.clamp_min(1.0 - w * w, 0.0)).unsqueeze(-1) * v
        return out / torch.linalg.vector_norm(out, dim=-1, keepdim=True)  # remove rounding off the sphere
