"""Gaussian-posterior PAC-Bayes certificates for a trained ``NormalisedLinear`` embedding (book,
Theorem ``c5-thm-pac-bayes``).

The arithmetic of the bound (the Bernoulli kl and its inverse, ``xi(n)``, the Gaussian relative
entropy, the certificate from a Monte Carlo estimate) is in :mod:`infonce_book.theory.pacbayes`;
this module applies it to the class ``phi_A(x) = A x / |A x|`` (parameters ``theta = vec(A)``,
``P = dim^2``) with priors ``N(centre, sigma^2 I)`` and posteriors ``N(mean, s^2 I)``:

* :func:`normalised_linear_losses`: InfoNCE of each tuple under its own parameter draw;
* :func:`canonical_mean`: the posterior mean, the point of the trained parameters' symmetry orbit
  closest to the prior centre;
* :func:`mc_empirical_risk`: a Monte Carlo estimate of the empirical risk of a Gaussian posterior;
* :func:`gaussian_posterior_certificate`: the choice of prior and posterior scales on a pilot and
  the certificate on fresh draws;
* :func:`randomised_search_cross_entropy`: what the certificate bounds, measured: the search
  cross-entropy of the randomised embedding (one parameter draw per query).

:data:`PRIOR_SCALES` and :data:`POSTERIOR_RATIOS` are the book's design, fixed before any data.
All losses and risks in nats.

Sources: book, Theorem ``c5-thm-pac-bayes``; Seeger (2002), "PAC-Bayesian generalisation error
bounds for Gaussian process classification"; Maurer (2004), "A note on the PAC Bayesian theorem";
Dziugaite & Roy (2017), "Computing nonvacuous generalization bounds for deep (stochastic) neural
networks with many more parameters than training data" (a Gaussian posterior around the trained
weights, a grid of prior scales paid for by a union bound).
"""

from __future__ import annotations

import math

import torch

from ..losses import VARIANTS
from ..theory.bounds import loss_range
from ..theory.pacbayes import gaussian_kl_isotropic, kl_inverse_upper, log_xi, pac_bayes_kl_certificate
from ..theory.search import search_cross_entropy
from ..utils.validation import check_choice, check_float_tensor, check_k, check_scalar

__all__ = ["PRIOR_SCALES", "POSTERIOR_RATIOS", "normalised_linear_losses", "canonical_mean", "mc_empirical_risk",
           "gaussian_posterior_certificate", "randomised_search_cross_entropy"]

#: Prior scales ``sigma_g = 0.5 * 2^(-g/2)``, g = 0..15: a grid fixed before the data and paid for
#: by a union bound (``G = 16`` in ``log(G xi(n) / delta)``).
PRIOR_SCALES = tuple(0.5 * 2.0 ** (-j / 2) for j in range(16))
#: Posterior-to-prior scale ratios ``s / sigma_g`` (free: the bound holds for every posterior at once).
POSTERIOR_RATIOS = (1.0, 0.5, 0.25, 0.125)


def _check_tuples(x, x_pos, x_neg):
    for name, t in (("x", x), ("x_pos", x_pos), ("x_neg", x_neg)):
        check_float_tensor(t, name, finite=False)
    if x.dim() != 2 or x_pos.shape != x.shape or x_neg.dim() != 3 or x_neg.shape[0] != x.shape[0] \
            or x_neg.shape[2] != x.shape[1]:
        raise ValueError(f"shapes must be x (b, dim), x_pos (b, dim), x_neg (b, k, dim); got {tuple(x.shape)}, "
                         f"{tuple(x_pos.shape)}, {tuple(x_neg.shape)}")


