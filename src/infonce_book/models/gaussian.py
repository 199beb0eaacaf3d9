"""Gaussian positive pairs on R^dim (unbounded input norms; book: notation page, "Reference models")."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from scipy import special, stats

from ..theory.bounds import search_bias_constant_l2
from ..utils.validation import check_k, check_tau
from .base import ReferenceModel, register


@register("gaussian")
class GaussianModel(ReferenceModel):
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

    param_names = ("dim", "rho")

    def sample_data(self, n: int, *, generator=None, device=None, dtype=None) -> torch.Tensor:
        """``n`` draws of ``x ~ N(0, I)``: (n, dim), float64 unless ``dtype`` says otherwise."""
        return torch.randn(check_k(n, "n"), self.dim, generator=generator, device=device,
                           dtype=dtype or torch.float64)

    def sample_positive(self, x: torch.Tensor, *, generator=None) -> torch.Tensor:
        """``x+ = rho x + sqrt(1 - rho^2) xi`` per row of ``x``: (n, dim) -> (n, dim)."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be a tensor of shape (n, {self.dim})")
        xi = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
        return self.rho * x + math.sqrt(1.0 - self.rho**2) * xi

    def log_density_ratio(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log m(x, y)``: x (n, dim) and y (n, dim) -> (n,), or y (n, k, dim) -> (n, k)."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be a tensor of shape (n, {self.dim})")
        if (not isinstance(y, torch.Tensor) or y.dim() not in (2, 3) or y.shape[-1] != self.dim
                or y.shape[0] != x.shape[0]):
            raise ValueError(f"y must be a tensor of shape (n, {self.dim}) or (n, k, {self.dim}) with the "
                             f"n = {x.shape[0]} rows of x")
        r2 = 1.0 - self.rho**2
        yb = y.unsqueeze(1) if y.dim() == 2 else y
        diff = yb - self.rho * x.unsqueeze(1)
        out = -(diff**2).sum(-1) / (2 * r2) + (yb**2).sum(-1) / 2 - 0.5 * self.dim * math.log(r2)
        return out.squeeze(1) if y.dim() == 2 else out

    def norm_sf(self, r):
        """``P(|x| > r)``: ``|x|`` follows the chi distribution with ``dim`` degrees of freedom."""
        return stats.chi.sf(np.asarray(r, dtype=float), self.dim)

    # ------------------------------------------------------------------ the search gap (C2)
    def density_ratio_second_moment(self, x_norm) -> np.ndarray:
        """``R(x) = E_pi m(x, .)^2 = (1 - rho^4)^{-dim/2} exp(rho^2 |x|^2 / (1 + rho^2))`` as a
        function of ``|x|`` (array-like >= 0); finite for every ``|rho| < 1``.
        Source: book, Chapter 2 (Gaussian integral, coordinate by coordinate)."""
        r = np.asarray(x_norm, dtype=np.float64)
        if not np.all(np.isfinite(r)) or np.any(r < 0):
            raise ValueError("x_norm must hold norms |x| >= 0 (finite)")
        rho2 = self.rho**2
        return np.exp(-self.dim / 2 * math.log1p(-rho2 * rho2) + rho2 * r**2 / (1 + rho2))

    def chi2_second_moment(self) -> float:
        """``R_bar = E_x E_pi m(x, .)^2 = 1 + chi^2(law of (x, x+) || pi x pi) = (1 - rho^2)^{-dim}``
        (book, Chapter 2, assumption (A)); finite for every ``|rho| < 1``."""
        return float(math.exp(-self.dim * math.log1p(-self.rho**2)))

    def exact_search_gap_of_direction(self, ks, tau, *, n_r: int = 24, n_theta: int = 32,
                                      per_panel: int = 6) -> dict:
        """``E H(M_hat_k, Q_hat_k) - L_k`` for the embedding ``phi(x) = x/|x|``, by quadrature.

        The model has no embedding of its own; this is the book's exact reference for it
        (Chapter 2): given the anchor, 2-D Gauss--Legendre sums in polar coordinates about x,
        Laplace representations of the self-normalised average and of
        ``log T_k - log T_k^dec`` (trapezoid rule in log t), and a composite Gauss--Legendre
        rule in ``|x|`` with the chi density (``per_panel`` nodes per unit-length panel).

        Args:
            ks: integers >= 1. tau: temperature > 0.
            n_r, n_theta, per_panel: quadrature sizes (raise them to estimate the error).
        Returns:
            dict with ``k`` (list), ``gap`` (array, nats), ``d1`` (the limit of ``k gap``),
            ``model_constant`` (``E_x[beta B_S(x) + u1(x) zeta(x)]`` of Theorem ``c2-thm-search``),
            ``uniform_constant`` (``C_H(tau)`` with ``R_bar`` in closed form), ``r_bar``, and the
            quadrature diagnostics ``mass_err``, ``em_err`` (``|E_pi m - 1|`` before
            normalisation), ``em2_rel_err`` (``E_pi m^2`` against its closed form) and
            ``k1_identity`` (``|E I_hat_1 - E_pi s|``), each the worst over the anchors.
        Source: book, Chapter 2, Theorem ``c2-thm-search``.
        """
        beta = 1.0 / check_tau(tau)
        ks = [check_k(k, meaning="database size") for k in np.atleast_1d(ks)]
        for name, v in (("n_r", n_r), ("n_theta", n_theta), ("per_panel", per_panel)):
            check_k(v, name)
        rho2 = self.rho**2
        decay = 0.5 - rho2 / (1 + rho2)  # the chi density times R(x) decays like e^{-decay |x|^2}
        r_max = math.sqrt(self.dim) + math.sqrt(45.0 / decay)
        R0, w = _gauss_panels(np.arange(0.0, math.ceil(r_max) + 1.0), per_panel)
        w = w * np.exp(_log_chi_density(R0, self.dim))
        gap = np.zeros(len(ks))
        d1 = const = 0.0
        diag = {"mass_err": 0.0, "em_err": 0.0, "em2_rel_err": 0.0, "k1_identity": 0.0}
        for r0, wi in zip(R0, w):
            q = _anchor_quantities(float(r0), self.dim, self.rho, beta, ks, n_r, n_theta)
            gap += wi * q["gap"]
            d1 += wi * q["d1"]
            const += wi * (beta * q["b_s"] + q["u1_zeta"])
            for key in diag:
                if q[key] is not None:
                    diag[key] = max(diag[key], float(q[key]))
        r_bar = self.chi2_second_moment()
        return {"k": ks, "gap": gap, "d1": float(d1), "model_constant": float(const),
                "uniform_constant": search_bias_constant_l2(1.0 / beta, second_moment=r_bar), "r_bar": r_bar,
                "outer_mass": float(w.sum()), **diag}


