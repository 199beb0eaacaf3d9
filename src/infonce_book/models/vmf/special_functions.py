"""The vMF model's special functions, in log space: the log partition function ``log Z_p`` of
the uniform law on the sphere, the log modified Bessel function ``log I_nu`` (scipy's scaled
``ive``, mpmath where it underflows) and the mean resultant length ``A_p = I_{p/2} / I_{p/2-1}``.

Source: Mardia & Jupp (2000), sec. 9.3.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy import special


def _check_dim(dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"dim must be an integer >= 2 (the sphere S^(dim-1) in R^dim), got {dim!r}")
    if dim < 2:
        raise ValueError(f"dim must be an integer >= 2 (the sphere S^(dim-1) in R^dim), got dim={dim}")
    return int(dim)


def log_vmf_partition(dim: int, b: ArrayLike) -> np.ndarray:
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
        import mpmath  # optional heavy import, only where scipy's ive underflows (large orders)

        out[bad] = [float(mpmath.log(mpmath.besseli(nu, float(v)))) for v in x[bad]]
    return out


def _log_bessel_i_orders(orders: np.ndarray, x: float) -> np.ndarray:
    """``log I_nu(x)`` for several orders at one ``x > 0`` (scipy's ``ive``; mpmath where it underflows)."""
    orders = np.asarray(orders, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out = np.log(special.ive(orders, x)) + x
    bad = ~np.isfinite(out)
    if np.any(bad):
        import mpmath  # optional heavy import, only where scipy's ive underflows (large orders)

        out[bad] = [float(mpmath.log(mpmath.besseli(float(o), x))) for o in orders[bad]]
    return out


def mean_resultant_length(dim: int, kappa: ArrayLike) -> np.ndarray:
    """``A_p(kappa) = I_{p/2}(kappa) / I_{p/2-1}(kappa) = E <x, x+>`` for ``x+ ~ vMF(x, kappa)``."""
    dim = _check_dim(dim)
    kappa = np.asarray(kappa, dtype=np.float64)
    if np.any(~np.isfinite(kappa)) or np.any(kappa < 0):
        raise ValueError(f"kappa must be finite and >= 0, got kappa={kappa!r}")
    pos = np.maximum(kappa, 1e-8).reshape(-1)
    ratio = np.exp(_log_bessel_i(dim / 2.0, pos) - _log_bessel_i(dim / 2.0 - 1.0, pos)).reshape(kappa.shape)
    return np.where(kappa < 1e-8, kappa / dim, ratio)
