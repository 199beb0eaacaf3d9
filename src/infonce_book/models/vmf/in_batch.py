"""Chapter 1, in-batch negatives (CLIP, NT-Xent), for the vMF model: the moments of the two views
of another pair, the coefficients of the in-batch forms and their exact bias by quadrature (book,
Propositions ``c1-prop-clip`` and ``c1-prop-ntxent``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ...theory import symbolic
from ...theory.exact import exact_bias_with_error, expected_log_T_blocks
from ...theory.symbolic import ntxent_bias_coefficients
from ...utils.validation import check_choice, check_k, check_scalar, check_tau
from .laws import RESOLUTION_TOLERANCE
from .special_functions import log_vmf_partition


class InBatchClosedForms:
    """The vMF model's closed forms of Chapter 1's in-batch section (CLIP, NT-Xent)."""

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
