"""Variance-sensitive certificates for a trained ``NormalisedLinear`` embedding (book, Chapter 5,
"Certificates that beat a random search").

Each bounds the decoupled risk ``L_k^dec`` of an embedding; Proposition ``c5-prop-search-exact``
then turns it into a bound on the search cross-entropy by adding the sharp search bias ``b*_k``.

* :func:`bernstein_posterior_certificate`: the PAC-Bayes un-expected Bernstein bound (Theorem
  ``c5-thm-pac-bernstein``) for a Gaussian posterior around the trained parameters, with a Monte
  Carlo step (Maurer & Pontil's empirical Bernstein bound); with ``derandomise=True`` the posterior
  is chosen for the *mean* embedding and the price of passing from the randomised to the mean
  embedding is added (Proposition ``c5-prop-derandomise``): a certificate for the trained,
  deterministic embedding.
* :func:`derandomisation_cost`: that price, from the curvature bound of Lemma
  ``c5-lem-curvature``.
* :func:`holdout_certificate`: the certificate of an embedding trained on one part of the tuples
  and evaluated on the other (Corollary ``c5-cor-holdout``).

Losses are those of :func:`~infonce_book.learning.pacbayes.normalised_linear_losses` (decoupled
variant) minus ``log k``; all values in nats.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import stats

from ..theory.bernstein import ETAS, best_unexpected_bernstein, empirical_bernstein_upper, psi_tilde, quadratic_range
from ..theory.pacbayes import gaussian_kl_isotropic
from ..utils.validation import check_k, check_scalar
from .pacbayes import PRIOR_SCALES, canonical_mean, normalised_linear_losses

__all__ = ["holdout_size_needed", "SHIFTS", "POSTERIOR_SCALES", "posterior_draw_values", "SIMILARITY_CURVATURE",
           "loss_curvature", "derandomisation_cost",
           "mc_decoupled_losses", "bernstein_posterior_certificate", "holdout_certificate"]

#: Shifts ``c - log k`` of the decoupled loss, fixed before the data: the un-expected Bernstein
#: inequality pays the second moment of ``l - c``, which is smallest near the mean. A grid of five,
#: paid for by ``log 5`` in the confidence term.
SHIFTS = (0.0, -0.25, -0.5, -0.75, -1.0)
#: Posterior scales ``s = 0.25 * 2^(-j/2)``, j = 0..13 (0.25 to 0.002; free: the bound holds for
#: every posterior at once). For each, the pilot pairs it with every prior scale.
POSTERIOR_SCALES = tuple(0.25 * 2.0 ** (-j / 2) for j in range(14))
#: ``C_2 = 4/sqrt(3) + 2``: ``|d^2 s / du^2| <= C_2 L^2 |H|_F^2`` along a line ``A + uH`` of the class
#: (book, Lemma ``c5-lem-curvature``).
SIMILARITY_CURVATURE = 4.0 / math.sqrt(3.0) + 2.0


def loss_curvature(beta: float, radius: float) -> float:
    """``kappa_r = 2 beta C_2 / (1 - r)^2``: the second directional derivative of the InfoNCE loss
    (either variant) of ``phi_A(x) = A x/|A x|`` in ``A`` is at least ``-kappa_r |H|_F^2`` wherever
    ``|A - I|_F <= r < 1`` (book, Lemma ``c5-lem-curvature``).

    Examples:
        >>> round(loss_curvature(2.0, 0.25), 4)  # 2 * 2 * 4.3094 / 0.75^2
        30.6446
    """
    beta = check_scalar(beta, "beta", gt=0)
    radius = check_scalar(radius, "radius", ge=0, lt=1)
    return 2.0 * beta * SIMILARITY_CURVATURE / (1.0 - radius) ** 2


def derandomisation_cost(beta: float, distance: float, scale: float, n_params: int, loss_range: float,
                         n_grid: int = 200) -> tuple[float, float]:
    """The price of the mean embedding: ``L(theta_bar) <= L(rho) + cost`` for ``rho = N(theta_bar,
    scale^2 I_P)`` and every law of the tuples (book, Proposition ``c5-prop-derandomise``), with

    ``cost = min_t [ kappa_{r + t} P scale^2 / 2 + B Pr(chi^2_P > t^2 / scale^2) ]``,

    ``r = |theta_bar - I|_F`` (``distance``), ``B`` the loss's range and ``t`` on a grid of
    ``n_grid`` points in ``(0, 1 - r)`` (any ``t`` is allowed: the inequality holds for each).

    Returns:
        ``(cost, t)`` in nats and in parameter units.
    Raises:
        ValueError: ``distance >= 1`` (the class is not differentiable there), other bad values.

    Examples:
        >>> cost, t = derandomisation_cost(2.0, 0.05, 0.0, 9, 8.0)
        >>> cost
        0.0
    """
    beta = check_scalar(beta, "beta", gt=0)
    distance = check_scalar(distance, "distance", ge=0, lt=1)
    scale = check_scalar(scale, "scale", ge=0)
    n_params = check_k(n_params, "n_params")
    loss_range = check_scalar(loss_range, "loss_range", gt=0)
    ts = (1.0 - distance) * np.arange(1, n_grid + 1) / (n_grid + 1)
    if scale == 0.0:
        return 0.0, float(ts[0])
    curv = 2.0 * beta * SIMILARITY_CURVATURE / (1.0 - distance - ts) ** 2
    costs = curv * n_params * scale**2 / 2.0 + loss_range * stats.chi2.sf((ts / scale) ** 2, n_params)
    i = int(np.argmin(costs))
    return float(costs[i]), float(ts[i])


def mc_decoupled_losses(mean: torch.Tensor, scale: float, tuples, tau: float, n_draws: int,
                        generator: torch.Generator, chunk: int = 20000) -> torch.Tensor:
    """``l^dec(theta_l; z_{i_l}) - log k`` for ``n_draws`` i.i.d. pairs, ``theta_l ~ N(mean, scale^2
    I)`` and ``i_l`` uniform on the tuples (indices first, then parameters, per chunk): shape
    ``(n_draws,)``, float64, nats."""
    x, xp, xn = tuples
    out = posterior_draw_values(mean, scale, x.shape[0], n_draws, generator, chunk=chunk, device=x.device,
                                value=lambda th, idx: normalised_linear_losses(th, x[idx], xp[idx], xn[idx], tau,
                                                                                 variant="decoupled"))
    return (out - math.log(xn.shape[1])).to(torch.float64)


def posterior_draw_values(mean: torch.Tensor, scale: float, n: int, n_draws: int, generator: torch.Generator, *,
                          value, chunk: int, device: torch.device | str) -> torch.Tensor:
    """``value(theta_l, i_l)`` for ``n_draws`` i.i.d. pairs: ``i_l`` uniform on ``n`` tuples and
    ``theta_l ~ N(mean, scale^2 I)``, drawn per chunk (the chunk's indices first, then its
    parameters, from ``generator``), concatenated: shape ``(n_draws,)``.

    Raises:
        ValueError: ``n_draws`` or ``chunk`` not a positive integer; ``scale`` negative.
    """
    n_draws, chunk = check_k(n_draws, "n_draws"), check_k(chunk, "chunk")
    scale = check_scalar(scale, "scale", ge=0)
    out = []
    with torch.no_grad():
        for done in range(0, n_draws, chunk):
            b = min(chunk, n_draws - done)
            idx = torch.randint(0, n, (b,), generator=generator, device=device)
            th = mean[None, :] + scale * torch.randn(b, mean.numel(), generator=generator, dtype=mean.dtype,
                                                     device=mean.device)
            out.append(value(th, idx))
    return torch.cat(out)


def _pilot(mean, centre, tuples, tau, *, distance, n_bound, complexity_extra, pilot_draws, generator,
           prior_scales, posterior_scales, shifts, etas):
    """Every design point of the pilot: ``(randomised guess, deterministic guess, sigma, s, c, eta,
    kl)`` for each posterior scale s (one Monte Carlo sample each), prior scale, shift and the best
    eta of each."""
    beta = 1.0 / tau
    P = mean.numel()
    out = []
    for s in posterior_scales:
        X = mc_decoupled_losses(mean, s, tuples, tau, pilot_draws, generator).cpu().numpy()
        derand = derandomisation_cost(beta, distance, s, P, 4.0 * beta)[0]
        moments = {c: (float((X - c).mean()), float(((X - c) ** 2).mean())) for c in shifts}
        for sigma in prior_scales:
            kl = gaussian_kl_isotropic(mean.cpu().numpy(), centre.cpu().numpy(), s, sigma)
            for c, (m1, m2) in moments.items():
                value, eta = best_unexpected_bernstein(m1, m2, b=2.0 * beta - c, n=n_bound,
                                                       complexity=kl + complexity_extra, etas=etas)
                out.append((value + c, value + c + derand, sigma, s, c, eta, kl))
    return out


def _final(mean, tuples, tau, design, *, n_bound, complexity_extra, final_draws, delta_mc, generator):
    """The certificate at one design point on fresh Monte Carlo draws: the PAC-Bayes bound with
    the empirical Bernstein upper bound on ``E_rho`` of the Monte Carlo average."""
    beta = 1.0 / tau
    _, _, sigma, s, c, eta, kl = design
    gamma = eta * psi_tilde(eta * (2.0 * beta - c))
    X = mc_decoupled_losses(mean, s, tuples, tau, final_draws, generator).cpu().numpy() - c
    Y = X + gamma * X * X
    lo, hi = quadratic_range(-2.0 * beta - c, 2.0 * beta - c, gamma)
    y_upper = empirical_bernstein_upper(float(Y.mean()), float(Y.var(ddof=1)), final_draws, value_range=hi - lo,
                                        delta=delta_mc)
    bound = c + y_upper + (kl + complexity_extra) / (eta * n_bound)
    return {"bound": bound, "emp_risk": float(X.mean()) + c, "mc_upper": y_upper + c, "kl": kl,
            "prior_scale": sigma, "posterior_scale": s, "shift": c, "eta": eta}


def bernstein_posterior_certificate(theta_hat: torch.Tensor, centre: torch.Tensor, tuples, tau: float, *,
                                    delta: float, delta_mc: float, pilot_draws: int, final_draws: int,
                                    generator: torch.Generator, derandomise: bool = False,
                                    prior_scales=PRIOR_SCALES, posterior_scales=POSTERIOR_SCALES,
                                    shifts=SHIFTS, etas=ETAS) -> dict:
    """Upper bound on ``L_k^dec - log k`` of a Gaussian posterior (or, with ``derandomise``, of its
    mean) around the trained ``NormalisedLinear`` parameters (book, Theorem ``c5-thm-pac-bernstein``
    and Proposition ``c5-prop-derandomise``).

    Priors ``N(centre, sigma_g^2 I)`` (``sigma_g`` in ``prior_scales``, ``centre`` fixed before the
    tuples the bound uses); posterior ``N(theta_bar, s^2 I)`` with ``theta_bar`` the
    :func:`~infonce_book.learning.pacbayes.canonical_mean` of ``theta_hat`` (the same similarities,
    hence the same losses) and ``s`` from ``posterior_scales``; the shift ``c`` of the loss and
    ``eta`` from their grids. The design ``(sigma_g, s, c, eta)`` is chosen on ``pilot_draws`` Monte
    Carlo pairs per posterior scale; the certificate uses ``final_draws`` fresh pairs. With probability at least
    ``1 - delta - delta_mc`` over the tuples and the draws, the randomised embedding's
    ``L_k^dec(rho) - log k`` (or, derandomised, the mean embedding's) is at most ``bound``.

    Args:
        theta_hat: (dim^2,) trained parameters. centre: (dim^2,) the priors' centre.
        tuples: the n tuples the bound is computed on (none of them used to choose ``centre``).
        tau: temperature > 0. delta, delta_mc: the PAC-Bayes and Monte Carlo confidence, in (0, 1).
        pilot_draws, final_draws: Monte Carlo pairs (>= 2). generator: the source of every draw.
        derandomise: certify the mean embedding (adds :func:`derandomisation_cost`, with the
            curvature measured from the class centre, the identity).
        prior_scales, posterior_scales, shifts, etas: the design grids, fixed before the data;
            the union bound pays ``log(|prior_scales| |shifts| |etas|)``.
    Returns:
        ``{"bound", "emp_risk", "mc_upper", "kl", "prior_scale", "posterior_scale", "shift", "eta",
        "derandomisation", "distance", "mean"}`` (nats; ``distance = |theta_bar - I|_F``).
    Raises:
        RuntimeError: the canonical mean changed the losses (Procrustes failed).
        ValueError: invalid levels, sizes or shapes.
    Sources: Mhammedi, Grunwald & Guedj (2019); Maurer & Pontil (2009); Dziugaite & Roy (2017).
    """
    for name, value in (("delta", delta), ("delta_mc", delta_mc)):
        check_scalar(value, name, gt=0, lt=1, why="a confidence level")
    x = tuples[0]
    n, dim = x.shape
    mean = canonical_mean(theta_hat, centre, dim)
    with torch.no_grad():
        same = normalised_linear_losses(mean.expand(n, -1), *tuples, tau, variant="decoupled")
        trained = normalised_linear_losses(theta_hat.reshape(-1).expand(n, -1), *tuples, tau, variant="decoupled")
    if not torch.allclose(same, trained, atol=1e-9):
        raise RuntimeError("the canonical representative changed the losses; Procrustes failed")
    identity = torch.eye(dim, dtype=mean.dtype, device=mean.device).reshape(-1)
    distance = float(torch.linalg.vector_norm(mean - identity))
    extra = math.log(len(prior_scales) * len(shifts) * len(etas) / delta)
    designs = _pilot(mean, centre, tuples, tau, distance=distance, n_bound=n, complexity_extra=extra,
                     pilot_draws=pilot_draws, generator=generator, prior_scales=prior_scales,
                     posterior_scales=posterior_scales, shifts=shifts, etas=etas)
    best = min(designs, key=lambda d: d[1] if derandomise else d[0])
    out = _final(mean, tuples, tau, best, n_bound=n, complexity_extra=extra, final_draws=final_draws,
                 delta_mc=delta_mc, generator=generator)
    beta = 1.0 / tau
    derand = derandomisation_cost(beta, distance, out["posterior_scale"], mean.numel(), 4.0 * beta)[0] \
        if derandomise else 0.0
    out.update(bound=out["bound"] + derand, derandomisation=derand, distance=distance, mean=mean)
    return out


def holdout_certificate(reference: np.ndarray, heldout: np.ndarray, *, upper: float, delta: float) -> dict:
    """Upper bound on the mean of a loss from held-out values (book, Corollary ``c5-cor-holdout``).

    The shift ``c`` and ``eta`` are chosen on ``reference`` (the training tuples of the embedding,
    independent of the held-out ones), so no grid is paid for: with probability at least
    ``1 - delta`` over the held-out tuples,
    ``E X <= c + mean(X - c) + eta psi_tilde(eta b) mean((X - c)^2) + log(1/delta)/(eta n)``, with
    ``b = upper - c`` an almost-sure bound on ``X - c``.

    Args:
        reference: values of the loss on tuples independent of ``heldout`` (to choose c and eta).
        heldout: the n held-out values (>= 2). upper: an almost-sure upper bound on the loss.
        delta: in (0, 1).
    Returns:
        ``{"bound", "heldout_mean", "shift", "eta", "n"}``.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> out = holdout_certificate(rng.normal(0, 0.5, 1000), rng.normal(0, 0.5, 1000), upper=4.0, delta=0.05)
        >>> 0.0 < out["bound"] - out["heldout_mean"] < 0.1
        True
    """
    reference, heldout = np.asarray(reference, dtype=np.float64), np.asarray(heldout, dtype=np.float64)
    if reference.ndim != 1 or heldout.ndim != 1 or reference.size < 2 or heldout.size < 2:
        raise ValueError("reference and heldout must be 1-D arrays of at least two values")
    upper = check_scalar(upper, "upper")
    delta = check_scalar(delta, "delta", gt=0, lt=1, why="a confidence level")
    if reference.max() > upper or heldout.max() > upper:
        raise ValueError(f"a loss exceeds its stated upper bound {upper!r}")
    n = heldout.size
    c, eta = _holdout_design(reference, upper, delta, n)
    X = heldout - c
    bound = _holdout_bound(c, float(X.mean()), float((X**2).mean()), upper - c, eta, n, delta)
    return {"bound": bound, "heldout_mean": float(heldout.mean()), "shift": c, "eta": eta, "n": int(n)}


def _holdout_design(reference: np.ndarray, upper: float, delta: float, n: int) -> tuple[float, float]:
    """The shift ``c`` (the reference mean) and ``eta`` in ``(0, 1/(upper - c))`` of a hold-out
    certificate on ``n`` values, chosen on the reference values alone."""
    c = float(reference.mean())
    b = upper - c
    v_ref = float(((reference - c) ** 2).mean())
    etas = np.linspace(1e-3, 1.0 / b, 2000, endpoint=False)
    return c, float(min(etas, key=lambda e: e * psi_tilde(e * b) * v_ref + math.log(1.0 / delta) / (e * n)))


def _holdout_bound(c: float, m1: float, m2: float, b: float, eta: float, n: int, delta: float) -> float:
    return c + m1 + eta * psi_tilde(eta * b) * m2 + math.log(1.0 / delta) / (eta * n)


def holdout_size_needed(reference: np.ndarray, heldout: np.ndarray, *, upper: float, delta: float,
                        target: float, n_max: int = 10**9) -> float:
    """The smallest number of held-out values at which :func:`holdout_certificate` would fall
    below ``target`` if the held-out mean and second moment stayed as measured on ``heldout``: a
    projection of how much data an uninformative certificate would need, not a certificate.

    Args:
        reference, heldout, upper, delta: as in :func:`holdout_certificate`.
        target: the value the certificate must fall below (e.g. the uniform search's risk).
        n_max: the largest size tried.
    Returns:
        That size (an integer-valued float), ``len(heldout)`` or less if the measured certificate
        is already below ``target``; ``inf`` when even ``n_max`` values would not do (in
        particular when the held-out mean itself is not below ``target``).
    Raises:
        ValueError: as :func:`holdout_certificate`.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> ref, held = rng.normal(0, 0.5, 200), rng.normal(0, 0.5, 20)
        >>> n = holdout_size_needed(ref, held, upper=4.0, delta=0.05, target=0.2)
        >>> bigger = np.tile(held, int(n) // 20 + 1)  # the same moments, more values
        >>> holdout_certificate(ref, bigger, upper=4.0, delta=0.05)["bound"] < 0.2 < holdout_certificate(
        ...     ref, held, upper=4.0, delta=0.05)["bound"]
        True
    """
    reference, heldout = np.asarray(reference, dtype=np.float64), np.asarray(heldout, dtype=np.float64)
    holdout_certificate(reference, heldout, upper=upper, delta=delta)  # the same checks
    c = float(reference.mean())
    m1, m2 = float((heldout - c).mean()), float(((heldout - c) ** 2).mean())

    def below(n: int) -> bool:
        eta = _holdout_design(reference, upper, delta, n)[1]
        return _holdout_bound(c, m1, m2, upper - c, eta, n, delta) < target

    if not below(n_max):
        return math.inf
    if below(2):
        return 2.0
    low, high = 2, n_max  # below(high) holds, below(low) does not
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if below(mid) else (mid, high)
    return float(high)