def normalised_linear_losses(thetas: torch.Tensor, x: torch.Tensor, x_pos: torch.Tensor, x_neg: torch.Tensor,
                             tau: float, *, variant: str = "standard") -> torch.Tensor:
    """InfoNCE of each tuple for ``phi_A(x) = A x / |A x|`` with its own parameters.

    ``l_i = -beta s_0 + log(e^{beta s_0} + sum_j e^{beta s_j})``, ``beta = 1/tau``, with
    ``s_0 = <phi_{A_i}(x_i), phi_{A_i}(x_i^+)>`` and ``s_j = <phi_{A_i}(x_i), phi_{A_i}(x_ij^-)>``;
    the decoupled variant leaves ``e^{beta s_0}`` out of the sum.

    Written out by hand rather than with
    :func:`~infonce_book.losses.info_nce_from_similarities`, whose centred, divided logits
    (``(s_j - s_0)/tau``, then ``log1p``) round differently. The two agree to about 2 ulp per
    tuple (measured: at most 1.8e-15 nats, 4.5e-16 relative, over 15,000 tuples with k in {4, 16,
    256}); with the library's loss, the Monte Carlo risks and the certificates of the smoke run
    moved by up to 8.9e-16 nats and the ends of the slack interval of its ledger by up to 8.7e-15.
    The book's ledger is kept bit for bit, so this form stays.

    Args:
        thetas: (b, dim^2) parameters ``vec(A_i)`` (row-major), one row per tuple.
        x, x_pos: (b, dim) anchors and positives; x_neg: (b, k, dim) negatives (non-zero rows).
        tau: temperature > 0. variant: ``"standard"`` or ``"decoupled"``.
    Returns:
        (b,) losses in nats, in ``[log(1 + k e^{-2 beta}), log(1 + k e^{2 beta})]`` (standard) or
        ``[log k - 2 beta, log k + 2 beta]`` (decoupled).
    Raises:
        TypeError: a non-floating tensor. ValueError: shapes that disagree, or ``tau <= 0``.
    Source: book eq. ``notation-infonce``.
    """
    _check_tuples(x, x_pos, x_neg)
    tau = check_scalar(tau, "tau", gt=0, why="temperature")
    check_choice(variant, "variant", VARIANTS)
    dim = x.shape[1]
    if thetas.dim() != 2 or thetas.shape != (x.shape[0], dim * dim):
        raise ValueError(f"thetas must have shape (b, dim^2) = {(x.shape[0], dim * dim)}, got {tuple(thetas.shape)}")
    A = thetas.reshape(-1, dim, dim)
    a = torch.nn.functional.normalize(torch.einsum("bij,bj->bi", A, x), dim=-1)
    p = torch.nn.functional.normalize(torch.einsum("bij,bj->bi", A, x_pos), dim=-1)
    ng = torch.nn.functional.normalize(torch.einsum("bij,bkj->bki", A, x_neg), dim=-1)
    s0 = (a * p).sum(-1)
    sn = torch.einsum("bd,bkd->bk", a, ng)
    beta = 1.0 / tau
    if variant == "decoupled":
        return -beta * s0 + torch.logsumexp(beta * sn, 1)
    return -beta * s0 + torch.logsumexp(beta * torch.cat([s0[:, None], sn], 1), 1)


def canonical_mean(theta_hat: torch.Tensor, centre: torch.Tensor, dim: int) -> torch.Tensor:
    """The point ``c R A`` (``R`` orthogonal, ``c > 0``) of the orbit of ``A = theta_hat`` closest
    to ``centre`` in Frobenius norm: orthogonal Procrustes (``R = U V^T`` from the SVD of
    ``C A^T``), then the best scale ``c = <RA, C> / |RA|^2``.

    The similarities of ``phi_A(x) = A x / |A x|`` are invariant under ``A -> c R A``, so the result
    has exactly the losses of ``theta_hat`` (up to rounding) and is at most as far from ``centre``.

    Args:
        theta_hat, centre: (dim^2,) parameters ``vec(A)``, ``vec(C)`` (row-major).
        dim: the dimension of ``A``.
    Returns:
        (dim^2,) tensor, the dtype of ``theta_hat``.
    Raises:
        ValueError: ``theta_hat`` or ``centre`` without dim^2 entries.
    Source: book, the design after Theorem ``c5-thm-pac-bayes``; Schönemann (1966) for Procrustes.
    """
    dim = check_k(dim, "dim")
    if theta_hat.numel() != dim * dim or centre.numel() != dim * dim:
        raise ValueError(f"theta_hat and centre must have dim^2 = {dim * dim} entries, got {theta_hat.numel()} "
                         f"and {centre.numel()}")
    A, C = theta_hat.reshape(dim, dim), centre.reshape(dim, dim)
    U, _, Vt = torch.linalg.svd(C @ A.T)
    B = (U @ Vt) @ A
    c = float((B * C).sum() / (B * B).sum())
    return (c * B).reshape(-1)


