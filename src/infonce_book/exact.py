"""Exact finite-k references by the Laplace/Frullani representation (book, eq. ``c1-eq-frullani``).

For ``T > 0``, Frullani's integral gives ``log T = int_0^inf (e^{-u} - e^{-u T}) du / u``. With
``T = (W+ + sum_{j<=k} W_j) / (k mu)`` and independent weights,

    E log T = int_0^inf ( e^{-u} - L+(u/(k mu)) L(u/(k mu))^k ) du / u,

where ``L(t) = E e^{-t W}`` and ``L+(t) = E e^{-t W+}`` are the Laplace transforms of the negative
and positive weights. ``E log T`` *is* ``L_k - log k - L_inf`` (the bias), so the quadrature
returns the small difference directly, without subtracting two large numbers. The integrand is
evaluated as ``-e^{-u} expm1(log L+(t) + k (log L(t) + t mu))``: ``log L(t) + t mu >= 0`` is the
centred cumulant generating function, computed from ``L(t) - 1`` with relative accuracy.

For the vMF model on ``S^2`` (dim 3), ``<x, y>`` is uniform on [-1, 1] and
``L(t) - 1 = -(Ein(t e^beta) - Ein(t e^-beta)) / (2 beta)`` with the entire exponential integral
``Ein(z) = int_0^z (1 - e^-v)/v dv = E1(z) + log z + gamma``. In other dimensions, and for the
positive weight, the 1-D integrals over ``s = <x, y>`` use Gauss--Jacobi quadrature with the
weight ``(1 - s^2)^{(p-3)/2}`` of the density of ``s``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from ._validation import check_choice, check_k, check_tau
from .losses import VARIANTS

_N_NODES = 256


def ein(z) -> np.ndarray:
    """Entire exponential integral ``Ein(z) = int_0^z (1 - e^{-v}) / v dv`` for ``z >= 0``.

    Series ``sum_{n>=1} (-1)^{n+1} z^n / (n n!)`` for ``z <= 1`` (relative accuracy near 0, where
    ``Ein(z) ~ z``), and ``E1(z) + log z + gamma`` (scipy's ``exp1``) above.
    """
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    small = z <= 1.0
    zs = z[small]
    term = zs.copy()
    total = zs.copy()
    for n in range(2, 30):
        term = -term * zs / n
        total = total + term / n
    out[small] = total
    zl = z[~small]
    out[~small] = special.exp1(zl) + np.log(zl) + np.euler_gamma
    return out


class _DiscreteLaws:
    """Laplace transforms of the weights for one anchor, when they take finitely many values:
    ``W`` (values), ``w_neg`` (their probabilities for a negative), ``w_pos`` (for the positive).

    Used directly for the finite model, and with Gauss--Jacobi nodes for the vMF model.
    """

    closed_form = False

    def __init__(self, W: np.ndarray, w_neg: np.ndarray, w_pos: np.ndarray, beta: float, mu: float | None = None):
        self.W, self.w_neg, self.w_pos, self.beta = (np.asarray(W, float), np.asarray(w_neg, float),
                                                     np.asarray(w_pos, float), float(beta))
        self.mu = float(self.w_neg @ self.W) if mu is None else float(mu)
        self.w_max, self.w_min = float(self.W.max()), float(self.W.min())

    def laplace_neg_minus_one(self, t: np.ndarray) -> np.ndarray:
        """``L(t) - 1 = E expm1(-t W)``, with relative accuracy for small t; shape of t."""
        return np.expm1(-np.multiply.outer(np.asarray(t, dtype=np.float64), self.W)) @ self.w_neg

    def _log_laplace_large_t(self, t: np.ndarray, weights: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return special.logsumexp(np.log(weights) - np.multiply.outer(t, self.W), axis=-1)

    def _log_laplace_neg_large_t(self, t: np.ndarray) -> np.ndarray:
        return self._log_laplace_large_t(t, self.w_neg)

    def log_laplace_neg(self, t: np.ndarray) -> np.ndarray:
        """``log L(t)``: ``log1p(L - 1)`` while ``t max W <= 1/2`` (relative accuracy of the
        centred part), then the log of ``L`` itself."""
        t = np.asarray(t, dtype=np.float64)
        small = t * self.w_max <= 0.5
        out = np.empty_like(t)
        out[small] = np.log1p(self.laplace_neg_minus_one(t[small]))
        out[~small] = self._log_laplace_neg_large_t(t[~small])
        return out

    def log_laplace_pos(self, t: np.ndarray) -> np.ndarray:
        """``log L+(t) = log E e^{-t W+}``."""
        t = np.asarray(t, dtype=np.float64)
        small = t * self.w_max <= 0.5
        out = np.empty_like(t)
        out[small] = np.log1p(np.expm1(-np.multiply.outer(t[small], self.W)) @ self.w_pos)
        out[~small] = self._log_laplace_large_t(t[~small], self.w_pos)
        return out

    def centred_cgf(self, t: np.ndarray) -> np.ndarray:
        """``log L(t) + t mu`` (>= 0 by Jensen; ``-inf`` where ``L(t)`` underflows)."""
        return self.log_laplace_neg(t) + t * self.mu


class _SimilarityLaws(_DiscreteLaws):
    """The vMF model's weights on Gauss--Jacobi nodes for ``s = <x, y>``; for dim 3 the negative
    weight's transform in closed form (``Ein`` and ``E1``)."""

    def __init__(self, model, beta: float, n_nodes: int = _N_NODES, closed_form: bool = True):
        p = model.dim
        alpha = (p - 3.0) / 2.0
        nodes, weights = special.roots_jacobi(n_nodes, alpha, alpha)
        log_tilt = model.kappa * nodes
        wp = weights * np.exp(log_tilt - log_tilt.max())
        super().__init__(np.exp(beta * nodes), weights / weights.sum(), wp / wp.sum(), beta,
                         mu=math.exp(float(model.log_partition(beta))))
        self.model, self.s = model, nodes
        self.closed_form = closed_form and p == 3
        self.w_max, self.w_min = math.exp(beta), math.exp(-beta)

    def laplace_neg_minus_one(self, t: np.ndarray) -> np.ndarray:
        if not self.closed_form:
            return super().laplace_neg_minus_one(t)
        t = np.asarray(t, dtype=np.float64)
        b = self.beta
        return -(ein(t * math.exp(b)) - ein(t * math.exp(-b))) / (2.0 * b)

    def _log_laplace_neg_large_t(self, t: np.ndarray) -> np.ndarray:
        if not self.closed_form:
            return super()._log_laplace_neg_large_t(t)
        b = self.beta
        with np.errstate(divide="ignore"):
            return np.log(special.exp1(t * math.exp(-b)) - special.exp1(t * math.exp(b))) - math.log(2.0 * b)


def expected_log_T(laws: _DiscreteLaws, ks, standard: bool = True):
    """``E[log T_k]`` for one anchor, ``T_k = (W+ + sum_{j<=k} W_j)/(k mu)`` (or without ``W+``),
    by the Laplace/Frullani integral (book, eq. ``c1-eq-frullani``).

    Returns ``(values, abs_error)``: a float64 array over ks and quad_vec's error estimate.
    """
    ks_arr = np.asarray(ks, dtype=np.float64)
    mu = laws.mu

    def integrand(v: float) -> np.ndarray:
        # f(u) = e^{-u} - G(u), G = L+(t) L(t)^k, t = u/(k mu); integrating f(u)/u du = f(e^v) dv.
        u = math.exp(v)
        t = u / (ks_arr * mu)
        pos = laws.log_laplace_pos(t) if standard else 0.0
        if u < 700.0:
            # log G + u = k (log L(t) + t mu) + log L+(t) is small where the two terms cancel.
            return -math.exp(-u) * np.expm1(ks_arr * laws.centred_cgf(t) + pos)
        # Far out e^{-u} < 1e-304: no cancellation left; form log G directly (u itself may
        # exceed 1e20, so adding and subtracting t mu k = u would lose all digits of log G).
        return math.exp(-u) - np.exp(ks_arr * laws.log_laplace_neg(t) + pos)

    # Where the integrand is negligible: below, f ~ u (E T - 1); above, L(t)^k decays once
    # t = u/(k mu) >> 1/min W.
    v_lo = math.log(1e-20)
    v_hi = math.log(ks_arr.max() * mu / laws.w_min) + math.log(60.0)
    # For k = 1 and small tau, L decays only logarithmically up to t ~ 1/min W; extend until
    # the largest remaining integrand is below 1e-20.
    while np.max(np.abs(integrand(v_hi))) > 1e-20:
        v_hi += 2.0
    values, err = integrate.quad_vec(integrand, v_lo, v_hi, epsabs=1e-14, epsrel=1e-12, limit=2000,
                                     points=[math.log(m) for m in (ks_arr.min() * mu, ks_arr.max() * mu)])
    return values, float(err)


def exact_bias(model, ks, tau, variant: str = "standard", *, closed_form: bool = True,
               return_error: bool = False, n_nodes: int = _N_NODES):
    """``L_k - log k - L_inf`` for each k, by the Laplace/Frullani quadrature (no Monte Carlo).

    Args:
        model: a :class:`~infonce_book.models.VonMisesFisher` or
            :class:`~infonce_book.models.FiniteModel` (then averaged over the anchors exactly).
        ks: sequence of integers >= 1 (numbers of negatives).
        tau: temperature > 0.
        variant: ``"standard"`` or ``"decoupled"``.
        closed_form: for the vMF model on S^2 use the ``Ein`` closed form of ``L`` (else
            Gauss--Jacobi).
        return_error: also return the integrator's estimate of the absolute error (one number).
    Returns:
        float64 array of shape (len(ks),), in nats; optionally ``(values, abs_error)``.
    Source: book, C1 chapter, eq. ``c1-eq-frullani``; DESIGN section 4.
    """
    check_choice(variant, "variant", VARIANTS)
    beta = 1.0 / check_tau(tau)
    ks_arr = np.array([check_k(k) for k in np.atleast_1d(ks)], dtype=np.float64)
    standard = variant == "standard"
    if hasattr(model, "anchor_laws"):  # finite model: an exact average over its N anchors
        values, err = np.zeros_like(ks_arr), 0.0
        for prob, laws in model.anchor_laws(beta):
            v, e = expected_log_T(laws, ks_arr, standard)
            values += prob * v
            err += prob * e
    else:
        laws = _SimilarityLaws(model, beta, n_nodes=n_nodes, closed_form=closed_form)
        values, err = expected_log_T(laws, ks_arr, standard)
    return (values, float(err)) if return_error else values


def exact_bias_with_error(model, ks, tau, variant: str = "standard"):
    """:func:`exact_bias` with a measured numerical error for each k.

    The error is the difference between two independent evaluations of the integrand (dim 3:
    the ``Ein`` closed form against Gauss--Jacobi quadrature; other dims: 256 against 320
    Gauss--Jacobi nodes) plus quad_vec's own error estimates. It captures the floating-point
    floor (about 1e-14 absolute), which quad_vec's estimate alone does not.

    Returns:
        ``(values, errors)``, two float64 arrays of shape (len(ks),), in nats.
    """
    v1, e1 = exact_bias(model, ks, tau, variant, return_error=True)
    if model.dim == 3:
        v2, e2 = exact_bias(model, ks, tau, variant, return_error=True, closed_form=False)
    else:
        v2, e2 = exact_bias(model, ks, tau, variant, return_error=True, n_nodes=320)
    return v1, np.abs(v1 - v2) + e1 + e2


def exact_centred_risk(model, ks, tau, variant: str = "standard") -> np.ndarray:
    """``L_k - log k`` for each k (the limit risk plus :func:`exact_bias`), float64 array."""
    return model.limit_risk(tau) + exact_bias(model, ks, tau, variant)


def snis_bias(m, f, p, ks) -> tuple[np.ndarray, float]:
    """Bias of the self-normalised importance-sampling average, exactly, for each k:

        E[ sum_j m_j f_j / sum_j m_j ] - E_p[m f],   j = 1..k i.i.d. from p (finitely many values),

    with ``E_p m = 1`` (``m`` a density ratio, so ``E_p[m f]`` is the mean of f under the target).
    Uses ``1/S = int_0^inf e^{-uS} du``: with ``u = v/k``, the first term is
    ``int_0^inf E[m f e^{-vm/k}] L_m(v/k)^{k-1} dv``, ``L_m(t) = E e^{-tm}``, and the integrand
    minus ``E[mf] e^{-v}`` is integrated directly, so the small bias is not a difference of two
    large numbers.

    Args:
        m, f, p: arrays of the same length (values of m, of f, and their probabilities).
        ks: integers >= 1.
    Returns:
        ``(bias for each k, absolute error estimate)``.
    Source: book, C2 chapter, Lemma ``c2-lem-snis``.
    """
    m, f, p = (np.asarray(a, dtype=np.float64) for a in (m, f, p))
    ks_arr = np.array([check_k(k) for k in np.atleast_1d(ks)], dtype=np.float64)
    mf = float(p @ (m * f))

    def log_lm(t):  # log E e^{-t m}: log1p form (relative accuracy) for small t, logsumexp beyond
        small = t * m.max() <= 0.5
        out = np.empty_like(t)
        out[small] = np.log1p(np.expm1(-np.multiply.outer(t[small], m)) @ p)
        with np.errstate(divide="ignore"):
            out[~small] = special.logsumexp(np.log(p) - np.multiply.outer(t[~small], m), axis=-1)
        return out

    def integrand(w: float) -> np.ndarray:  # v = e^w, dv = v dw
        v = math.exp(w)
        t = v / ks_arr
        with np.errstate(invalid="ignore", divide="ignore"):
            rest = np.where(ks_arr > 1, (ks_arr - 1) * log_lm(t), 0.0)  # L_m^0 = 1 even if L_m underflows
        first = (np.exp(-np.multiply.outer(t, m)) @ (p * m * f)) * np.exp(rest)
        return (first - mf * math.exp(-v)) * v

    w_hi = math.log(60.0 / min(1.0, m.min()))
    while np.max(np.abs(integrand(w_hi))) > 1e-22:
        w_hi += 1.0
    values, err = integrate.quad_vec(integrand, math.log(1e-20), w_hi, epsabs=1e-15, epsrel=1e-12, limit=2000)
    return values, float(err)
