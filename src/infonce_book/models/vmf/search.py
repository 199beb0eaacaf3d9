"""Chapter 2, the similarity-search reading, for the vMF model: the search cross-entropy (exact
and by Monte Carlo), the constant ``d_1`` of the gap to the loss, and the constants of the search
bias bound (book, Theorem ``c2-thm-search``, Lemma ``c2-lem-snis``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special

from ...losses import VARIANTS
from ...theory.bounds import search_bias_constant, search_bias_constant_l2, snis_bias_constant
from ...theory.exact import N_NODES, expected_log_T, snis_bias
from ...theory.search import monte_carlo_search_cross_entropy
from ...theory.search_correction import ideal_search_excess, search_correction, sharp_search_bias
from ...theory.stats import Estimate
from ...utils.device import resolve_device
from ...utils.validation import check_choice, check_k, check_scalar, check_seed, check_tau, exp_or_raise
from .laws import SimilarityLaws
from .special_functions import mean_resultant_length


class SearchClosedForms:
    """The vMF model's closed forms of Chapter 2 (similarity search)."""

    def search_cross_entropy(self, k, tau, *, method="laplace", n_queries=20000, seed=0, device="cpu",
                             batch_size=None):
        """``E[H(M_hat_k(x, .), Q_hat_k(x, .))] - log k`` for the vMF model (phi = identity), in nats.

        ``method="laplace"`` (default): exact, ``L_inf - beta * SNIS bias + E log T_dec`` with both
        expectations by 1-D quadrature (:func:`infonce_book.theory.exact.snis_bias`, Frullani).
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

    def density_ratio_second_moment(self) -> float:
        """``R = E_pi m(x, .)^2 = Z(2 kappa)/Z(kappa)^2`` (the same for every x); also ``R_bar``."""
        return float(exp_or_raise(self._lz(2 * self.kappa) - 2 * self._lz(self.kappa), "Z(2 kappa)/Z(kappa)^2", 1.0))

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

    # ------------------------------------------------------------------ Chapter 5: the exact search correction
    def density_ratio_law(self, n_nodes: int = N_NODES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The law of ``m(x, .)`` under ``pi`` (the same for every x) on Gauss--Jacobi nodes of the
        cosine ``t = <x, y>``: ``(t, m, p)`` with ``m = e^{kappa t} / Z(kappa)`` rescaled so that
        ``p @ m = 1`` exactly (the quadrature's own normalisation).

        Source: book, Proposition ``c5-prop-search-exact`` (the law it needs).
        """
        n_nodes = check_k(n_nodes, "n_nodes")
        alpha = (self.dim - 3.0) / 2.0
        t, w = special.roots_jacobi(n_nodes, alpha, alpha)
        p = w / w.sum()
        log_m = self.kappa * t
        m = np.exp(log_m - log_m.max())
        return t, m / (p @ m), p

    def sharp_search_bias(self, ks, tau, n_nodes: int = N_NODES) -> np.ndarray:
        """``b*_k = beta E_pi|m - w_k(m)|`` for each k (nats): the largest ``E H(M_hat_k, Q_hat_k) -
        L_k^dec`` over every similarity with values in ``[-1, 1]`` (book, Corollary
        ``c5-cor-sharp-bias``; :func:`~infonce_book.theory.search_correction.sharp_search_bias`)."""
        _, m, p = self.density_ratio_law(n_nodes)
        return sharp_search_bias(m, p, ks, tau)

    def search_correction(self, similarity, ks, tau, n_nodes: int = N_NODES) -> np.ndarray:
        """``E H(M_hat_k, Q_hat_k) - L_k^dec`` for each k (nats) for an embedding whose similarity to
        every query is a function of the cosine, ``s(x, y) = similarity(<x, y>)`` (values in
        ``[-1, 1]``; the identity embedding is ``similarity(t) = t``): book, Proposition
        ``c5-prop-search-exact``."""
        t, m, p = self.density_ratio_law(n_nodes)
        return search_correction(m, np.asarray(similarity(t), dtype=np.float64), p, ks, tau)

    def sharp_bias_threshold(self, k, n_nodes: int = N_NODES) -> float:
        """The cosine ``t*`` at which ``m(t) = w_k(m(t))``: the similarity ``sign(<x, y> - t*)``
        attains ``b*_k`` (book, Corollary ``c5-cor-sharp-bias``; ``m - w_k(m)`` changes sign once,
        since ``w_k(v)/v`` decreases in v). Linear interpolation between the quadrature nodes."""
        t, m, p = self.density_ratio_law(n_nodes)
        excess, _ = ideal_search_excess(m, p, [check_k(k, meaning="database size")])
        gap = -excess[0]  # m - w_k(m), increasing in t
        i = int(np.argmax(gap > 0))
        if i == 0:
            return float(t[0])
        return float(t[i - 1] + (t[i] - t[i - 1]) * (0 - gap[i - 1]) / (gap[i] - gap[i - 1]))
