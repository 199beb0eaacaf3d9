"""Chapter 1, the limit and its O(1/k) rate, for the vMF model: the moments of the weights given
an anchor, the coefficients ``c_1 .. c_4`` of the expansion in ``1/k``, and the exact bias by
quadrature (book, Theorem ``c1-thm-rate``, Propositions ``c1-prop-second-order`` and
``c1-prop-third-order``).
"""

from __future__ import annotations

import math

from ...losses import VARIANTS
from ...theory.exact import N_NODES, exact_bias
from ...theory.symbolic import bias_coefficient_functions
from ...utils.validation import check_choice, check_k, check_tau, exp_or_raise
from .laws import SimilarityLaws


class RateClosedForms:
    """The vMF model's closed forms of Chapter 1 (the rate): weight moments, bias coefficients, exact bias."""

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