# ---------------------------------------------------------------------------------------------
# The search gap of the direction embedding phi(x) = x/|x| (book, Chapter 2), exactly.
#
# Given the anchor x, everything depends on x only through R0 = |x|. In polar coordinates
# y = (R, theta) about x (R = |y|, theta the angle between x and y), the data law has independent
# R ~ chi_p and theta with density proportional to sin^(p-2) theta, s(x, y) = cos theta and
# log m = (-rho^2 R^2 + 2 rho R0 R cos theta - rho^2 R0^2) / (2 (1 - rho^2)) - (p/2) log(1 - rho^2).
# Conditional expectations are 2-D Gauss--Legendre sums (panels where M(x, .) and m^2 pi sit); the
# Laplace integrals over t use the trapezoid rule on one grid in log t (spectrally accurate here);
# the mean over anchors is a composite Gauss--Legendre rule in |x| with the chi_p density.

_LOG_T_STEP = math.log(2.0) / 4.0


def _gauss_panels(edges, n):
    g, gw = special.roots_legendre(n)
    xs, ws = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi - lo > 1e-14:
            xs.append((hi - lo) / 2 * g + (lo + hi) / 2)
            ws.append((hi - lo) / 2 * gw)
    return np.concatenate(xs), np.concatenate(ws)


def _log_chi_density(r, p):
    return (p - 1) * np.log(r) - r**2 / 2 - ((p / 2 - 1) * math.log(2.0) + special.gammaln(p / 2))


def _anchor_law(R0: float, p: int, rho: float, n_r: int, n_theta: int) -> dict:
    """Nodes of ``y`` given an anchor with ``|x| = R0``: log-weights under pi (normalised), log m
    (normalised so that ``E_pi m = 1`` on the nodes), ``s = cos theta``, and diagnostics."""
    sig = math.sqrt(1 - rho * rho)
    c = abs(rho) * R0
    c2 = 2 * c / (1 + rho * rho)  # where m^2 pi peaks
    r_hi = max(c + 8 * sig, c2 + 8 * sig, math.sqrt(p) + 9.0)
    edges = sorted({0.0, max(0.0, c - 7 * sig), c + 7 * sig, max(0.0, c2 - 7 * sig), c2 + 7 * sig, r_hi})
    R, wR = _gauss_panels(edges, n_r)
    th_c = math.pi / 2 if c < 1e-9 else min(math.pi / 2, 8 * sig / c)
    T, wT = _gauss_panels([0.0, th_c, math.pi], n_theta)
    if rho < 0:  # the mass of M(x, .) sits at theta near pi
        T, wT = math.pi - T[::-1], wT[::-1]
    if p == 2:
        log_fT = np.full_like(T, -math.log(math.pi))
    else:
        log_b = 0.5 * math.log(math.pi) + special.gammaln((p - 1) / 2) - special.gammaln(p / 2)
        log_fT = (p - 2) * np.log(np.sin(T)) - log_b
    lw = ((np.log(wR) + _log_chi_density(R, p))[:, None] + (np.log(wT) + log_fT)[None, :]).ravel()
    RR, TT = np.repeat(R, len(T)), np.tile(T, len(R))
    logm = ((-rho * rho * RR**2 + 2 * rho * R0 * RR * np.cos(TT) - rho * rho * R0**2) / (2 * sig**2)
            - p / 2 * math.log(sig**2))
    mass = special.logsumexp(lw)
    lw = lw - mass
    log_em = special.logsumexp(lw + logm)
    closed_m2 = -p / 2 * math.log(1 - rho**4) + rho * rho * R0 * R0 / (1 + rho * rho)
    log_em2 = float(special.logsumexp(lw + 2 * logm))
    return {"lw": lw, "logm": logm - log_em, "s": np.cos(TT), "n_theta": len(T), "theta": T,
            "mass_err": abs(math.expm1(mass)), "em_err": abs(math.expm1(log_em)),
            "em2_rel_err": abs(log_em2 - 2 * log_em - closed_m2), "log_R": closed_m2}


