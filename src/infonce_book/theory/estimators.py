"""Monte Carlo estimators with confidence intervals (book, C1 chapter, "Monte Carlo").

:func:`monte_carlo_bias` estimates ``L_k - log k - L_inf`` for the vMF model by sampling whole
tuples (anchor, positive, k negatives) on the chosen device, scoring them with the library's
InfoNCE loss in chunks of negatives, and averaging. Two estimators are reported, from the same
draws:

* ``plain``: the average of ``l_k - log k - L_inf`` over tuples (uses nothing but the loss);
* ``cv``: control variates with known means. Since ``E[-beta s+] = -beta A_p(kappa)`` and
  ``E[T - 1] = E(W+)/(k mu)`` are known in closed form, the per-tuple value
  ``log T - (T - 1) + E(W+)/(k mu)`` with ``log T = l_k + beta s+ - log k - log mu`` has the same
  mean and a standard deviation of order ``1/k`` instead of ``O(1)``.

Both come with normal-theory 95% intervals (mean +- z sd / sqrt(n)).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..losses import VARIANTS, info_nce_streaming
from ..utils.device import resolve_device
from ..utils.progress import progress
from ..utils.validation import check_at_least, check_choice, check_k, check_level, check_seed, check_tau
from .stats import Estimate


def monte_carlo_bias(model, k: int, tau: float, n_tuples: int, *, variant: str = "standard",
                     device="auto", seed: int = 0, batch_size: int = 1024, chunk_size: int = 4096,
                     dtype=torch.float64, level: float = 0.95, show_progress: bool = False) -> dict:
    """Monte Carlo estimate of ``L_k - log k - L_inf`` for the vMF model, with intervals.

    Args:
        model: a model on the sphere with phi = identity and closed-form moments
            (:class:`~infonce_book.models.VonMisesFisher`).
        k: number of negatives >= 1. tau: temperature > 0. n_tuples: number of i.i.d. tuples.
        variant: ``"standard"`` or ``"decoupled"``.
        device: ``"auto"``, ``"cpu"`` or ``"cuda"``. seed: seeds a torch generator on the device.
        batch_size: anchors per batch. chunk_size: negatives scored at once per anchor, so at
            most ``batch_size x chunk_size`` similarities are held.
        dtype: float64 (default) or float32 for the sampled embeddings and similarities.
        level: interval level, in (0, 1).
    Returns:
        dict with ``plain`` and ``cv`` :class:`~infonce_book.theory.stats.Estimate` objects, ``n_tuples``, ``device``.
    Source: book, C1 chapter, "Monte Carlo estimates".
    """
    if not getattr(model, "identity_embedding", False):
        raise TypeError(f"model must live on the sphere with the identity embedding and closed-form weight "
                        f"moments (the vMF model: its closed forms give the control variates), got {model!r}")
    model.require("normalised_weight_moments", "monte_carlo_bias needs the weight moments for its control variates")
    check_choice(variant, "variant", VARIANTS)
    k = check_k(k)
    n_tuples = check_at_least(n_tuples, "n_tuples", 2, "an interval needs two tuples")
    tau = check_tau(tau)
    batch_size, chunk_size = check_k(batch_size, "batch_size"), check_k(chunk_size, "chunk_size")
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got dtype={dtype!r}")
    level = check_level(level)
    seed = check_seed(seed)
    dev = resolve_device(device)
    beta = 1.0 / tau
    gen = torch.Generator(device=dev)
    gen.manual_seed(int(seed))
    mom = model.normalised_weight_moments(tau)  # in log space: mu itself overflows below tau ~ 1/709
    log_mu = mom["log_mu"]
    limit = model.limit_risk(tau)
    mean_T_minus_1 = mom["u1"] / k if variant == "standard" else 0.0
    plain, cv = [], []
    n_batches = math.ceil(n_tuples / batch_size)
    for b in progress(range(n_batches), desc=f"Monte Carlo k={k}", disable=not show_progress):
        n = min(batch_size, n_tuples - b * batch_size)
        x = model.sample_data(n, generator=gen, device=dev, dtype=dtype)
        xp = model.sample_positive(x, generator=gen)
        s_pos = (x * xp).sum(-1)

        def negative_chunks():
            for lo in range(0, k, chunk_size):
                m = min(chunk_size, k - lo)
                neg = model.sample_negatives(n, m, generator=gen, device=dev, dtype=dtype)
                yield torch.einsum("bd,bkd->bk", x, neg)

        loss = info_nce_streaming(s_pos, negative_chunks(), tau, variant=variant, reduction="none").double()
        centred = loss - math.log(k)
        plain.append((centred - limit).cpu().numpy())
        log_T = centred + beta * s_pos.double() - log_mu
        cv.append((log_T - torch.expm1(log_T) + mean_T_minus_1).cpu().numpy())
    plain = np.concatenate(plain)
    cv = np.concatenate(cv)
    return {"plain": Estimate.from_samples(plain, level), "cv": Estimate.from_samples(cv, level),
            "n_tuples": n_tuples, "device": str(dev)}


IN_BATCH_FORMS = ("clip", "nt_xent")


def in_batch_negatives(form: str, batch_size: int) -> int:
    """Negatives per row of an in-batch loss: ``B - 1`` for CLIP (each direction), ``2B - 2`` for
    NT-Xent (book, C1 chapter, in-batch section)."""
    check_choice(form, "form", IN_BATCH_FORMS)
    B = check_at_least(batch_size, "batch_size", 2, "an in-batch row needs one other pair as negatives")
    return B - 1 if form == "clip" else 2 * B - 2


def in_batch_row_log_terms(anchor: torch.Tensor, positive: torch.Tensor, tau: float, form: str):
    """Per row of the in-batch losses, the loss and ``-beta s(a, a+)``, in float64.

    Args:
        anchor, positive: (n, B, d) embeddings of n independent batches of B pairs.
        tau: temperature > 0. form: ``"clip"`` (rows and columns of ``anchor @ positive.T / tau``,
            the diagonal as positives: (n, 2, B) rows, direction first) or ``"nt_xent"`` (the 2B
            views, each against the other 2B - 1 with itself masked out: (n, 2B) rows).
    Returns:
        ``(loss, minus_beta_s_pos)`` of the same shape.

    The log-sum-exp runs over a masked float64 matrix (the self-similarity is set to ``-inf``
    before the maximum is taken), for many batches at once. Row by row it equals the library's
    ``infonce_book.losses.info_nce_in_batch`` (both directions) and ``nt_xent`` with
    ``reduction="none"`` (a test checks it to 1e-13), which score one batch per call.
    """
    check_choice(form, "form", IN_BATCH_FORMS)
    beta = 1.0 / check_tau(tau)
    a, p = anchor.double(), positive.double()
    if form == "clip":
        S = beta * torch.einsum("nid,njd->nij", a, p)
        diag = torch.diagonal(S, dim1=1, dim2=2)
        rows, cols = torch.logsumexp(S, dim=2), torch.logsumexp(S, dim=1)
        loss = torch.stack([rows - diag, cols - diag], dim=1)
        return loss, -torch.stack([diag, diag], dim=1)
    z = torch.cat([a, p], dim=1)
    B = a.shape[1]
    G = beta * torch.einsum("nad,nbd->nab", z, z)
    pos = torch.cat([torch.diagonal(G[:, :B, B:], dim1=1, dim2=2), torch.diagonal(G[:, B:, :B], dim1=1, dim2=2)],
                    dim=1)
    eye = torch.eye(2 * B, dtype=torch.bool, device=G.device)
    lse = torch.logsumexp(G.masked_fill(eye, float("-inf")), dim=2)
    return lse - pos, -pos


def monte_carlo_in_batch_bias(model, batch_size: int, tau: float, n_batches: int, *, form: str = "clip",
                              device="auto", seed: int = 0, level: float = 0.95,
                              max_elements: int = 2**22) -> dict:
    """Monte Carlo estimate of ``L^form_B - log k - L_inf`` for the in-batch losses on the vMF
    model (book, C1 chapter, in-batch section), with intervals.

    Each of ``n_batches`` independent batches holds ``batch_size`` pairs ``(x_i, x_i^+)`` drawn with
    the model's samplers; every row (CLIP: both directions; NT-Xent: all 2B views) is scored in
    float64 (:func:`in_batch_row_log_terms`). Rows of one batch share negatives and are dependent,
    so the batch means are the i.i.d. units of the interval. Two estimators, from the same draws:

    * ``plain``: the average of ``loss - log k - L_inf``;
    * ``cv``: the average of ``log T - (T - 1) + u1/k`` with ``log T = loss - log k + beta s+ - log mu``;
      ``E[T - 1] = u1/k`` exactly in both forms (every negative view is uniform, so its weight has
      mean ``mu``), so the control variate does not change the mean.

    Args:
        model: the vMF model (identity embedding, closed-form moments). Outside it, the other
            pairs' views are drawn from ``pi M``, which is ``pi`` only when pi is M-invariant.
        batch_size: B >= 2. tau: temperature. n_batches: >= 2. form: ``"clip"`` or ``"nt_xent"``.
        device, seed: where and how to draw. level: interval level.
        max_elements: batches are drawn in chunks holding at most this many similarities.
    Returns:
        dict with ``plain`` and ``cv`` :class:`~infonce_book.theory.stats.Estimate` objects, ``k``,
        ``n_batches``, ``n_rows``, ``device``.
    """
    if not getattr(model, "identity_embedding", False):
        raise TypeError(f"model must live on the sphere with the identity embedding (the vMF model), got {model!r}")
    model.require("normalised_weight_moments", "monte_carlo_in_batch_bias needs the weight moments")
    k = in_batch_negatives(form, batch_size)
    B = int(batch_size)
    tau = check_tau(tau)
    n_batches = check_at_least(n_batches, "n_batches", 2, "an interval needs two batches")
    level = check_level(level)
    dev = resolve_device(device)
    gen = torch.Generator(device=dev)
    gen.manual_seed(check_seed(seed))
    mom = model.normalised_weight_moments(tau)
    limit = model.limit_risk(tau)
    chunk = max(1, check_k(max_elements, "max_elements") // (4 * B * B))
    plain, cv = [], []
    for lo in range(0, n_batches, chunk):
        n = min(chunk, n_batches - lo)
        x = model.sample_data(n * B, generator=gen, device=dev)
        xp = model.sample_positive(x, generator=gen)
        loss, minus_bs = in_batch_row_log_terms(x.reshape(n, B, -1), xp.reshape(n, B, -1), tau, form)
        centred = loss - math.log(k)
        log_T = centred - minus_bs - mom["log_mu"]
        dims = tuple(range(1, loss.dim()))
        plain.append((centred - limit).mean(dim=dims).cpu().numpy())
        cv.append((log_T - torch.expm1(log_T) + mom["u1"] / k).mean(dim=dims).cpu().numpy())
    plain, cv = np.concatenate(plain), np.concatenate(cv)
    return {"plain": Estimate.from_samples(plain, level, method="batch means"),
            "cv": Estimate.from_samples(cv, level, method="control variates, batch means"), "k": k,
            "n_batches": n_batches, "n_rows": n_batches * (2 * B), "device": str(dev)}
