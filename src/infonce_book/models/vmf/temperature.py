"""Chapter 3, the temperature, for the vMF model: the KL of the softmax kernel to the data, the
optimal temperature, the approximation error of the best embedding (the convex programme of
Theorem ``c3-thm-vmf-approx``) and the decoupled risk's minimiser and its rate (Proposition
``c3-prop-decoupled-rate``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from ...theory.exact import N_NODES, snis_bias
from ...utils.validation import check_k, check_tau
from .special_functions import _log_bessel_i_orders, mean_resultant_length


class TemperatureClosedForms:
    """The vMF model's closed forms of Chapter 3 (the temperature)."""

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
            raise ValueError("optimal_tau: kappa = 0 has no finite optimal temperature "
                             "(L_inf decreases to 0 as tau -> inf)")
        return 1.0 / self.kappa

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