def _anchor_quantities(R0: float, p: int, rho: float, beta: float, ks, n_r: int, n_theta: int) -> dict:
    """Per anchor: ``E[H | x] - E[l_k | x]`` for each k, ``d1(x)``, ``B_S(x)`` and ``u1 zeta(x)``
    (``zeta(x) = E[mu / W | x]``)."""
    law = _anchor_law(R0, p, rho, n_r, n_theta)
    lw, logm, s = law["lw"], law["logm"], law["s"]
    lwM = lw + logm  # log-weights of M(x, .)
    wpi, wM, m = np.exp(lw), np.exp(lwM), np.exp(logm)
    i_s = float(wM @ s)
    # Lemma c2-lem-snis: B_S = min(sqrt(2 Var m (Var(ms) + Var m)), |Cov_M(m, s)| + (1 + |i_s|) Var m)
    em2 = float(np.exp(special.logsumexp(lw + 2 * logm)))
    var_m = max(em2 - 1.0, 0.0)
    var_ms = float(np.exp(special.logsumexp(lw + 2 * logm, b=s**2))) - i_s * i_s
    cov = float(np.exp(lw + 2 * logm) @ (s - i_s))
    b_s = min(math.sqrt(2 * var_m * (var_ms + var_m)), abs(cov) + (1 + abs(i_s)) * var_m)
    W = np.exp(beta * s)
    mu = float(wpi @ W)
    u1 = float(wM @ W) / mu
    zeta = mu * float(wpi @ np.exp(-beta * s))
    # Laplace integrals on one grid in log t
    k_max = max(ks)
    # up to t where e^{-t m} switches off every node with pi-mass above e^-50 (k = 1 needs it:
    # E I_hat_1 = E_M[s / m] = E_pi s)
    lt_hi = min(max(8.0, -logm[lw > -50.0].min() + 6.0), 400.0)
    lt = np.arange(-22.0 - math.log(k_max), lt_hi + _LOG_T_STEP, _LOG_T_STEP)
    t = np.exp(lt)
    log_Lm = np.empty_like(t)
    EMs = np.empty_like(t)
    for i in range(0, len(t), 64):
        tt = t[i:i + 64]
        e = np.exp(-np.outer(tt, m))
        L = special.logsumexp(lw[None, :] - np.outer(tt, m), axis=1)
        small = tt * m.max() < 0.5
        if small.any():
            L[small] = np.log1p(np.expm1(-np.outer(tt[small], m)) @ wpi)
        log_Lm[i:i + 64] = L
        EMs[i:i + 64] = e @ (wM * s)
    nT = law["n_theta"]
    lw_theta_pi = special.logsumexp(lw.reshape(-1, nT), axis=0)  # the law of theta under pi and M
    lw_theta_M = special.logsumexp(lwM.reshape(-1, nT), axis=0)
    V = np.exp(beta * np.cos(law["theta"])) / mu

    def log_laplace(log_w, vals):
        out = special.logsumexp(log_w[None, :] - np.outer(t, vals), axis=1)
        small = t * vals.max() < 0.5
        out[small] = np.log1p(np.expm1(-np.outer(t[small], vals)) @ np.exp(log_w))
        return out

    LV, LU = log_laplace(lw_theta_pi, V), log_laplace(lw_theta_M, V)
    gaps = []
    for k in ks:
        v = k * t
        g = EMs * np.exp((k - 1) * log_Lm) - i_s * np.exp(-v)
        snis = _LOG_T_STEP * np.sum(v * g)  # E[I_hat_k | x] - i_s(x)
        log_term = _LOG_T_STEP * np.sum(np.exp(k * LV) * (-np.expm1(LU)))  # E[log T_k - log T_k^dec | x]
        gaps.append(-beta * snis - log_term)
    k1 = None
    if 1 in ks:  # identity E I_hat_1 = E_pi s
        j = list(ks).index(1)
        k1 = abs((-(gaps[j]) - _LOG_T_STEP * np.sum(np.exp(LV) * (-np.expm1(LU)))) / beta + i_s - float(wpi @ s))
    return {"gap": np.array(gaps), "d1": beta * cov - u1, "b_s": b_s, "u1_zeta": u1 * zeta, "k1_identity": k1,
            "mass_err": law["mass_err"], "em_err": law["em_err"], "em2_rel_err": law["em2_rel_err"]}