def mc_empirical_risk(mean: torch.Tensor, scale: float, tuples, tau: float, n_draws: int,
                      generator: torch.Generator, chunk: int = 20000) -> float:
    """Mean of ``n_draws`` i.i.d. losses ``l(theta_l; z_{i_l})``, ``theta_l ~ N(mean, scale^2 I)``,
    ``i_l`` uniform on the tuples: an unbiased estimate of the empirical risk of the posterior.

    Draws, per chunk of at most ``chunk`` pairs, the indices first and then the parameters, from
    ``generator`` (so a fixed generator state gives a fixed estimate; ``scale = 0`` gives the
    empirical risk of ``mean`` up to rounding).

    Args:
        mean: (dim^2,) posterior mean. scale: posterior standard deviation >= 0.
        tuples: ``(x, x_pos, x_neg)`` of shapes (n, dim), (n, dim), (n, k, dim).
        tau: temperature > 0. n_draws: number of pairs >= 1. generator: on the tuples' device.
    Returns:
        The estimate, in nats (a float).
    Raises:
        ValueError: ``n_draws`` or ``chunk`` below 1, ``scale < 0``, shapes that disagree.
    """
    x, xp, xn = tuples
    n_draws, chunk = check_k(n_draws, "n_draws"), check_k(chunk, "chunk")
    scale = check_scalar(scale, "scale", ge=0)
    n = x.shape[0]
    total, done = 0.0, 0
    while done < n_draws:
        b = min(chunk, n_draws - done)
        idx = torch.randint(0, n, (b,), generator=generator, device=x.device)
        th = mean[None, :] + scale * torch.randn(b, mean.numel(), generator=generator, dtype=mean.dtype,
                                                 device=mean.device)
        total += float(normalised_linear_losses(th, x[idx], xp[idx], xn[idx], tau).sum())
        done += b
    return total / n_draws


