"""The finite reference model: ``pi`` on N points and a row-stochastic ``M``; everything exact
(book, Chapter 2). Its points are indices ``0 .. N-1`` (so one data point has shape ``()``), each
with an embedding vector on the unit sphere.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special

from ..losses import VARIANTS
from ..theory.exact import DiscreteLaws, exact_bias, expected_log_T, snis_bias
from ..theory.search import monte_carlo_search_cross_entropy
from ..theory.stats import Estimate
from ..theory.symbolic import bias_coefficient_functions
from ..utils.validation import check_choice, check_k, check_scalar, check_seed, check_tau, exp_or_raise
from .base import ReferenceModel, register


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


@register("finite")
class FiniteModel(ReferenceModel):
    """A data distribution on N points, where everything is exact (book, Chapter 2).

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
        self._spec = None
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
        """``{"model": "finite", "N", "d"}``, plus ``seed`` and ``concentration`` for a model made
        by :meth:`random` (then :func:`~infonce_book.models.from_params` rebuilds it)."""
        out = {"model": "finite", "N": self.N, "d": int(self.embeddings.shape[1])}
        return {**out, **self._spec} if self._spec else out

    @classmethod
    def from_params(cls, params: dict) -> "FiniteModel":
        """Rebuild a model made by :meth:`random` from its params (``N, d, seed, concentration``)."""
        missing = [k for k in ("N", "d", "seed", "concentration") if k not in params]
        if missing:
            raise ValueError(f"a finite model can be rebuilt only from the params of FiniteModel.random "
                             f"(N, d, seed, concentration); missing {missing}")
        return cls.random(params["N"], params["d"], concentration=params["concentration"], seed=params["seed"])

    @classmethod
    def random(cls, n: int, dim: int, *, concentration: float = 4.0, seed: int = 0) -> "FiniteModel":
        """A random model: ``pi`` Dirichlet(1), embeddings uniform on the sphere, and
        ``M(x, y) ∝ pi(y) e^{concentration <e_x, e_y>}`` (a discrete vMF-like kernel)."""
        rng = np.random.default_rng(seed)
        pi = rng.dirichlet(np.ones(n))
        emb = rng.standard_normal((n, dim))
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        kern = pi[None, :] * np.exp(concentration * (emb @ emb.T))
        model = cls(pi, kern / kern.sum(axis=1, keepdims=True), emb)
        model._spec = {"seed": int(seed), "concentration": float(concentration)}
        return model

    # ------------------------------------------------------------------ exact quantities
    def limit_risk(self, tau) -> float:
        """``L_inf = sum_x pi(x) [-beta sum_y M(x,y) s(x,y) + log sum_y pi(y) e^{beta s(x,y)}]``."""
        beta = 1.0 / check_tau(tau)
        log_mu = special.logsumexp(beta * self.S, b=self.pi[None, :], axis=1)
        return float(self.pi @ (-beta * (self.kernel * self.S).sum(axis=1) + log_mu))

    def _log_mu(self, beta: float) -> np.ndarray:
        """``log mu(x) = log sum_y pi(y) e^{beta s(x, y)}`` for each anchor: (N,)."""
        return special.logsumexp(beta * self.S, b=self.pi[None, :], axis=1)

    def anchor_laws(self, beta: float, **options):
        """``(pi(x), laws of the weights given x)`` for each anchor x (used by the quadrature),
        the weights in units of their mean (``W/mu``, so nothing overflows at small tau). The
        laws are exact (finitely many values): the quadrature options are ignored."""
        log_mu = self._log_mu(beta)
        for x in range(self.N):
            log_v = beta * self.S[x] - log_mu[x]
            yield self.pi[x], DiscreteLaws(np.exp(log_v), self.pi, self.kernel[x], beta, mu=1.0, log_W=log_v)

    def independent_evaluation(self) -> dict:
        """The laws are exact: a second evaluation differs only by the integrator's error."""
        return {}

    def exact_bias(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k - L_inf``, exact (Laplace/Frullani with discrete transforms)."""
        return float(exact_bias(self, [check_k(k)], tau, variant)[0])

    def exact_centred_risk(self, k, tau, variant: str = "standard") -> float:
        """``L_k - log k``, exact for any k (book, Chapter 1, eq. ``c1-eq-frullani``)."""
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
        """Per-anchor arrays (N,) of ``log_mu, u1, u2, u3, v2, v3, v4`` (see the notation page),
        formed from ``V = W/mu = e^{beta s - log mu}`` (finite at any tau: ``V <= 1/min pi``)."""
        beta = 1.0 / check_tau(tau)
        log_mu = self._log_mu(beta)
        V = np.exp(beta * self.S - log_mu[:, None])
        out = {"log_mu": log_mu}
        for j in (1, 2, 3):
            out[f"u{j}"] = (self.kernel * V**j).sum(axis=1)
        for j in (2, 3, 4):
            out[f"v{j}"] = ((V - 1.0) ** j) @ self.pi
        return out

    def weight_moments(self, tau) -> dict:
        """Per-anchor arrays (N,) of ``mu, log_mu, u1, u2, u3, v2, v3, v4``; raises OverflowError
        where ``mu = E W`` exceeds float64 (tau below about 1/709 for cosines near 1):
        :meth:`normalised_weight_moments` has the rest."""
        tau = check_tau(tau)
        out = self.normalised_weight_moments(tau)
        worst = float(out["log_mu"].max())
        exp_or_raise(worst, "mu = E W", tau, "; normalised_weight_moments(tau) gives log_mu and the "
                      "normalised moments")
        return {"mu": np.exp(out["log_mu"]), **out}

    def bias_coefficients(self, tau, variant: str = "standard", order: int = 2) -> tuple:
        """``(c1, c2[, c3])`` of Theorem ``c1-thm-rate``, averaged exactly over the anchors."""
        check_choice(variant, "variant", VARIANTS)
        if order not in (1, 2, 3):
            raise ValueError(f"order must be 1, 2 or 3, got order={order!r}")
        mom = self.normalised_weight_moments(tau)
        args = (mom["u1"], mom["u2"], mom["u3"], mom["v2"], mom["v3"], mom["v4"])
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
        says which was used. Returns an :class:`~infonce_book.theory.stats.Estimate`. Source: book,
        Chapter 2, Theorem ``c2-thm-search``.
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
            return Estimate.exact(total - math.log(k), method="enumeration")
        if method == "laplace":
            return Estimate.exact(float(self.search_cross_entropy_curve([k], tau)[0]), method="laplace")
        gen = torch.Generator().manual_seed(check_seed(seed))
        pi_t, S_t, logm_t = (torch.as_tensor(a) for a in (self.pi, self.S, np.log(self.m)))

        def sample_batch(n):
            x = torch.multinomial(pi_t, n, replacement=True, generator=gen)
            db = torch.multinomial(pi_t, n * k, replacement=True, generator=gen).reshape(n, k)
            return S_t[x[:, None], db], logm_t[x[:, None], db]

        n_queries = check_scalar(n_queries, "n_queries", ge=2, integer=True, why="an interval needs two queries")
        return monte_carlo_search_cross_entropy(sample_batch, k, n_queries, tau, max(1, min(4096, 2**22 // k)))

    def search_cross_entropy_curve(self, ks, tau) -> np.ndarray:
        """``E[H(M_hat_k, Q_hat_k)] - log k`` for many k at once, exactly (Laplace method)."""
        beta = 1.0 / check_tau(tau)
        ks = [check_k(k) for k in np.atleast_1d(ks)]
        val = np.full(len(ks), self.limit_risk(tau))
        for x, (px, laws) in enumerate(self.anchor_laws(beta)):
            bias, _ = snis_bias(self.m[x], self.S[x], self.pi, ks)
            log_t_dec, _ = expected_log_T(laws, ks, standard=False)
            val += px * (-beta * bias + log_t_dec)
        return val

    # ------------------------------------------------------------------ samplers
    def sample_data(self, n: int, *, generator: torch.Generator | None = None, device=None,
                    dtype=None) -> torch.Tensor:
        """``n`` points (indices) drawn from ``pi``: (n,) int64 (``dtype`` is ignored: points are indices)."""
        idx = torch.multinomial(torch.as_tensor(self.pi), check_k(n, "n"), replacement=True, generator=generator)
        return idx.to(device) if device is not None else idx

    def sample_positive(self, anchor: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """One positive index ``y ~ M(x, .)`` per anchor index: (n,) -> (n,) int64."""
        _check_indices(anchor, "anchor", self.N)
        out = torch.multinomial(torch.as_tensor(self.kernel)[anchor.cpu()], 1, generator=generator).squeeze(-1)
        return out.to(anchor.device)

    def log_density_ratio(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log m(x, y) = log M(x, y) - log pi(y)``: indices x (n,) and y (n,) -> (n,), or y (n, k) -> (n, k)."""
        _check_indices(x, "x", self.N)
        _check_indices(y, "y", self.N)
        if y.dim() not in (1, 2) or x.dim() != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(f"x must have shape (n,) and y (n,) or (n, k); got x {tuple(x.shape)}, y {tuple(y.shape)}")
        log_m = torch.as_tensor(np.log(self.m), device=x.device)
        return log_m[x, y] if y.dim() == 1 else log_m[x[:, None], y]

    def embed(self, points: torch.Tensor) -> torch.Tensor:
        """The embedding vectors of points (indices): (...,) -> (..., d), float64."""
        _check_indices(points, "points", self.N)
        return torch.as_tensor(self.embeddings, device=points.device)[points]


def _check_indices(x, name: str, n_points: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{name} must be an integer tensor of point indices, got "
                        f"{x.dtype if isinstance(x, torch.Tensor) else type(x).__name__}")
    if x.numel() and (int(x.min()) < 0 or int(x.max()) >= n_points):
        raise ValueError(f"{name} must hold indices in [0, {n_points - 1}], got values in "
                         f"[{int(x.min())}, {int(x.max())}]")
