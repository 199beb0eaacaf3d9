"""Chapter 5's direct certificates of ``E H`` (claim C6): the per-tuple search cross-entropy
``h(theta; z)`` of :mod:`infonce_book.theory.tuple_search` in place of the decoupled loss plus the
search bias, for ``phi_A(x) = A x/|A x|`` and a model whose density ratio ``m`` is known.

* :func:`normalised_linear_tuple_search`: ``h - log k`` of each tuple under its own parameters;
* :func:`direct_certificate`: the PAC-Bayes un-expected Bernstein certificate (Theorem
  ``c5-thm-pac-bernstein`` with ``h``), randomised or derandomised (Proposition
  ``c5-prop-derandomise``: ``h`` has the same curvature and range), with the prior's centre and
  the shift chosen on data the bound does not use;
* :func:`direct_holdout`: the hold-out certificate (Corollary ``c5-cor-holdout``) with ``h``.

The design grids (:data:`DIRECT_PRIOR_SCALES`, :data:`DIRECT_ETA_FRACTIONS`) are fixed here,
before any data; the union bound pays ``log(|prior scales| |eta fractions| / delta)``.
All values in nats of ``E H(M_hat_k, Q_hat_k) - log k``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...learning.certificates import derandomisation_cost, holdout_certificate, posterior_draw_values
from ...learning.pacbayes import canonical_mean
from ...theory.bernstein import empirical_bernstein_upper, psi_tilde, quadratic_range
from ...theory.pacbayes import gaussian_kl_isotropic
from ...theory.tuple_search import tuple_search_cross_entropy
from ...utils.validation import check_scalar

__all__ = ["DIRECT_PRIOR_SCALES", "DIRECT_ETA_FRACTIONS", "DIRECT_POSTERIOR_SCALES",
           "normalised_linear_tuple_search", "mc_tuple_search", "direct_certificate", "direct_holdout"]

#: Prior scales of the direct certificates: 0.04 * 2^(-g), g = 0..3 (0.04 to 0.005), fixed before
#: any data; the union bound pays log 4.
DIRECT_PRIOR_SCALES = (0.04, 0.02, 0.01, 0.005)
#: ``eta b`` on a grid of three fractions of the cap ``1/b`` (Lemma ``c5-lem-unexpected-bernstein``
#: needs ``eta < 1/b``); the union bound pays log 3.
DIRECT_ETA_FRACTIONS = (0.7, 0.85, 0.95)
#: Posterior scales (free: the bound holds for every posterior at once): 0.1 * 2^(-j/2), j = 0..11.
DIRECT_POSTERIOR_SCALES = tuple(0.1 * 2.0 ** (-j / 2) for j in range(12))


def normalised_linear_tuple_search(thetas: torch.Tensor, x: torch.Tensor, x_neg: torch.Tensor,
                                   log_m_neg: torch.Tensor, tau: float) -> torch.Tensor:
    """``h(theta_i; z_i) - log k`` for ``phi_A(x) = A x/|A x|`` with each tuple's own parameters.

    Args:
        thetas: (b, dim^2) parameters ``vec(A_i)`` (row-major). x: (b, dim) anchors.
        x_neg: (b, k, dim) negatives. log_m_neg: (b, k) ``log m(x_i, x_ij^-)``. tau: > 0.
    Returns:
        (b,) values in ``[-2/tau, 2/tau]``, float64.
    Raises:
        ValueError: shapes that disagree.
    """
    if x.dim() != 2 or x_neg.dim() != 3 or x_neg.shape[0] != x.shape[0] or log_m_neg.shape != x_neg.shape[:2]:
        raise ValueError(f"shapes must be x (b, dim), x_neg (b, k, dim), log_m_neg (b, k); got {tuple(x.shape)}, "
                         f"{tuple(x_neg.shape)}, {tuple(log_m_neg.shape)}")
    dim, k = x.shape[1], x_neg.shape[1]
    if thetas.shape != (x.shape[0], dim * dim):
        raise ValueError(f"thetas must have shape (b, dim^2) = {(x.shape[0], dim * dim)}, got {tuple(thetas.shape)}")
    A = thetas.reshape(-1, dim, dim)
    a = torch.nn.functional.normalize(torch.einsum("bij,bj->bi", A, x), dim=-1)
    e = torch.nn.functional.normalize(torch.einsum("bij,bkj->bki", A, x_neg), dim=-1)
    s = torch.einsum("bd,bkd->bk", a, e)
    return (tuple_search_cross_entropy(s, log_m_neg, tau) - math.log(k)).to(torch.float64)


def mc_tuple_search(mean: torch.Tensor, scale: float, x, x_neg, log_m_neg, tau: float, n_draws: int,
                    generator: torch.Generator, chunk: int = 50000) -> np.ndarray:
    """``h(theta_l; z_{i_l}) - log k`` for ``n_draws`` i.i.d. pairs, ``theta_l ~ N(mean, scale^2 I)``,
    ``i_l`` uniform on the tuples (indices first, then parameters, per chunk): shape (n_draws,)."""
    out = posterior_draw_values(mean, scale, x.shape[0], n_draws, generator, chunk=chunk, device=x.device,
                                value=lambda th, idx: normalised_linear_tuple_search(th, x[idx], x_neg[idx],
                                                                                     log_m_neg[idx], tau))
    return out.cpu().numpy()


def direct_certificate(theta_hat: torch.Tensor, centre: torch.Tensor, x: torch.Tensor, x_neg: torch.Tensor,
                       log_m_neg: torch.Tensor, tau: float, *, shift: float, delta: float, delta_mc: float,
                       pilot_draws: int, final_draws: int, generator: torch.Generator, derandomise: bool,
                       prior_scales=DIRECT_PRIOR_SCALES, eta_fractions=DIRECT_ETA_FRACTIONS,
                       posterior_scales=DIRECT_POSTERIOR_SCALES) -> dict:
    """Upper bound on ``E H - log k`` of a Gaussian posterior around the trained parameters (or,
    with ``derandomise``, of its mean, the trained embedding itself), from the per-tuple search
    cross-entropy of the n tuples ``(x, x_neg)`` (book, Theorems ``c5-thm-tuple-search`` and
    ``c5-thm-pac-bernstein``, Proposition ``c5-prop-derandomise``).

    ``centre`` (the priors' centre) and ``shift`` (the ``c`` of the loss ``h - log k - c``) must be
    fixed without the tuples the bound uses (here: from the other half of the data); the posterior
    may depend on everything. Priors ``N(centre, sigma^2 I)``, ``sigma`` in ``prior_scales``;
    ``eta = f / b`` with ``f`` in ``eta_fractions`` and ``b = 2 beta - shift``; the posterior scale
    from ``posterior_scales`` (free). The design is chosen on ``pilot_draws`` Monte Carlo pairs per
    posterior scale; the certificate uses ``final_draws`` fresh pairs. With probability at least
    ``1 - delta - delta_mc``, the randomised (or mean) embedding's ``E H - log k`` is at most
    ``bound``.

    Returns:
        ``{"bound", "emp", "mc_upper", "mc_cost", "variance", "variance_term", "complexity_term",
        "kl", "prior_scale", "posterior_scale", "eta", "derandomisation", "distance", "n"}``.
    Raises:
        ValueError: invalid levels, sizes or a shift outside the loss's range.
    """
    for name, value in (("delta", delta), ("delta_mc", delta_mc)):
        check_scalar(value, name, gt=0, lt=1, why="a confidence level")
    beta = 1.0 / check_scalar(tau, "tau", gt=0)
    shift = check_scalar(shift, "shift", gt=-2.0 * beta, lt=2.0 * beta)
    n, dim = x.shape
    mean = canonical_mean(theta_hat, centre, dim)
    identity = torch.eye(dim, dtype=mean.dtype, device=mean.device).reshape(-1)
    distance = float(torch.linalg.vector_norm(mean - identity))
    b = 2.0 * beta - shift
    extra = math.log(len(prior_scales) * len(eta_fractions) / delta)
    P = mean.numel()
    designs = []
    for s in posterior_scales:
        X = mc_tuple_search(mean, s, x, x_neg, log_m_neg, tau, pilot_draws, generator) - shift
        m1, m2 = float(X.mean()), float((X * X).mean())
        derand = derandomisation_cost(beta, distance, s, P, 4.0 * beta)[0] if derandomise else 0.0
        for sigma in prior_scales:
            kl = gaussian_kl_isotropic(mean.cpu().numpy(), centre.cpu().numpy(), s, sigma)
            for f in eta_fractions:
                eta = f / b
                value = shift + m1 + eta * psi_tilde(f) * m2 + (kl + extra) / (eta * n) + derand
                designs.append((value, s, sigma, f, kl))
    _, s, sigma, f, kl = min(designs, key=lambda d: d[0])
    eta = f / b
    gamma = eta * psi_tilde(f)
    X = mc_tuple_search(mean, s, x, x_neg, log_m_neg, tau, final_draws, generator) - shift
    Y = X + gamma * X * X
    lo, hi = quadratic_range(-2.0 * beta - shift, 2.0 * beta - shift, gamma)
    y_mean = float(Y.mean())
    y_upper = empirical_bernstein_upper(y_mean, float(Y.var(ddof=1)), final_draws, value_range=hi - lo,
                                        delta=delta_mc)
    derand = derandomisation_cost(beta, distance, s, P, 4.0 * beta)[0] if derandomise else 0.0
    complexity = (kl + extra) / (eta * n)
    bound = shift + y_upper + complexity + derand
    return {"bound": bound, "emp": float(X.mean()) + shift, "mc_upper": y_upper + shift, "mc_cost": y_upper - y_mean,
            "variance": float((X * X).mean() - X.mean() ** 2), "variance_term": gamma * float((X * X).mean()),
            "complexity_term": complexity, "kl_term": kl / (eta * n), "confidence_term": extra / (eta * n),
            "kl": kl, "prior_scale": sigma, "posterior_scale": s, "eta": eta, "derandomisation": derand,
            "distance": distance, "n": int(n)}


def direct_holdout(reference: np.ndarray, heldout: np.ndarray, tau: float, *, delta: float) -> dict:
    """The hold-out certificate (Corollary ``c5-cor-holdout``) of ``E H - log k`` from ``h - log k``
    on held-out tuples (``heldout``), with the shift and ``eta`` chosen on ``reference`` (values on
    tuples independent of the held-out ones) and ``eta`` inside ``(0, 1/b)``, ``b = 2 beta - c``.

    Returns:
        ``{"bound", "heldout_mean", "shift", "eta", "n"}`` (nats).
    """
    return holdout_certificate(reference, heldout, upper=2.0 / check_scalar(tau, "tau", gt=0), delta=delta)
