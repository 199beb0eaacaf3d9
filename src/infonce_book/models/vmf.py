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
from scipy import optimize, special

from ..losses import VARIANTS
from ..theory import symbolic
from ..theory.bounds import search_bias_constant, search_bias_constant_l2, snis_bias_constant
from ..theory.exact import (
    N_NODES,
    DiscreteLaws,
    ein,
    exact_bias,
    exact_bias_with_error,
    exp1_from_log,
    expected_log_T,
    expected_log_T_blocks,
    snis_bias,
)
from ..theory.search import monte_carlo_search_cross_entropy
from ..theory.stats import Estimate
from ..theory.symbolic import bias_coefficient_functions, ntxent_bias_coefficients
from ..utils.device import resolve_device
from ..utils.validation import (
    check_choice,
    check_float_tensor,
    check_k,
    check_scalar,
    check_seed,
    check_tau,
    check_unit_norm,
    exp_or_raise,
)
from .base import ReferenceModel, register


def _check_points(x, name: str, dim: int, ndim: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != ndim or x.shape[-1] != dim:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        want = f"(n, {dim})" if ndim == 2 else f"(n, k, {dim})"
        raise ValueError(f"{name} must be a tensor of shape {want}, got {shape}")
    check_float_tensor(x, name)


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


def mean_resultant_length(dim: int, kappa) -> np.ndarray:
    """``A_p(kappa) = I_{p/2}(kappa) / I_{p/2-1}(kappa) = E <x, x+>`` for ``x+ ~ vMF(x, kappa)``."""
    dim = _check_dim(dim)
    kappa = np.asarray(kappa, dtype=np.float64)
    if np.any(~np.isfinite(kappa)) or np.any(kappa < 0):
        raise ValueError(f"kappa must be finite and >= 0, got kappa={kappa!r}")
    pos = np.maximum(kappa, 1e-8).reshape(-1)
    ratio = np.exp(_log_bessel_i(dim / 2.0, pos) - _log_bessel_i(dim / 2.0 - 1.0, pos)).reshape(kappa.shape)
    return np.where(kappa < 1e-8, kappa / dim, ratio)


@register("vmf")
class VonMisesFisher(ReferenceModel):
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

    identity_embedding = True
    param_names = ("dim", "kappa")

    def __init__(self, dim: int, kappa: float):
        self.dim = _check_dim(dim)
        self.kappa = check_scalar(kappa, "kappa", ge=0)

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

    def kl_softmax_vs_data(self, tau) -> float:
        """``KL(Q_tau(x, .) || pi)`` for phi = identity: ``Q_tau(x, .)`` is vMF(x, 1/tau), so the
        KL is ``beta A_p(beta) - log Z_p(beta)`` nats (book, Chapter 3); ``~ 1/(2 p tau^2)`` as
        tau -> infinity."""
        beta = 1.0 / check_tau(tau)
        return float(beta * mean_resultant_length(self.dim, beta) - self.log_partition(beta))

    def optimal_tau(self) -> float:
        """``1/kappa``: the temperature at which ``Q_tau = M`` and ``L_inf(tau)`` is minimal
        (``dL_inf/dbeta = A_p(beta) - A_p(kappa)``). Raises for kappa = 0 (no finite optimum)."""
        if self.kappa == 0.0:
            raise ValueError("optimal_tau: kappa = 0 has no finite optimal temperature (L_inf decreases to 0 as tau -> inf)")
        return 1.0 / self.kappa

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

    def normalised_weight_moments(self, tau) -> dict:
        """``log mu`` and the normalised moments of the weights given an anchor (constant in x):
        the raw moments ``u1, u2, u3`` of ``U = W+/mu`` and the central moments ``v2, v3, v4`` of
        ``V = W/mu``, each formed from log partition functions (finite where ``mu = E W`` itself
        overflows, e.g. tau = 1e-3 on S^2). Raises OverflowError naming the moment where one
        exceeds float64 (e.g. ``E V^4 ~ beta^(3(p-1)/2)`` at dim 768 and small tau).
        """
        tau = check_tau(tau)
        beta = 1.0 / tau
        lz = lambda b: float(self.log_partition(b))  # noqa: E731
        lmu = lz(beta)
        ev = {j: exp_or_raise(lz(j * beta) - j * lmu, f"E[(W/mu)^{j}]", tau) for j in range(1, 5)}
        u = {j: exp_or_raise(lz(self.kappa + j * beta) - lz(self.kappa) - j * lmu, f"E[(W+/mu)^{j}]", tau)
             for j in range(1, 4)}
        v2 = ev[2] - 1.0
        v3 = ev[3] - 3.0 * ev[2] + 2.0
        v4 = ev[4] - 4.0 * ev[3] + 6.0 * ev[2] - 3.0
        return {"log_mu": lmu, "u1": u[1], "u2": u[2], "u3": u[3], "v2": v2, "v3": v3, "v4": v4}

    def weight_moments(self, tau) -> dict:
        """Moments of the weights given an anchor (constant in x for this model).

        Returns a dict with ``mu = E W``, ``sigma2 = Var W``, ``log_mu``, the raw moments
        ``u1, u2, u3`` of ``U = W+/mu`` and the central moments ``v2, v3, v4`` of ``V = W/mu``.
        Raises OverflowError where ``mu`` or ``sigma2`` exceeds float64 (on S^2 below tau of about
        1/700): :meth:`normalised_weight_moments` has everything else.
        """
        tau = check_tau(tau)
        out = self.normalised_weight_moments(tau)
        hint = "; normalised_weight_moments(tau) gives log_mu and the normalised moments"
        mu = exp_or_raise(out["log_mu"], "mu = E W = Z(1/tau)", tau, hint)
        sigma2 = out["v2"] * mu * mu  # v2 >= 0 up to rounding
        if not math.isfinite(sigma2):
            raise OverflowError(f"sigma2 = Var W = v2 mu^2 overflows float64 at tau={tau!r}{hint}")
        return {"mu": mu, "sigma2": sigma2, **out}

    def bias_coefficients(self, tau, variant: str = "standard", order: int = 2) -> tuple:
        """``(c1, c2)`` (or up to ``c3``, ``c4`` with ``order=3``, ``4``) with
        ``k (L_k - log k - L_inf) = c1 + c2/k + c3/k^2 + c4/k^3 + O(k^-3.5)``.

        ``c1 = E(W+)/mu - sigma^2/(2 mu^2)`` (standard) or ``-sigma^2/(2 mu^2)`` (decoupled);
        the higher coefficients are those derived by :func:`infonce_book.theory.symbolic.log_expansion`.
        Source: book, Theorem ``c1-thm-rate``, Propositions ``c1-prop-second-order`` and
        ``c1-prop-third-order``.
        """
        check_choice(variant, "variant", VARIANTS)
        if order not in (1, 2, 3, 4):
            raise ValueError(f"order must be 1, 2, 3 or 4, got order={order!r}")
        mom = self.normalised_weight_moments(tau)
        args = (mom["u1"], mom["u2"], mom["u3"], mom["v2"], mom["v3"], mom["v4"])
        if order == 4:  # two more moments: u4 = E U^4 and v5 = E (V - 1)^5, from log partitions
            beta = 1.0 / check_tau(tau)
            lz, lmu = self._lz, mom["log_mu"]
            ev = [exp_or_raise(lz(j * beta) - j * lmu, f"E[(W/mu)^{j}]", tau) for j in range(6)]
            v5 = sum(math.comb(5, j) * ev[j] * (-1) ** (5 - j) for j in range(6))
            u4 = exp_or_raise(lz(self.kappa + 4 * beta) - lz(self.kappa) - 4 * lmu, "E[(W+/mu)^4]", tau)
            args = args + (u4, v5)
        return tuple(float(f(*args)) for f in bias_coefficient_functions(variant, order))

    def anchor_laws(self, beta: float, *, closed_form: bool = True, n_nodes: int = N_NODES):
        """The laws of the weights given an anchor, for the exact quadrature
        (:func:`infonce_book.theory.exact.exact_bias`): one ``(1.0, SimilarityLaws)`` pair, since
        in this model (phi orthogonal) the law of the weights given x does not depend on x."""
        yield 1.0, SimilarityLaws(self, beta, n_nodes=n_nodes, closed_form=closed_form)

    def independent_evaluation(self) -> dict:
        """Options of :meth:`anchor_laws` for a second, independent evaluation of the quadrature
        (dim 3: Gauss--Jacobi instead of the ``Ein`` closed form; else 320 instead of 256 nodes)."""
        return {"closed_form": False} if self.dim == 3 else {"n_nodes": 320}

    def exact_bias(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k - L_inf`` by the Laplace/Frullani quadrature (see :mod:`infonce_book.theory.exact`)."""
        return float(exact_bias(self, [check_k(k)], tau, variant)[0])

    def exact_centred_risk(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k`` exactly (quadrature, no Monte Carlo), in nats.

        Accurate to about 1e-9 absolute for k up to 10^6 (dim 3: closed-form Laplace transform;
        other dims: Gauss--Jacobi quadrature of the 1-D density of ``<x, y>``).
        Source: book, Chapter 1, eq. ``c1-eq-frullani``.
        """
        return self.limit_risk(tau) + self.exact_bias(k, tau, variant)

    # ------------------------------------------------------------------ similarity search (C2)
    def search_cross_entropy(self, k, tau, *, method="laplace", n_queries=20000, seed=0, device="cpu",
                             batch_size=None):
        """``E[H(M_hat_k(x, .), Q_hat_k(x, .))] - log k`` for the vMF model (phi = identity), in nats.

        ``method="laplace"`` (default): exact, ``L_inf - beta * SNIS bias + E log T_dec`` with both
        expectations by 1-D quadrature (:func:`infonce_book.exact.snis_bias`, Frullani).
        ``method="monte_carlo"``: ``n_queries`` queries with k unseen uniform database items each,
        seeded, on ``device``; a 95% interval.
        Returns an :class:`~infonce_book.theory.stats.Estimate` (``method`` says how it was
        computed). Source: book, Chapter 2, Theorem ``c2-thm-search``.
        """
        k = check_k(k, meaning="database size")
        tau = check_tau(tau)
        check_choice(method, "method", ("laplace", "monte_carlo"))
        if method == "laplace":
            return Estimate.exact(float(self.search_cross_entropy_curve([k], tau)[0]), method="laplace")
        dev = resolve_device(device)
        gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
        if batch_size is not None:
            batch_size = check_k(batch_size, "batch_size")
        log_zk = float(self.log_partition(self.kappa))
        bs = batch_size or max(1, min(4096, 2**22 // k))

        def sample_batch(n):
            x = self.sample_data(n, generator=gen, device=dev)
            db = self.sample_negatives(n, k, generator=gen, device=dev)
            s = torch.einsum("bd,bkd->bk", x, db)
            return s, self.kappa * s - log_zk

        n_queries = check_scalar(n_queries, "n_queries", ge=2, integer=True, why="an interval needs two queries")
        return monte_carlo_search_cross_entropy(sample_batch, k, n_queries, tau, bs)

    def search_cross_entropy_curve(self, ks, tau) -> np.ndarray:
        """``E[H(M_hat_k, Q_hat_k)] - log k`` for many k at once, exactly (Laplace method)."""
        beta = 1.0 / check_tau(tau)
        ks = [check_k(k, meaning="database size") for k in np.atleast_1d(ks)]
        laws = SimilarityLaws(self, beta)
        log_tilt = self.kappa * laws.s
        m = np.exp(log_tilt - log_tilt.max())
        m = m / (laws.w_neg @ m)
        bias, _ = snis_bias(m, laws.s, laws.w_neg, ks)
        log_t_dec, _ = expected_log_T(laws, ks, standard=False)
        return self.limit_risk(tau) - beta * bias + log_t_dec

    def search_gap_constant(self, tau, variant="standard") -> float:
        """``d1`` with ``k (E[H(M_hat_k, Q_hat_k)] - L_k) -> d1`` (book, Theorem ``c2-thm-search``):
        ``beta Cov_M(m, s) - E(W+)/mu`` (standard) or ``beta Cov_M(m, s)`` (decoupled), where for
        the vMF model ``Cov_M(m, s) = Z(2 kappa) (A_p(2 kappa) - A_p(kappa)) / Z(kappa)^2``."""
        check_choice(variant, "variant", VARIANTS)
        beta = 1.0 / check_tau(tau)
        kap = self.kappa
        log_z = lambda b: float(self.log_partition(b))  # noqa: E731
        a = lambda c: float(mean_resultant_length(self.dim, c))  # noqa: E731
        ratio = exp_or_raise(log_z(2 * kap) - 2 * log_z(kap), "Z(2 kappa) / Z(kappa)^2 = E_M m", 1.0 / beta)
        d1 = beta * ratio * (a(2 * kap) - a(kap))  # beta Cov_M(m, s)
        if variant == "standard":
            d1 -= self.normalised_weight_moments(tau)["u1"]
        return d1

    # ------------------------------------------------------------------ C2: constants of the bound
    def density_ratio_second_moment(self) -> float:
        """``R = E_pi m(x, .)^2 = Z(2 kappa)/Z(kappa)^2`` (the same for every x); also ``R_bar``."""
        return float(exp_or_raise(self._lz(2 * self.kappa) - 2 * self._lz(self.kappa), "Z(2 kappa)/Z(kappa)^2", 1.0))

    def _lz(self, b) -> float:
        return float(self.log_partition(b))

    def _A(self, b) -> float:
        return float(mean_resultant_length(self.dim, b))

    def search_bias_constants(self, tau) -> dict:
        """The constants of Theorem ``c2-thm-search`` for this model (phi = identity), in nats.

        * ``model``: ``beta B_S + u1 nu`` with the model's own moments (``B_S`` of Lemma
          ``c2-lem-snis``, ``nu = E[1/V | x] = Z(beta)^2``, so ``u1 nu = Z(kappa + beta) Z(beta)/Z(kappa)``);
        * ``uniform``: ``C_H(tau) = beta (2 R - 3/2) + e^{2 beta}``, valid for every embedding
          into the unit ball (:func:`~infonce_book.theory.bounds.search_bias_constant_l2`);
        * ``model_m_min``, ``uniform_m_min``: the constants of the bounded-ratio form, which
          need ``m >= m_min = e^{-kappa}/Z(kappa)``:
          ``beta sd(m) sd(m (s - i_s))/m_min + u1/a`` and
          :func:`~infonce_book.theory.bounds.search_bias_constant`;
        * ``R``, ``cov_M`` (``Cov_M(m, s)``), ``B_S``, ``u1_zeta``.

        Moments by ``E_pi[m^2 s^j] = Z^{(j)}(2 kappa)/Z(kappa)^2`` with ``Z' = Z A`` and
        ``Z'' = Z (A' + A^2)``, ``A' = 1 - A^2 - (p - 1) A / b``.
        """
        beta = 1.0 / check_tau(tau)
        kap, p = self.kappa, self.dim
        R = self.density_ratio_second_moment()
        i_s = self._A(kap)
        A2 = self._A(2 * kap) if kap > 0 else 0.0
        dA2 = 1.0 - A2**2 - ((p - 1) * A2 / (2 * kap) if kap > 0 else 1.0 / p)
        em2s, em2s2 = R * A2, R * (dA2 + A2**2)
        var_m, var_ms, cov = R - 1.0, em2s2 - i_s * i_s, em2s - R * i_s
        b_s = snis_bias_constant(var_m=max(var_m, 0.0), var_mf=max(var_ms, 0.0), cov_mf=cov, mean_f=i_s)
        u1_zeta = math.exp(self._lz(kap + beta) + self._lz(beta) - self._lz(kap))
        m_min = math.exp(-kap - self._lz(kap))
        sd_mres = math.sqrt(max(em2s2 - 2 * i_s * em2s + i_s * i_s * R, 0.0))
        u1_over_a = math.exp(beta + self._lz(kap + beta) - self._lz(kap))
        return {"model": beta * b_s + u1_zeta, "uniform": search_bias_constant_l2(tau, second_moment=R),
                "model_m_min": beta * math.sqrt(var_m) * sd_mres / m_min + u1_over_a,
                "uniform_m_min": search_bias_constant(tau, sd_m=math.sqrt(var_m), second_moment_m=R, m_min=m_min),
                "R": R, "cov_M": cov, "B_S": b_s, "u1_zeta": u1_zeta}

    # ------------------------------------------------------------------ C1: in-batch negatives
    def pair_weight_moments(self, tau, n_nodes: int = 400) -> dict:
        """Moments of the two views ``x_j``, ``x_j^+`` of another pair, as NT-Xent negatives of an
        anchor ``a`` (book, Proposition ``c1-prop-ntxent``): with ``V = e^{beta <a, x_j>}/mu`` and
        ``V' = e^{beta <a, x_j^+>}/mu``,

        ``E[W^i W'^j | a] = E_t[e^{i beta t} Z(sqrt(kappa^2 + j^2 beta^2 + 2 kappa j beta t))] / Z(kappa)``

        (``t = <a, x_j>`` under pi; Gauss--Jacobi quadrature in t, log space). Returns
        ``gamma = Cov(V, V' | a)``, ``delta = E[(V - 1)^2 (V' - 1) | a]`` and ``E_VV = E[V V' | a]``,
        the same for every anchor.
        """
        beta = 1.0 / check_tau(tau)
        n_nodes = check_k(n_nodes, "n_nodes")
        alpha = (self.dim - 3.0) / 2.0
        t, w = special.roots_jacobi(n_nodes, alpha, alpha)
        log_w = np.log(w / w.sum())
        kap, lmu = self.kappa, self._lz(beta)

        def log_moment(i, j):  # log E[V^i V'^j]
            r = np.sqrt(np.maximum(kap**2 + (j * beta) ** 2 + 2 * kap * j * beta * t, 0.0))
            vals = log_w + i * beta * t + log_vmf_partition(self.dim, r)
            return float(special.logsumexp(vals)) - self._lz(kap) - (i + j) * lmu

        e_vv, e_v2v = math.exp(log_moment(1, 1)), math.exp(log_moment(2, 1))
        e_v2 = math.exp(self._lz(2 * beta) - 2 * lmu)
        return {"gamma": e_vv - 1.0, "delta": e_v2v - e_v2 - 2.0 * e_vv + 2.0, "E_VV": e_vv}

    def in_batch_bias_coefficients(self, tau, form: str = "clip") -> tuple:
        """``(c1, c2)`` of the in-batch forms (book, Chapter 1, in-batch section): with ``k``
        negatives per row (``B - 1`` for ``"clip"``, ``2B - 2`` for ``"nt_xent"``),
        ``k (L_B - log k - L_inf) = c1 + c2/k + O(k^-2)``. CLIP: InfoNCE's ``c1, c2``
        (Proposition ``c1-prop-clip``); NT-Xent: ``c1 - gamma/2`` and
        :func:`~infonce_book.theory.symbolic.ntxent_bias_coefficients` (Proposition
        ``c1-prop-ntxent``)."""
        check_choice(form, "form", ("clip", "nt_xent"))
        if form == "clip":
            return self.bias_coefficients(tau, "standard", order=2)
        mom, pair = self.normalised_weight_moments(tau), self.pair_weight_moments(tau)
        subs = {symbolic.u1: mom["u1"], symbolic.u2: mom["u2"], symbolic.v2: mom["v2"], symbolic.v3: mom["v3"],
                symbolic.gamma_pair: pair["gamma"], symbolic.delta_pair: pair["delta"]}
        return tuple(float(c.xreplace(subs)) for c in ntxent_bias_coefficients(2))

    def _pair_laws(self, beta: float, nodes: tuple):
        """Node laws of ``S = V + V'`` (one pair of views of another batch element) and of the
        positive's ``U``, given an anchor: 3-D product rule in ``t = <a, x_j>``, the cosine
        ``w = <x_j, x_j^+>`` (vMF-weighted) and the cosine ``c`` of the direction of ``x_j^+``
        about ``x_j`` against that of ``a`` (density ``(1 - c^2)^{(p-4)/2}``), so that
        ``<a, x_j^+> = t w + sqrt(1 - t^2) sqrt(1 - w^2) c``. Checked against the closed-form
        moments (raises ValueError if a relative error exceeds ``RESOLUTION_TOLERANCE``)."""
        if self.dim < 3:
            raise ValueError(f"the NT-Xent pair law needs dim >= 3, got dim={self.dim}")
        n_t, n_w, n_c = nodes
        a = (self.dim - 3.0) / 2.0
        t, wt = special.roots_jacobi(n_t, a, a)
        w, ww = special.roots_jacobi(n_w, a, a)
        c, wc = special.roots_jacobi(n_c, (self.dim - 4.0) / 2.0, (self.dim - 4.0) / 2.0)
        ww = ww * np.exp(self.kappa * (w - 1.0))
        wt, ww, wc = wt / wt.sum(), ww / ww.sum(), wc / wc.sum()
        t2 = (t[:, None, None] * w[None, :, None]
              + np.sqrt(1 - t**2)[:, None, None] * np.sqrt(1 - w**2)[None, :, None] * c[None, None, :])
        lmu = self._lz(beta)
        V = np.broadcast_to(np.exp(beta * t - lmu)[:, None, None], t2.shape).ravel()
        Vp = np.exp(beta * t2 - lmu).ravel()
        weights = (wt[:, None, None] * ww[None, :, None] * wc[None, None, :]).ravel()
        U = np.exp(beta * w - lmu)
        pair = self.pair_weight_moments(1.0 / beta)
        mom = self.normalised_weight_moments(1.0 / beta)
        checks = (("E V", weights @ V, 1.0), ("E V'", weights @ Vp, 1.0),
                  ("E V V'", weights @ (V * Vp), 1.0 + pair["gamma"]), ("E U", ww @ U, mom["u1"]))
        for name, got, want in checks:
            if not abs(got / want - 1.0) <= RESOLUTION_TOLERANCE:
                raise ValueError(f"the NT-Xent pair law is not resolved at dim={self.dim}, kappa={self.kappa:g}, "
                                 f"tau={1.0 / beta:g} with nodes {nodes}: {name} = {got:.12g} against {want:.12g}")
        return V + Vp, weights, U, ww

    def exact_in_batch_bias(self, batch_sizes, tau, form: str = "nt_xent", *,
                            nodes: tuple = (64, 64, 32)) -> tuple[np.ndarray, np.ndarray]:
        """``E log T`` of an anchor row of the in-batch losses, i.e. ``L^form_B - log k - L_inf``
        with ``k = B - 1`` (CLIP, either direction) or ``k = 2B - 2`` (NT-Xent), for each batch
        size ``B >= 2``, by quadrature (no Monte Carlo).

        CLIP: each row has the law of an InfoNCE tuple with ``k = B - 1`` (Proposition
        ``c1-prop-clip``), so this is :func:`~infonce_book.theory.exact.exact_bias_with_error`.
        NT-Xent: the pairs' law on a 3-D product rule (``nodes``) and
        :func:`~infonce_book.theory.exact.expected_log_T_blocks` with ``block = 2``; the error
        adds the change with 3/4 of the nodes in each direction to the step error.

        Returns:
            ``(values, errors)``, float64 arrays over the batch sizes, in nats.
        """
        check_choice(form, "form", ("clip", "nt_xent"))
        beta = 1.0 / check_tau(tau)
        Bs = [check_scalar(B, "batch size B", ge=2, integer=True, why="an in-batch row needs one other pair") for B in
              np.atleast_1d(batch_sizes)]
        if form == "clip":
            return exact_bias_with_error(self, [B - 1 for B in Bs], tau, "standard")
        n = [B - 1 for B in Bs]
        S, wS, U, wU = self._pair_laws(beta, nodes)
        v1, e1 = expected_log_T_blocks(S, wS, U, wU, n, block=2)
        S, wS, U, wU = self._pair_laws(beta, tuple(max(8, 3 * q // 4) for q in nodes))
        v2, e2 = expected_log_T_blocks(S, wS, U, wU, n, block=2)
        return v1, e1 + e2 + np.abs(v1 - v2)

    # ------------------------------------------------------------------ C3: the approximation error
    def search_approximation_error(self, tau) -> float:
        """``E_x KL(M(x, .) || Q_tau(x, .))`` for phi = identity (or any orthogonal map):
        ``KL(vMF(kappa) || vMF(beta)) = (kappa - beta) A_p(kappa) - log Z(kappa) + log Z(beta)``
        (book, Theorem ``c3-thm-vmf-approx`` (1)); 0 exactly at ``tau = 1/kappa``."""
        beta = 1.0 / check_tau(tau)
        return float((self.kappa - beta) * self._A(self.kappa) - self._lz(self.kappa) + self._lz(beta))

    def kl_kernel_vs_data(self) -> float:
        """``KL(M(x, .) || pi) = kappa A_p(kappa) - log Z(kappa)`` (the mutual information of a pair)."""
        return float(self.kappa * self._A(self.kappa) - self._lz(self.kappa))

    def _gegenbauer(self, n_max: int, n_quad: int = 800):
        """Normalised Gegenbauer polynomials ``G_n`` (``G_n(1) = 1``) on Gauss--Jacobi nodes of
        the law of ``t = <x, y>`` under pi, and ``A_n(c) = E_{vMF(c)} G_n(t) = I_{n+p/2-1}(c)/I_{p/2-1}(c)``."""
        if self.dim < 3:
            raise ValueError(f"the approximation-error programme needs dim >= 3, got dim={self.dim}")
        a = (self.dim - 3.0) / 2.0
        t, w = special.roots_jacobi(n_quad, a, a)
        lam = (self.dim - 2.0) / 2.0
        nn = np.arange(n_max + 1)
        G = np.array([special.eval_gegenbauer(n, lam, t) / special.eval_gegenbauer(n, lam, 1.0) for n in nn])

        def A_n(c):
            if c == 0.0:
                return (nn == 0).astype(float)
            return np.exp(_log_bessel_i_orders(nn + self.dim / 2.0 - 1.0, c)
                          - _log_bessel_i_orders(np.array([self.dim / 2.0 - 1.0]), c)[0])

        return t, w / w.sum(), G, A_n

    def best_search_approximation_error(self, tau, *, n_max: int = 20, n_check: int = 40) -> dict:
        """``inf_phi E_x KL(M(x, .) || Q^phi_tau(x, .))`` over all embeddings into a unit sphere
        (of any dimension), by the convex programme of Theorem ``c3-thm-vmf-approx``:
        ``KL(M || pi) + min { F(b) : b_n >= 0, sum_{n>=1} b_n <= beta }`` with
        ``F(b) = -sum_n b_n A_n(kappa) + log E_t exp(sum_n b_n G_n(t))``.

        For ``tau <= 1/kappa`` the value is 0 (the cone embedding). Otherwise SLSQP over
        ``b_1..b_{n_max}``, certified by the Frank--Wolfe duality gap over ``n <= n_check``
        (``F(b) - min F <= gap``).

        Returns:
            dict with ``value`` (nats), ``identity`` (the identity's error), ``coefficients``
            (``b / beta``, list), ``gap`` (the certificate), ``embedding`` (``"cone"`` or
            ``"gegenbauer"``).
        """
        beta = 1.0 / check_tau(tau)
        kap = self.kappa
        ident = self.search_approximation_error(tau)
        if beta >= kap:
            return {"value": 0.0, "identity": ident, "coefficients": [kap / beta], "gap": 0.0, "embedding": "cone"}
        t, w, G, A_n = self._gegenbauer(max(n_max, n_check))
        Ak = A_n(kap)

        def F(b):
            g = b @ G[1:len(b) + 1]
            return float(-b @ Ak[1:len(b) + 1] + special.logsumexp(g, b=w))

        def grad(b, upto):
            g = b @ G[1:len(b) + 1]
            q = w * np.exp(g - g.max())
            return -Ak[1:upto + 1] + G[1:upto + 1] @ (q / q.sum())

        x0 = np.zeros(n_max)
        x0[0] = 0.999 * beta
        cons = [{"type": "ineq", "fun": lambda v: beta - v.sum(), "jac": lambda v: -np.ones(n_max)}]
        res = optimize.minimize(F, x0, jac=lambda v: grad(v, n_max), bounds=[(0.0, None)] * n_max,
                                constraints=cons, method="SLSQP", options={"ftol": 1e-16, "maxiter": 2000})
        b = np.clip(res.x, 0.0, None)
        gfull = grad(b, n_check)
        gap = float(gfull[:n_max] @ b - beta * min(0.0, float(gfull.min())))
        return {"value": self.kl_kernel_vs_data() + F(b), "identity": ident,
                "coefficients": (b / beta).tolist(), "gap": max(gap, 0.0), "embedding": "gegenbauer"}

    def identity_optimality_threshold(self, n_check: int = 40) -> float | None:
        """``tau*``: for ``1/kappa < tau`` the identity minimises ``E_x KL(M || Q^phi_tau)`` over all
        embeddings iff ``tau >= tau*`` (Theorem ``c3-thm-vmf-approx`` (4): iff
        ``A_1(kappa) - A_1(beta) >= A_n(kappa) - A_n(beta)`` for all ``n >= 2``). ``None`` when the
        condition holds on the whole range (checked on ``n <= n_check`` and a grid of 400 values of
        beta in ``(0, kappa)``); ValueError when the set where it holds is not one interval."""
        kap = self.kappa
        if kap == 0.0:
            return None
        _, _, _, A_n = self._gegenbauer(n_check, n_quad=8)
        Ak = A_n(kap)

        def margin(b):
            Ab = A_n(b)
            return float((Ak[1] - Ab[1]) - np.max(Ak[2:] - Ab[2:]))

        grid = np.linspace(kap * 1e-3, kap * (1 - 1e-3), 400)
        vals = np.array([margin(b) for b in grid])
        bad = np.nonzero(vals < 0)[0]
        if bad.size == 0:
            return None
        i = bad[0]
        if i == 0:
            return float("inf")
        if not np.all(vals[i:] < 0):
            raise ValueError(f"the identity's optimality condition changes sign more than once on (0, kappa) "
                             f"at kappa={kap:g}: no single threshold tau*")
        return 1.0 / optimize.brentq(margin, grid[i - 1], grid[i], xtol=1e-12)

    # ------------------------------------------------------------------ C3: the decoupled minimiser
    def decoupled_slope(self, beta: float, k: int) -> float:
        """``d/dbeta (L_k^dec - log k)`` at inverse temperature beta: ``A_p(beta) - A_p(kappa) + b_k(beta)``
        with ``b_k`` the exact bias of the self-normalised average of ``s`` with weights
        ``e^{beta s}`` under pi (:func:`~infonce_book.theory.exact.snis_bias`; book, Proposition
        ``c3-prop-decoupled-rate``)."""
        a = (self.dim - 3.0) / 2.0
        s, w = special.roots_jacobi(N_NODES, a, a)
        w = w / w.sum()
        v = np.exp(beta * (s - 1.0))
        bias, _ = snis_bias(v / (w @ v), s, w, [check_k(k)])
        return float(self._A(beta) - self._A(self.kappa) + bias[0])

    def decoupled_risk_minimiser(self, k) -> float:
        """The temperature ``tau_k`` minimising the decoupled risk ``L_k^dec`` (phi = identity), as
        the root of :meth:`decoupled_slope` (the risk is convex in ``beta``). Raises ValueError when
        the slope stays negative up to ``beta = 300`` (then the risk decreases as tau -> 0 over that
        whole range; on S^2 it has no minimiser at all when ``(k - 1)/(k + 1) < A_3(kappa)``)."""
        k = check_k(k)
        if self.kappa == 0.0:
            raise ValueError("kappa = 0: the decoupled risk has no finite minimiser")
        lo, hi = self.kappa / 4.0, self.kappa * 1.5
        while self.decoupled_slope(lo, k) > 0 and lo > 1e-6:
            lo /= 2.0
        while self.decoupled_slope(hi, k) < 0:
            hi *= 1.5
            if hi > 300.0:  # beyond, e^{beta (s - 1)} underflows at s = -1
                raise ValueError(f"the decoupled risk at k={k} has no minimiser above tau=1/300 (its slope "
                                 f"in beta stays negative: it decreases as tau -> 0)")
        return 1.0 / optimize.brentq(lambda b: self.decoupled_slope(b, k), lo, hi, xtol=1e-13, rtol=1e-14)

    def decoupled_rate_constant(self) -> float:
        """``C = v2'(kappa) / (2 A_p'(kappa))`` with ``v2(beta) = Z(2 beta)/Z(beta)^2 - 1``: the
        decoupled minimiser is ``beta_k = kappa + C/k + O(k^-2)``, i.e.
        ``tau_k = 1/kappa - C/(kappa^2 k) + O(k^-2)`` (book, Proposition ``c3-prop-decoupled-rate``)."""
        kap, p = self.kappa, self.dim
        if kap == 0.0:
            raise ValueError("kappa = 0: the decoupled risk has no finite minimiser")
        dm2 = 2.0 * math.exp(self._lz(2 * kap) - 2 * self._lz(kap)) * (self._A(2 * kap) - self._A(kap))
        A = self._A(kap)
        return float(dm2 / (2.0 * (1.0 - A * A - (p - 1) * A / kap)))

    # ------------------------------------------------------------------ samplers
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


# Relative agreement that the vMF laws on the quadrature nodes must reach with the closed forms
# (the first two moments of W/mu under the data and the positive-pair laws, and the mean cosine of
# a positive) before the quadrature is trusted; well-resolved cases reach about 1e-13.
RESOLUTION_TOLERANCE = 1e-8


class SimilarityLaws(DiscreteLaws):
    """The vMF model's weights ``V = e^{beta s} / mu`` (in units of their mean, so nothing
    overflows) on Gauss--Jacobi nodes for ``s = <x, y>``; for dim 3 the negative weight's
    transform in closed form (``Ein`` and ``E1``).

    Raises ValueError when the nodes cannot resolve the laws (a large kappa or beta in a high
    dimension puts the mass of ``e^{kappa s}`` or ``e^{beta s}`` where the nodes are sparse): the
    node averages of ``V`` and ``V^2`` (negative and positive) and of the positive's cosine are
    compared with their closed forms (``E V^j = Z(j beta) / Z(beta)^j``,
    ``E V+^j = Z(kappa + j beta) / (Z(kappa) Z(beta)^j)``, ``A_p(kappa)``).
    """

    def __init__(self, model, beta: float, n_nodes: int = N_NODES, closed_form: bool = True):
        p = model.dim
        alpha = (p - 3.0) / 2.0
        nodes, weights = special.roots_jacobi(n_nodes, alpha, alpha)
        log_tilt = model.kappa * nodes
        wp = weights * np.exp(log_tilt - log_tilt.max())
        log_mu = float(model.log_partition(beta))
        log_V = beta * nodes - log_mu
        super().__init__(np.exp(log_V), weights / weights.sum(), wp / wp.sum(), beta, mu=1.0, log_W=log_V)
        self.model, self.s, self.log_mu = model, nodes, log_mu
        self.closed_form = closed_form and p == 3
        self.w_max, self.log_w_min = math.exp(beta - log_mu), -beta - log_mu
        lz = lambda b: float(model.log_partition(b))  # noqa: E731
        kap = model.kappa
        log_v2 = 2.0 * log_V
        # (name, log of the node average, log of the closed form): the first and second moments
        # of V under both laws, and the positive's mean cosine (shifted to be positive).
        checks = [
            ("E[W/mu] (negatives)", special.logsumexp(log_V, b=self.w_neg), 0.0),
            ("E[(W/mu)^2] (negatives)", special.logsumexp(log_v2, b=self.w_neg), lz(2.0 * beta) - 2.0 * log_mu),
            ("E[W+/mu] (positive)", special.logsumexp(log_V, b=self.w_pos), lz(kap + beta) - lz(kap) - log_mu),
            ("E[(W+/mu)^2] (positive)", special.logsumexp(log_v2, b=self.w_pos),
             lz(kap + 2.0 * beta) - lz(kap) - 2.0 * log_mu),
            ("1 + E<x, x+> (positive)", math.log(1.0 + float(self.w_pos @ nodes)),
             math.log(1.0 + float(mean_resultant_length(p, kap)))),
        ]
        for name, log_nodes, log_closed in checks:
            err = abs(float(log_nodes) - log_closed)  # relative error, to first order
            if not err <= RESOLUTION_TOLERANCE:
                raise ValueError(
                    f"the exact quadrature does not resolve the vMF model at dim={p}, kappa={kap:g}, "
                    f"tau={1.0 / beta:g} with {n_nodes} Gauss--Jacobi nodes: their {name} is "
                    f"exp({float(log_nodes):.10g}) against the closed form exp({log_closed:.10g}) (relative "
                    f"error {err:.2g} > {RESOLUTION_TOLERANCE:g}); use a larger tau or a smaller kappa here, "
                    f"or Monte Carlo (infonce_book.theory.estimators.monte_carlo_bias)")

    def laplace_neg_minus_one(self, t: np.ndarray) -> np.ndarray:
        if not self.closed_form:
            return super().laplace_neg_minus_one(t)
        t = np.asarray(t, dtype=np.float64)
        b, lm = self.beta, self.log_mu
        return -(ein(t * math.exp(b - lm)) - ein(t * math.exp(-b - lm))) / (2.0 * b)

    def _log_laplace_neg_large_log_t(self, log_t: np.ndarray) -> np.ndarray:
        if not self.closed_form:
            return super()._log_laplace_neg_large_log_t(log_t)
        b, lm = self.beta, self.log_mu
        with np.errstate(divide="ignore"):
            return np.log(exp1_from_log(log_t - b - lm) - exp1_from_log(log_t + b - lm)) - math.log(2.0 * b)
