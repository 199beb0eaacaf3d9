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

from ._validation import (check_at_least, check_choice, check_float_tensor, check_k, check_nonneg, check_seed,
                          check_tau, check_unit_norm)
from .losses import VARIANTS


def _check_dim(dim) -> int:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"dim must be an integer >= 2 (the sphere S^(dim-1) in R^dim), got {dim!r}")
    if dim < 2:
        raise ValueError(f"dim must be an integer >= 2 (the sphere S^(dim-1) in R^dim), got dim={dim}")
    return int(dim)


def _exp_or_raise(log_value: float, name: str, tau: float, hint: str = "") -> float:
    """``exp(log_value)``, or OverflowError naming the quantity and tau where float64 cannot hold it."""
    if log_value > 709.78:
        raise OverflowError(f"{name} = exp({log_value:.6g}) overflows float64 at tau={tau!r}{hint}")
    return math.exp(log_value)


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
    if np.any(~np.isfinite(kappa)) or np.any(kappa < 0):
        raise ValueError(f"kappa must be finite and >= 0, got kappa={kappa!r}")
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

    def kl_softmax_vs_data(self, tau) -> float:
        """``KL(Q_tau(x, .) || pi)`` for phi = identity: ``Q_tau(x, .)`` is vMF(x, 1/tau), so the
        KL is ``beta A_p(beta) - log Z_p(beta)`` nats (book, C3 chapter); ``~ 1/(2 p tau^2)`` as
        tau -> infinity."""
        beta = 1.0 / check_tau(tau)
        return float(beta * mean_resultant_length(self.dim, beta) - self.log_partition(beta))

    def optimal_tau(self) -> float:
        """``1/kappa``: the temperature at which ``Q_tau = M`` and ``L_inf(tau)`` is minimal
        (``dL_inf/dbeta = A_p(beta) - A_p(kappa)``). Raises for kappa = 0 (no finite optimum)."""
        if self.kappa == 0.0:
            raise ValueError("optimal_tau: kappa = 0 has no finite optimal temperature (L_inf decreases to 0 as tau -> inf)")
        return 1.0 / self.kappa

    def log_density_ratio(self, s) -> np.ndarray:
        """``log m(x, y) = kappa s - log Z(kappa)`` as a function of ``s = <x, y>`` in [-1, 1]."""
        s = np.asarray(s, dtype=np.float64)
        if not np.all(np.isfinite(s)) or np.any(np.abs(s) > 1.0 + 1e-12):
            raise ValueError(f"s must hold cosines <x, y> in [-1, 1] (finite), got values in "
                             f"[{np.min(s):.6g}, {np.max(s):.6g}]")
        return self.kappa * s - float(self.log_partition(self.kappa))

    def normalised_weight_moments(self, tau) -> dict:
        """``log mu`` and the normalised moments of the weights given an anchor (constant in x):
        the raw moments ``u1, u2, u3`` of ``U = W+/mu`` and the central moments ``m2, m3, m4`` of
        ``V = W/mu``, each formed from log partition functions (finite where ``mu = E W`` itself
        overflows, e.g. tau = 1e-3 on S^2). Raises OverflowError naming the moment where one
        exceeds float64 (e.g. ``E V^4 ~ beta^(3(p-1)/2)`` at dim 768 and small tau).
        """
        tau = check_tau(tau)
        beta = 1.0 / tau
        lz = lambda b: float(self.log_partition(b))  # noqa: E731
        lmu = lz(beta)
        ev = {j: _exp_or_raise(lz(j * beta) - j * lmu, f"E[(W/mu)^{j}]", tau) for j in range(1, 5)}
        u = {j: _exp_or_raise(lz(self.kappa + j * beta) - lz(self.kappa) - j * lmu, f"E[(W+/mu)^{j}]", tau)
             for j in range(1, 4)}
        m2 = ev[2] - 1.0
        m3 = ev[3] - 3.0 * ev[2] + 2.0
        m4 = ev[4] - 4.0 * ev[3] + 6.0 * ev[2] - 3.0
        return {"log_mu": lmu, "u1": u[1], "u2": u[2], "u3": u[3], "m2": m2, "m3": m3, "m4": m4}

    def weight_moments(self, tau) -> dict:
        """Moments of the weights given an anchor (constant in x for this model).

        Returns a dict with ``mu = E W``, ``sigma2 = Var W``, ``log_mu``, the raw moments
        ``u1, u2, u3`` of ``U = W+/mu`` and the central moments ``m2, m3, m4`` of ``V = W/mu``.
        Raises OverflowError where ``mu`` or ``sigma2`` exceeds float64 (on S^2 below tau of about
        1/700): :meth:`normalised_weight_moments` has everything else.
        """
        tau = check_tau(tau)
        out = self.normalised_weight_moments(tau)
        hint = "; normalised_weight_moments(tau) gives log_mu and the normalised moments"
        mu = _exp_or_raise(out["log_mu"], "mu = E W = Z(1/tau)", tau, hint)
        sigma2 = out["m2"] * mu * mu  # m2 >= 0 up to rounding
        if not math.isfinite(sigma2):
            raise OverflowError(f"sigma2 = Var W = m2 mu^2 overflows float64 at tau={tau!r}{hint}")
        return {"mu": mu, "sigma2": sigma2, **out}

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

        mom = self.normalised_weight_moments(tau)
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

    # ------------------------------------------------------------------ similarity search (C2)
    def search_cross_entropy(self, k, tau, *, method="laplace", n_queries=20000, seed=0, device="cpu",
                             batch_size=None):
        """``E[H(M_hat_k(x, .), Q_hat_k(x, .))] - log k`` for the vMF model (phi = identity), in nats.

        ``method="laplace"`` (default): exact, ``L_inf - beta * SNIS bias + E log T_dec`` with both
        expectations by 1-D quadrature (:func:`infonce_book.exact.snis_bias`, Frullani).
        ``method="monte_carlo"``: ``n_queries`` queries with k unseen uniform database items each,
        seeded, on ``device``; a 95% interval.
        Returns a :class:`SearchCrossEntropy`. Source: book, C2 chapter, Theorem ``c2-thm-search``.
        """
        from .device import resolve_device

        k = check_k(k, meaning="database size")
        tau = check_tau(tau)
        check_choice(method, "method", ("laplace", "monte_carlo"))
        if method == "laplace":
            val = float(self.search_cross_entropy_curve([k], tau)[0])
            return SearchCrossEntropy(val, val, val, "laplace")
        dev = resolve_device(device)
        gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
        if batch_size is not None:
            batch_size = check_k(batch_size, "batch_size")
        log_zk = float(self.log_partition(self.kappa))
        bs = batch_size or max(1, min(4096, 2**22 // k))

        def sample_batch(n):
            x = self.sample_uniform(n, generator=gen, device=dev)
            db = self.sample_uniform(n * k, generator=gen, device=dev).reshape(n, k, self.dim)
            s = torch.einsum("bd,bkd->bk", x, db)
            return s, self.kappa * s - log_zk

        return _mc_search_cross_entropy(sample_batch, k, check_at_least(n_queries, "n_queries", 2, "an interval "
                                        "needs two queries"), tau, bs)

    def search_cross_entropy_curve(self, ks, tau) -> np.ndarray:
        """``E[H(M_hat_k, Q_hat_k)] - log k`` for many k at once, exactly (Laplace method)."""
        from .exact import _SimilarityLaws, expected_log_T, snis_bias

        beta = 1.0 / check_tau(tau)
        ks = [check_k(k, meaning="database size") for k in np.atleast_1d(ks)]
        laws = _SimilarityLaws(self, beta)
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
        ratio = _exp_or_raise(log_z(2 * kap) - 2 * log_z(kap), "Z(2 kappa) / Z(kappa)^2 = E_M m", 1.0 / beta)
        d1 = beta * ratio * (a(2 * kap) - a(kap))  # beta Cov_M(m, s)
        if variant == "standard":
            d1 -= self.normalised_weight_moments(tau)["u1"]
        return d1

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


# ---------------------------------------------------------------------------------------------
# Shared by the models: the similarity-search quantities of the C2 chapter.


class SearchCrossEntropy(tuple):
    """``(value, ci_low, ci_high, method)``: ``E[H(M_hat_k, Q_hat_k)] - log k`` in nats, a 95%
    interval (equal to the value for the exact methods) and how it was computed
    (``"enumeration"``, ``"laplace"`` or ``"monte_carlo"``)."""

    def __new__(cls, value, ci_low, ci_high, method):
        return super().__new__(cls, (float(value), float(ci_low), float(ci_high), method))

    def __repr__(self) -> str:
        return (f"SearchCrossEntropy(value={self[0]!r}, ci_low={self[1]!r}, ci_high={self[2]!r}, "
                f"method={self[3]!r})")

    value = property(lambda self: self[0])
    ci_low = property(lambda self: self[1])
    ci_high = property(lambda self: self[2])
    method = property(lambda self: self[3])


def _mc_search_cross_entropy(sample_batch, k: int, n_queries: int, tau: float, batch_size: int):
    """Monte Carlo mean of ``H(M_hat, Q_hat) - log k`` with a 95% normal interval.

    ``sample_batch(n)`` returns ``(s_db, log_m_db)`` of shape (n, k) for n fresh queries.
    """
    from .search import search_cross_entropy

    vals = []
    for lo in range(0, n_queries, batch_size):
        s_db, log_m_db = sample_batch(min(batch_size, n_queries - lo))
        vals.append((search_cross_entropy(s_db, log_m_db, tau) - math.log(k)).double().cpu().numpy())
    v = np.concatenate(vals)
    mean, half = float(v.mean()), 1.959963984540054 * float(v.std(ddof=1)) / math.sqrt(len(v))
    return SearchCrossEntropy(mean, mean - half, mean + half, "monte_carlo")


def _as_float64_array(x, name: str, ndim: int) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return arr


class FiniteModel:
    """A data distribution on N points, where everything is exact (book, C2 chapter).

    Args:
        pi: (N,) data distribution: entries > 0 summing to 1.
        kernel: (N, N) positive-pair Markov kernel ``M``: entries > 0, rows summing to 1.
        embeddings: (N, d) the embedding ``phi`` of the N points, unit rows.
    Raises:
        ValueError/TypeError naming the argument: wrong shapes, non-finite entries, ``pi`` not a
        probability vector, ``kernel`` not row-stochastic or with zero entries (then
        ``m = M/pi`` would vanish), embeddings not of unit norm.
    """

    def __init__(self, pi, kernel, embeddings):
        pi = _as_float64_array(pi, "pi", 1)
        kernel = _as_float64_array(kernel, "kernel", 2)
        emb = _as_float64_array(embeddings, "embeddings", 2)
        n = pi.shape[0]
        if n < 1:
            raise ValueError("pi must have at least one point")
        if kernel.shape != (n, n):
            raise ValueError(f"kernel must have shape (N, N) = ({n}, {n}) to match pi; got {kernel.shape}")
        if emb.shape[0] != n:
            raise ValueError(f"embeddings must have shape (N, d) with N = {n}; got {emb.shape}")
        if np.any(pi <= 0) or abs(pi.sum() - 1.0) > 1e-9:
            raise ValueError(f"pi must be a probability vector with entries > 0 summing to 1; "
                             f"min {pi.min():.3g}, sum {pi.sum():.12g}")
        if np.any(kernel <= 0):
            raise ValueError("kernel must have all entries > 0 (the positive-pair kernel M must be "
                             f"equivalent to pi); found {int((kernel <= 0).sum())} entries <= 0")
        rows = kernel.sum(axis=1)
        if np.max(np.abs(rows - 1.0)) > 1e-9:
            raise ValueError(f"kernel must be row-stochastic (rows summing to 1); row sums range "
                             f"{rows.min():.12g} .. {rows.max():.12g}")
        norms = np.linalg.norm(emb, axis=1)
        if np.max(np.abs(norms - 1.0)) > 1e-9:
            raise ValueError(f"embeddings must have unit-norm rows; the largest |norm - 1| is "
                             f"{np.max(np.abs(norms - 1.0)):.3g}")
        self.pi, self.kernel, self.embeddings = pi, kernel, emb
        self.S = np.clip(emb @ emb.T, -1.0, 1.0)  # cosines; clip only removes rounding beyond +-1
        self.m = kernel / pi[None, :]  # m(x, y) = M(x, y) / pi(y)

    @property
    def N(self) -> int:
        return self.pi.shape[0]

    def __repr__(self) -> str:
        return f"FiniteModel(N={self.N}, d={self.embeddings.shape[1]})"

    @property
    def params(self) -> dict:
        return {"model": "finite", "N": self.N, "d": int(self.embeddings.shape[1])}

    @classmethod
    def random(cls, n: int, dim: int, *, concentration: float = 4.0, seed: int = 0) -> "FiniteModel":
        """A random model: ``pi`` Dirichlet(1), embeddings uniform on the sphere, and
        ``M(x, y) ∝ pi(y) e^{concentration <e_x, e_y>}`` (a discrete vMF-like kernel)."""
        rng = np.random.default_rng(seed)
        pi = rng.dirichlet(np.ones(n))
        emb = rng.standard_normal((n, dim))
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        kern = pi[None, :] * np.exp(concentration * (emb @ emb.T))
        return cls(pi, kern / kern.sum(axis=1, keepdims=True), emb)

    # ------------------------------------------------------------------ exact quantities
    def limit_risk(self, tau) -> float:
        """``L_inf = sum_x pi(x) [-beta sum_y M(x,y) s(x,y) + log sum_y pi(y) e^{beta s(x,y)}]``."""
        beta = 1.0 / check_tau(tau)
        log_mu = special.logsumexp(beta * self.S, b=self.pi[None, :], axis=1)
        return float(self.pi @ (-beta * (self.kernel * self.S).sum(axis=1) + log_mu))

    def _log_mu(self, beta: float) -> np.ndarray:
        """``log mu(x) = log sum_y pi(y) e^{beta s(x, y)}`` for each anchor: (N,)."""
        return special.logsumexp(beta * self.S, b=self.pi[None, :], axis=1)

    def anchor_laws(self, beta: float):
        """``(pi(x), laws of the weights given x)`` for each anchor x (used by the quadrature),
        the weights in units of their mean (``W/mu``, so nothing overflows at small tau)."""
        from .exact import _DiscreteLaws

        log_mu = self._log_mu(beta)
        for x in range(self.N):
            log_v = beta * self.S[x] - log_mu[x]
            yield self.pi[x], _DiscreteLaws(np.exp(log_v), self.pi, self.kernel[x], beta, mu=1.0, log_W=log_v)

    def exact_bias(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k - L_inf``, exact (Laplace/Frullani with discrete transforms)."""
        from .exact import exact_bias

        return float(exact_bias(self, [check_k(k)], tau, variant)[0])

    def exact_centred_risk(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k``, exact for any k (book, C1 chapter, eq. ``c1-eq-frullani``)."""
        return self.limit_risk(tau) + self.exact_bias(k, tau, variant)

    def enumerate_centred_risk(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k`` by enumerating all ``N^(k+1)`` (positive, negatives) configurations:
        an independent check for small cases (raises if there are more than 10^6)."""
        k = check_k(k)
        beta = 1.0 / check_tau(tau)
        check_choice(variant, "variant", VARIANTS)
        if self.N ** (k + 1) > 10**6:
            raise ValueError(f"enumeration needs N^(k+1) = {self.N ** (k + 1)} > 10^6 terms; use exact_centred_risk")
        idx = np.array(list(np.ndindex(*([self.N] * k))), dtype=int).reshape(-1, k)
        p_db = np.prod(self.pi[idx], axis=1)
        total = 0.0
        for x in range(self.N):
            s_db = self.S[x][idx]  # (T, k)
            lse_db = special.logsumexp(beta * s_db, axis=1)
            for y in range(self.N):
                sp = self.S[x, y]
                if variant == "standard":
                    loss = np.logaddexp(beta * sp, lse_db) - beta * sp
                else:
                    loss = lse_db - beta * sp
                total += self.pi[x] * self.kernel[x, y] * (p_db @ loss)
        return float(total - math.log(k))

    def normalised_weight_moments(self, tau) -> dict:
        """Per-anchor arrays (N,) of ``log_mu, u1, u2, u3, m2, m3, m4`` (see the notation page),
        formed from ``V = W/mu = e^{beta s - log mu}`` (finite at any tau: ``V <= 1/min pi``)."""
        beta = 1.0 / check_tau(tau)
        log_mu = self._log_mu(beta)
        V = np.exp(beta * self.S - log_mu[:, None])
        out = {"log_mu": log_mu}
        for j in (1, 2, 3):
            out[f"u{j}"] = (self.kernel * V**j).sum(axis=1)
        for j in (2, 3, 4):
            out[f"m{j}"] = ((V - 1.0) ** j) @ self.pi
        return out

    def weight_moments(self, tau) -> dict:
        """Per-anchor arrays (N,) of ``mu, log_mu, u1, u2, u3, m2, m3, m4``; raises OverflowError
        where ``mu = E W`` exceeds float64 (tau below about 1/709 for cosines near 1):
        :meth:`normalised_weight_moments` has the rest."""
        tau = check_tau(tau)
        out = self.normalised_weight_moments(tau)
        worst = float(out["log_mu"].max())
        _exp_or_raise(worst, "mu = E W", tau, "; normalised_weight_moments(tau) gives log_mu and the "
                      "normalised moments")
        return {"mu": np.exp(out["log_mu"]), **out}

    def bias_coefficients(self, tau, variant: str = "standard", order: int = 2) -> tuple:
        """``(c1, c2[, c3])`` of Theorem ``c1-thm-rate``, averaged exactly over the anchors."""
        from .symbolic import bias_coefficient_functions

        check_choice(variant, "variant", VARIANTS)
        if order not in (1, 2, 3):
            raise ValueError(f"order must be 1, 2 or 3, got order={order!r}")
        mom = self.normalised_weight_moments(tau)
        args = (mom["u1"], mom["u2"], mom["u3"], mom["m2"], mom["m3"], mom["m4"])
        return tuple(float(self.pi @ (np.asarray(f(*args)) * np.ones(self.N)))
                     for f in bias_coefficient_functions(variant, order))

    def search_gap_constant(self, tau, variant: str = "standard") -> float:
        """``d1`` with ``k (E[H(M_hat_k, Q_hat_k)] - L_k) -> d1`` (Theorem ``c2-thm-search``):
        ``sum_x pi(x) [beta Cov_{M(x,.)}(m(x,.), s(x,.)) - u1(x)]`` (no ``u1`` when decoupled)."""
        check_choice(variant, "variant", VARIANTS)
        beta = 1.0 / check_tau(tau)
        e_m = (self.kernel * self.m).sum(axis=1)
        e_s = (self.kernel * self.S).sum(axis=1)
        e_ms = (self.kernel * self.m * self.S).sum(axis=1)
        d = beta * (e_ms - e_m * e_s)
        if variant == "standard":
            d = d - self.normalised_weight_moments(tau)["u1"]
        return float(self.pi @ d)

    def search_cross_entropy(self, k, tau, *, method: str = "auto", n_queries: int = 20000, seed: int = 0):
        """``E[H(M_hat_k(x, .), Q_hat_k(x, .))] - log k`` over a database of k unseen points.

        ``method``: ``"enumeration"`` (all ``N^k`` databases; exact; small cases),
        ``"laplace"`` (exact for any k: ``L_inf - beta * SNIS bias + E log T_dec`` by 1-D
        integrals), ``"monte_carlo"`` (a 95% interval), or ``"auto"`` (enumeration when
        ``N^k <= 20000``, else laplace). Returns a :class:`SearchCrossEntropy` whose ``method``
        says which was used. Source: book, C2 chapter, Theorem ``c2-thm-search``.
        """
        k = check_k(k, meaning="database size")
        tau = check_tau(tau)
        beta = 1.0 / tau
        check_choice(method, "method", ("auto", "enumeration", "laplace", "monte_carlo"))
        if method == "auto":
            method = "enumeration" if self.N**k <= 20000 else "laplace"
        if method == "enumeration":
            if self.N**k > 10**6:
                raise ValueError(f"enumeration needs N^k = {self.N ** k} > 10^6 databases; use method='laplace'")
            idx = np.array(list(np.ndindex(*([self.N] * k))), dtype=int).reshape(-1, k)
            p_db = np.prod(self.pi[idx], axis=1)
            total = 0.0
            for x in range(self.N):
                log_q = beta * self.S[x][idx]
                log_q = log_q - special.logsumexp(log_q, axis=1, keepdims=True)
                log_mh = np.log(self.m[x][idx])
                mh = np.exp(log_mh - special.logsumexp(log_mh, axis=1, keepdims=True))
                total += self.pi[x] * (p_db @ -(mh * log_q).sum(axis=1))
            val = total - math.log(k)
            return SearchCrossEntropy(val, val, val, "enumeration")
        if method == "laplace":
            val = float(self.search_cross_entropy_curve([k], tau)[0])
            return SearchCrossEntropy(val, val, val, "laplace")
        gen = torch.Generator().manual_seed(check_seed(seed))
        pi_t, S_t, logm_t = (torch.as_tensor(a) for a in (self.pi, self.S, np.log(self.m)))

        def sample_batch(n):
            x = torch.multinomial(pi_t, n, replacement=True, generator=gen)
            db = torch.multinomial(pi_t, n * k, replacement=True, generator=gen).reshape(n, k)
            return S_t[x[:, None], db], logm_t[x[:, None], db]

        return _mc_search_cross_entropy(sample_batch, k, check_at_least(n_queries, "n_queries", 2, "an interval "
                                        "needs two queries"), tau, max(1, min(4096, 2**22 // k)))

    def search_cross_entropy_curve(self, ks, tau) -> np.ndarray:
        """``E[H(M_hat_k, Q_hat_k)] - log k`` for many k at once, exactly (Laplace method)."""
        from .exact import expected_log_T, snis_bias

        beta = 1.0 / check_tau(tau)
        ks = [check_k(k) for k in np.atleast_1d(ks)]
        val = np.full(len(ks), self.limit_risk(tau))
        for x, (px, laws) in enumerate(self.anchor_laws(beta)):
            bias, _ = snis_bias(self.m[x], self.S[x], self.pi, ks)
            log_t_dec, _ = expected_log_T(laws, ks, standard=False)
            val += px * (-beta * bias + log_t_dec)
        return val

    # ------------------------------------------------------------------ samplers
    def sample_anchors(self, n: int, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` anchor indices drawn from ``pi``: (n,) int64."""
        return torch.multinomial(torch.as_tensor(self.pi), check_k(n, "n"), replacement=True, generator=generator)

    def sample_positives(self, anchors: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """One positive index ``y ~ M(x, .)`` per anchor index: (n,) -> (n,) int64."""
        return torch.multinomial(torch.as_tensor(self.kernel)[anchors], 1, generator=generator).squeeze(-1)


class GaussianModel:
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

    def __repr__(self) -> str:
        return f"GaussianModel(dim={self.dim}, rho={self.rho:g})"

    @property
    def params(self) -> dict:
        return {"model": "gaussian", "dim": self.dim, "rho": self.rho}

    def sample_data(self, n: int, *, generator=None, device=None, dtype=torch.float64) -> torch.Tensor:
        """``n`` draws of ``x ~ N(0, I)``: (n, dim)."""
        return torch.randn(check_k(n, "n"), self.dim, generator=generator, device=device, dtype=dtype)

    def sample_positive(self, x: torch.Tensor, *, generator=None) -> torch.Tensor:
        """``x+ = rho x + sqrt(1 - rho^2) xi`` per row of ``x``: (n, dim) -> (n, dim)."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be a tensor of shape (n, {self.dim})")
        xi = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
        return self.rho * x + math.sqrt(1.0 - self.rho**2) * xi

    def log_density_ratio(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log m(x, y)`` for x (B, dim) and y (B, k, dim) or (k, dim): returns (B, k)."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be a tensor of shape (B, {self.dim})")
        if not isinstance(y, torch.Tensor) or y.dim() not in (2, 3) or y.shape[-1] != self.dim:
            raise ValueError(f"y must be a tensor of shape (B, k, {self.dim}) or (k, {self.dim})")
        r2 = 1.0 - self.rho**2
        yb = y.unsqueeze(0) if y.dim() == 2 else y
        diff = yb - self.rho * x.unsqueeze(1)
        return (-(diff**2).sum(-1) / (2 * r2) + (yb**2).sum(-1) / 2 - 0.5 * self.dim * math.log(r2))


class StudentTModel:
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

    def __repr__(self) -> str:
        return f"StudentTModel(dim={self.dim}, nu={self.nu:g}, rho={self.rho:g})"

    @property
    def params(self) -> dict:
        return {"model": "student_t", "dim": self.dim, "nu": self.nu, "rho": self.rho}

    def _scale(self, n, generator, device, dtype):
        """``sqrt(w / nu)`` with ``w ~ chi^2_nu`` by inversion of a seeded uniform (scipy's ppf)."""
        from scipy import stats as _st

        u = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
        u = u.clamp(min=torch.finfo(torch.float64).tiny)  # u = 0 has probability 2^-53 per draw
        w = _st.chi2.ppf(u.cpu().numpy(), self.nu)
        return torch.as_tensor(np.sqrt(w / self.nu), dtype=dtype, device=device)

    def sample_pairs(self, n: int, *, generator=None, device=None, dtype=torch.float64):
        """``n`` pairs ``(x, x+)``: two (n, dim) tensors."""
        n = check_k(n, "n")
        g = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        xi = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        s = self._scale(n, generator, device, dtype).unsqueeze(-1)
        return g / s, (self.rho * g + math.sqrt(1.0 - self.rho**2) * xi) / s

    def sample_data(self, n: int, *, generator=None, device=None, dtype=torch.float64) -> torch.Tensor:
        """``n`` draws of ``x``: (n, dim)."""
        n = check_k(n, "n")
        g = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype)
        return g / self._scale(n, generator, device, dtype).unsqueeze(-1)

    def norm_sf(self, r):
        """``P(|x| > r)`` (scipy's F distribution: ``|x|^2/dim ~ F(dim, nu)``)."""
        from scipy import stats as _st

        return _st.f.sf(np.asarray(r, dtype=float) ** 2 / self.dim, self.dim, self.nu)
