"""Monte Carlo estimators with confidence intervals (book, Chapter 1, "Monte Carlo").

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

For a learned embedding, whose weight laws are unknown, :func:`plugin_weight_moments` forms the
moments of finite (empirical) laws given by similarities to held-out draws,
:func:`plugin_bias_coefficients` the constants ``c1(x), c2(x)`` of Chapter 1 from them, and
:func:`finite_law_monte_carlo` measures the finite-k risk, bias, positive term and top-1
retrieval of tuples drawn from the same laws (digits chapter).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..losses import VARIANTS, info_nce_streaming
from ..utils.device import resolve_device
from ..utils.progress import progress
from ..utils.validation import (
    CONFIDENCE_LEVEL,
    check_choice,
    check_float_tensor,
    check_k,
    check_scalar,
    check_seed,
    check_tau,
)
from .stats import Estimate
from .symbolic import bias_coefficient_functions


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
    Source: book, Chapter 1, "Monte Carlo estimates".
    """
    if not getattr(model, "identity_embedding", False):
        raise TypeError(f"model must live on the sphere with the identity embedding and closed-form weight "
                        f"moments (the vMF model: its closed forms give the control variates), got {model!r}")
    model.require("normalised_weight_moments", "monte_carlo_bias needs the weight moments for its control variates")
    check_choice(variant, "variant", VARIANTS)
    k = check_k(k)
    n_tuples = check_scalar(n_tuples, "n_tuples", ge=2, integer=True, why="an interval needs two tuples")
    tau = check_tau(tau)
    batch_size, chunk_size = check_k(batch_size, "batch_size"), check_k(chunk_size, "chunk_size")
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got dtype={dtype!r}")
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
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
    NT-Xent (book, Chapter 1, in-batch section)."""
    check_choice(form, "form", IN_BATCH_FORMS)
    B = check_scalar(batch_size, "batch_size", ge=2, integer=True,
                     why="an in-batch row needs one other pair as negatives")
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
    model (book, Chapter 1, in-batch section), with intervals.

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
    n_batches = check_scalar(n_batches, "n_batches", ge=2, integer=True, why="an interval needs two batches")
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
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


# ----------------------------------------------------------------------------------------------
# Plug-in estimates from similarities (a learned embedding on held-out data; book, digits chapter)


def _check_similarity_laws(s_pos, s_neg) -> None:
    check_float_tensor(s_pos, "s_pos")
    check_float_tensor(s_neg, "s_neg")
    if s_pos.dim() != 2 or s_neg.dim() != 2 or s_pos.shape[0] != s_neg.shape[0] or s_pos.shape[0] == 0 \
            or s_pos.shape[1] == 0 or s_neg.shape[1] == 0:
        raise ValueError(f"s_pos must be (n, P) and s_neg (n, M) with n, P, M >= 1 (one row per anchor); got "
                         f"s_pos {tuple(s_pos.shape)}, s_neg {tuple(s_neg.shape)}")


def plugin_weight_moments(s_pos: torch.Tensor, s_neg: torch.Tensor, tau) -> dict:
    """Per-anchor moments of the weights of finite laws given by similarities.

    Anchor ``i``'s positive has similarity uniform over the ``P`` values ``s_pos[i]`` and each
    negative has similarity uniform over the ``M`` values ``s_neg[i]`` (e.g. the similarities of
    a learned embedding to held-out draws: these laws are then the plug-in, empirical laws).
    With ``W = e^{beta s}``, ``mu(x) = E W``, ``V = W/mu`` and ``U = W+/mu``:

    Args:
        s_pos: (n, P) similarities of each anchor to its positive's draws.
        s_neg: (n, M) similarities of each anchor to its negatives' draws.
        tau: temperature > 0.
    Returns:
        dict of float64 NumPy arrays of shape (n,): ``log_mu``; ``u1, u2, u3`` (raw moments of
        ``U``); ``v2, v3, v4`` (central moments of ``V``); ``s_pos_mean`` (``E[s+ | x]``); and
        ``limit_risk`` (the anchor's term ``-beta E[s+ | x] + log mu(x)`` of ``L_inf``). All are
        formed in log space (``V <= M``, nothing overflows).
    Source: book, Chapter 1, Theorem ``c1-thm-rate`` (the moments of ``c_1, c_2``).

    Examples:
        >>> m = plugin_weight_moments(torch.zeros(1, 2), torch.tensor([[0.0, 1.0]]), 1.0)
        >>> round(float(m["v2"][0]), 6)  # V in {2/(1+e), 2e/(1+e)}: Var V = ((e-1)/(e+1))^2
        0.213552
    """
    _check_similarity_laws(s_pos, s_neg)
    beta = 1.0 / check_tau(tau)
    lw_neg, lw_pos = beta * s_neg.double(), beta * s_pos.double()
    log_mu = torch.logsumexp(lw_neg, dim=1) - math.log(s_neg.shape[1])
    v = torch.exp(lw_neg - log_mu[:, None])
    u = torch.exp(lw_pos - log_mu[:, None])
    d = v - 1.0
    out = {"log_mu": log_mu, "u1": u.mean(1), "u2": (u * u).mean(1), "u3": (u ** 3).mean(1),
           "v2": (d * d).mean(1), "v3": (d ** 3).mean(1), "v4": (d ** 4).mean(1),
           "s_pos_mean": s_pos.double().mean(1)}
    out["limit_risk"] = -beta * out["s_pos_mean"] + log_mu
    return {key: val.cpu().numpy() for key, val in out.items()}


def plugin_bias_coefficients(moments: dict, variant: str = "standard", order: int = 2) -> tuple:
    """``(c1(x), c2(x))`` (or up to ``c3`` with ``order=3``) for each anchor, from
    :func:`plugin_weight_moments`: ``E[log T_k | x] = c1(x)/k + c2(x)/k^2 + O(k^-3)``, so that
    ``k (L_k - log k - L_inf) -> c1 = E_x c1(x)``.

    ``c1(x) = u1 - v2/2`` (standard) or ``-v2/2`` (decoupled); ``c2`` as derived with sympy by
    :func:`infonce_book.theory.symbolic.bias_expansion`. Returns float64 arrays of shape (n,).
    Source: book, Chapter 1, Theorem ``c1-thm-rate`` and Proposition ``c1-prop-second-order``.
    """
    check_choice(variant, "variant", VARIANTS)
    if order not in (1, 2, 3):
        raise ValueError(f"order must be 1, 2 or 3, got order={order!r}")
    args = tuple(np.asarray(moments[name], dtype=np.float64) for name in ("u1", "u2", "u3", "v2", "v3", "v4"))
    return tuple(np.broadcast_to(np.asarray(f(*args), dtype=np.float64), args[0].shape).copy()
                 for f in bias_coefficient_functions(variant, order))


_FINITE_LAW_OUTPUTS = ("risk", "bias_plain", "bias_cv", "positive_term", "top1")


def finite_law_monte_carlo(s_pos: torch.Tensor, s_neg: torch.Tensor, tau, ks, *, n_per_anchor: int = 1,
                           generator: torch.Generator | None = None, chunk_elements: int = 2**22,
                           outputs=_FINITE_LAW_OUTPUTS) -> dict:
    """Monte Carlo over InfoNCE tuples drawn from the finite laws of :func:`plugin_weight_moments`.

    For anchor ``i`` a tuple is one positive similarity drawn uniformly from ``s_pos[i]`` and ``k``
    negative similarities drawn i.i.d. uniformly (with replacement) from ``s_neg[i]``. For these
    laws ``mu(x)``, ``E(W+ | x)`` and ``L_inf`` are exact sums, so the control variates of
    :func:`monte_carlo_bias` apply. Per anchor and per k, the means over ``n_per_anchor`` tuples of

    * ``risk``: the InfoNCE loss ``l_k`` (nats);
    * ``bias_plain``: ``l_k - log k - L_inf(x)``, whose mean is ``E[log T_k | x]``;
    * ``bias_cv``: ``log T - (T - 1) + u1(x)/k`` (same mean; standard deviation of order ``1/k``
      instead of ``O(1)`` once ``T`` concentrates);
    * ``positive_term``: ``l_k - l_k^dec = log(1 + W+ / sum_j W_j)`` (the standard minus the
      decoupled loss of the same tuple);
    * ``top1``: 1 when the positive's similarity exceeds every negative's (retrieval among k
      unseen items; ties count as failures).

    Args:
        s_pos: (n, P). s_neg: (n, M). tau: > 0. ks: integers >= 1.
        n_per_anchor: tuples per anchor and k (>= 1). generator: seeds the draws.
        chunk_elements: at most about this many gathered similarities are held at once.
        outputs: the names to compute (the bias needs the moments, which cost ``O(n M)``; the
            draws are the same whichever are asked for).
    Returns:
        dict of float64 NumPy arrays of shape ``(n, len(ks))`` under the names asked for, and ``ks``.
    Source: book, Chapter 1 (eq. ``c1-eq-T`` and the control variates of its Monte Carlo section).
    """
    _check_similarity_laws(s_pos, s_neg)
    beta = 1.0 / check_tau(tau)
    ks = [check_k(k) for k in np.atleast_1d(ks)]
    r = check_k(n_per_anchor, "n_per_anchor")
    names = tuple(outputs)
    unknown = set(names) - set(_FINITE_LAW_OUTPUTS)
    if unknown or not names:
        raise ValueError(f"outputs must be a non-empty subset of {list(_FINITE_LAW_OUTPUTS)}, got {list(names)}")
    dev = s_pos.device
    if {"bias_plain", "bias_cv"} & set(names):
        mom = plugin_weight_moments(s_pos, s_neg, tau)
        log_mu, u1, linf = (torch.as_tensor(mom[key], device=dev) for key in ("log_mu", "u1", "limit_risk"))
    n, P, M = s_pos.shape[0], s_pos.shape[1], s_neg.shape[1]
    out = {name: np.zeros((n, len(ks))) for name in names}
    for j, k in enumerate(ks):
        rows = max(1, chunk_elements // (r * k))
        for lo in range(0, n, rows):
            hi = min(n, lo + rows)
            m = hi - lo
            ip = torch.randint(0, P, (m, r), generator=generator, device=dev)
            sp = torch.gather(s_pos[lo:hi], 1, ip).double()  # (m, r)
            ineg = torch.randint(0, M, (m, r * k), generator=generator, device=dev)
            sn = torch.gather(s_neg[lo:hi], 1, ineg).double().reshape(m, r, k)
            lse_neg = torch.logsumexp(beta * sn, dim=2)  # log sum_j W_j
            lse = torch.logaddexp(beta * sp, lse_neg)  # log (W+ + sum_j W_j)
            loss = lse - beta * sp
            vals = {}
            if "risk" in names:
                vals["risk"] = loss
            if "bias_plain" in names:
                vals["bias_plain"] = loss - math.log(k) - linf[lo:hi, None]
            if "bias_cv" in names:
                log_t = lse - math.log(k) - log_mu[lo:hi, None]
                vals["bias_cv"] = log_t - torch.expm1(log_t) + (u1[lo:hi, None] / k)
            if "positive_term" in names:
                vals["positive_term"] = lse - lse_neg
            if "top1" in names:
                vals["top1"] = (sp > sn.max(dim=2).values).double()
            for name in names:
                out[name][lo:hi, j] = vals[name].mean(1).cpu().numpy()
    out["ks"] = np.asarray(ks)
    return out