def gaussian_posterior_certificate(theta_hat: torch.Tensor, centre: torch.Tensor, tuples, tau: float, *,
                                   delta: float, delta_mc: float, pilot_draws: int, final_draws: int,
                                   generator: torch.Generator, prior_scales=PRIOR_SCALES,
                                   posterior_ratios=POSTERIOR_RATIOS) -> dict:
    """The certificate of Theorem ``c5-thm-pac-bayes`` for ``phi_A(x) = A x / |A x|`` trained to
    ``theta_hat`` on ``tuples``: priors ``N(centre, sigma_g^2 I)``, ``sigma_g`` in ``prior_scales``
    (fixed before the data), posterior ``N(mean, s^2 I)`` with ``mean`` the
    :func:`canonical_mean` of ``theta_hat`` and ``s = ratio * sigma_g``.

    ``(sigma_g, s)`` is the pair of the grid with the smallest kl-inverse guess on a pilot of
    ``pilot_draws`` Monte Carlo pairs per pair of scales; the certificate then uses
    ``final_draws`` fresh pairs (so the choice costs nothing beyond the union bound over the
    priors). With probability at least ``1 - delta - delta_mc`` over the data and the draws,
    ``E_{theta ~ Q} L_k(phi_theta) <= risk_upper``.

    Args:
        theta_hat, centre: (dim^2,) trained parameters and the priors' centre.
        tuples: the n training tuples ``(x, x_pos, x_neg)``, shapes (n, dim), (n, dim), (n, k, dim).
        tau: temperature > 0. delta, delta_mc: the confidence of the PAC-Bayes and of the Monte
        Carlo step, in (0, 1). pilot_draws, final_draws: Monte Carlo pairs >= 1.
        generator: the source of every draw (pilot first, then the final draws).
        prior_scales, posterior_ratios: the design grids (positive numbers).
    Returns:
        ``{"mean": tensor, "prior_scale", "posterior_scale", "kl", "emp_risk", "emp_upper",
        "risk_upper", "distance", "draws"}``: the posterior, ``KL(Q || P_g)`` (nats), the Monte
        Carlo empirical risk, its upper bound, the bound on the risk (nats, unscaled), ``|mean -
        centre|`` and ``final_draws``.
    Raises:
        RuntimeError: the canonical mean changed the training losses (Procrustes failed).
        ValueError: invalid levels, sizes or shapes (from the functions called).
    """
    x = tuples[0]
    (n, dim), k = x.shape, tuples[2].shape[1]
    beta = 1.0 / tau
    B, lmin = loss_range(k, tau), math.log1p(k * math.exp(-2.0 * beta))
    mean = canonical_mean(theta_hat, centre, dim)
    with torch.no_grad():
        same = normalised_linear_losses(mean.expand(n, -1), *tuples, tau)
        trained = normalised_linear_losses(theta_hat.reshape(-1).expand(n, -1), *tuples, tau)
    if not torch.allclose(same, trained, atol=1e-9):
        raise RuntimeError("the canonical representative changed the training losses; Procrustes failed")
    log_extra = log_xi(n) + math.log(len(prior_scales) / delta)
    best = None
    with torch.no_grad():
        for sigma in prior_scales:  # pilot: choose the prior scale and the posterior scale
            for ratio in posterior_ratios:
                s = ratio * sigma
                S = (mc_empirical_risk(mean, s, tuples, tau, pilot_draws, generator) - lmin) / B
                kl = gaussian_kl_isotropic(mean.cpu().numpy(), centre.cpu().numpy(), s, sigma)
                guess = kl_inverse_upper(min(max(S, 0.0), 1.0), (kl + log_extra) / n)
                if best is None or guess < best[0]:
                    best = (guess, sigma, s, kl)
        _, sigma, s, kl = best
        emp = mc_empirical_risk(mean, s, tuples, tau, final_draws, generator)  # fresh draws
    cert = pac_bayes_kl_certificate(min(max((emp - lmin) / B, 0.0), 1.0), final_draws, kl, n, delta=delta,
                                    delta_mc=delta_mc, n_priors=len(prior_scales))
    return {"mean": mean, "prior_scale": sigma, "posterior_scale": s, "kl": kl, "emp_risk": emp,
            "emp_upper": lmin + B * cert["empirical_upper"], "risk_upper": lmin + B * cert["risk_upper"],
            "distance": float(torch.linalg.vector_norm(mean - centre)), "draws": final_draws}


def randomised_search_cross_entropy(mean: torch.Tensor, scale: float, x: torch.Tensor, database: torch.Tensor,
                                    log_ratio: torch.Tensor, tau: float, generator: torch.Generator) -> torch.Tensor:
    """``H(M_k, Q^theta_k)`` of each query for the randomised embedding: one draw
    ``theta ~ N(mean, scale^2 I)`` per query (row of ``x``), ``phi_theta(x) = A x / |A x|``.

    Args:
        mean: (dim^2,) posterior mean. scale: posterior standard deviation >= 0.
        x: (n, dim) queries; database: (n, k, dim) each query's database.
        log_ratio: (n, k) ``log m(x, x_j)`` of the reference model. tau: temperature > 0.
        generator: the source of the n parameter draws.
    Returns:
        (n,) cross-entropies in nats (``E`` over queries of the mean is ``E_Q E H``, which the
        certificate bounds after ``- log k`` and the search bias).
    Raises:
        ValueError: ``scale < 0`` or shapes that disagree (from
        :func:`~infonce_book.theory.search.search_cross_entropy`).
    Source: book, Theorem ``c5-thm-pac-bayes``; the search cross-entropy of Chapter 2.
    """
    scale = check_scalar(scale, "scale", ge=0)
    dim = x.shape[1]
    with torch.no_grad():
        th = mean[None, :] + scale * torch.randn(x.shape[0], mean.numel(), generator=generator, dtype=mean.dtype,
                                                 device=mean.device)
        A = th.reshape(-1, dim, dim)
        a = torch.nn.functional.normalize(torch.einsum("bij,bj->bi", A, x), dim=-1)
        e = torch.nn.functional.normalize(torch.einsum("bij,bkj->bki", A, database), dim=-1)
        return search_cross_entropy(torch.einsum("bd,bkd->bk", a, e), log_ratio, tau)
