"""Empirical similarity-search kernels over a database (book: notation page; Chapter 2).

For a query ``x`` and a database ``x_1 .. x_k``:

* softmax search ``Q_hat(x, x_j) = W_j / sum_i W_i`` with ``W_j = e^{beta s(x, x_j)}``;
* idealised search ``M_hat(x, x_j) = m(x, x_j) / sum_i m(x, x_i)`` with ``m = dM(x, .)/dpi``;
* their cross-entropy ``H(M_hat, Q_hat) = - sum_j M_hat_j log Q_hat_j``.

Everything is computed in log space (log-sum-exp), for a batch of queries at once.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..utils.validation import CONFIDENCE_LEVEL, check_float_tensor, check_scalar, check_tau, check_unit_norm
from .stats import Estimate


def _check_db(x: torch.Tensor, name: str) -> None:
    check_float_tensor(x, name)
    if x.dim() != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must have shape (B, k) with B >= 1 queries and k >= 1 database items, "
                         f"got shape {tuple(x.shape)}")


def softmax_search_log_kernel(s_db: torch.Tensor, tau) -> torch.Tensor:
    """``log Q_hat(x, x_j)`` for each query and database item.

    Args:
        s_db: (B, k) similarities ``s(x, x_j)`` of B queries with k database items.
        tau: temperature > 0.
    Returns:
        (B, k) log-probabilities (each row's exponentials sum to 1), in the dtype of ``s_db``
        promoted to at least float32.
    """
    _check_db(s_db, "s_db")
    tau = check_tau(tau)
    z = s_db.to(torch.promote_types(s_db.dtype, torch.float32)) / tau
    return z - torch.logsumexp(z, dim=-1, keepdim=True)


def ideal_search_log_kernel(log_m_db: torch.Tensor) -> torch.Tensor:
    """``log M_hat(x, x_j)`` from the log density ratios ``log m(x, x_j)``: (B, k) -> (B, k)."""
    _check_db(log_m_db, "log_m_db")
    lm = log_m_db.to(torch.promote_types(log_m_db.dtype, torch.float32))
    return lm - torch.logsumexp(lm, dim=-1, keepdim=True)


def search_cross_entropy(s_db: torch.Tensor, log_m_db: torch.Tensor, tau) -> torch.Tensor:
    """``H(M_hat(x, .), Q_hat(x, .))`` for each query, in nats: (B, k), (B, k) -> (B,).

    Raises:
        ValueError: shapes differ or are not (B, k); NaN/inf entries; tau not in (0, inf).
    Source: book, Chapter 2, Theorem ``c2-thm-search``.
    """
    _check_db(s_db, "s_db")
    _check_db(log_m_db, "log_m_db")
    if s_db.shape != log_m_db.shape:
        raise ValueError(f"s_db and log_m_db must have the same shape (B, k); got s_db {tuple(s_db.shape)}, "
                         f"log_m_db {tuple(log_m_db.shape)}")
    log_q = softmax_search_log_kernel(s_db, tau)
    log_mhat = ideal_search_log_kernel(log_m_db)
    return -(torch.exp(log_mhat) * log_q).sum(dim=-1)


def positive_rank(score_pos: torch.Tensor, score_db: torch.Tensor) -> torch.Tensor:
    """Rank (1 = first) of the positive among itself and k database items under a score.

    Args:
        score_pos: (B,) score of the positive. score_db: (B, k) scores of the database items.
    Returns:
        (B,) integer ranks in 1..k+1; ties count against the positive (pessimistic).
    """
    check_float_tensor(score_pos, "score_pos")
    _check_db(score_db, "score_db")
    if score_pos.shape != score_db.shape[:1]:
        raise ValueError(f"score_pos must have shape (B,) with B = score_db.shape[0]; got score_pos "
                         f"{tuple(score_pos.shape)}, score_db {tuple(score_db.shape)}")
    return 1 + (score_db >= score_pos.unsqueeze(-1)).sum(dim=-1)


def empirical_kl_softmax(queries: torch.Tensor, sample: torch.Tensor, tau) -> torch.Tensor:
    """``KL(Q_hat_tau(x, .) || pi_hat)`` for each query, with ``pi_hat`` uniform on a sample.

    ``Q_hat(x, y_j) = e^{beta s_j} / sum_i e^{beta s_i}``, so the KL is
    ``beta sum_j Q_hat_j s_j - log mean_j e^{beta s_j}`` (log space).

    Args:
        queries: (B, d) unit-norm embeddings of the queries.
        sample: (B, n, d) an independent sample per query, or (n, d) shared; unit norm.
        tau: temperature > 0.
    Returns:
        (B,) KL in nats. Averaging over independent queries and samples estimates
        ``E_x KL(Q_tau(x, .) || pi)``, with a bias of order ``1/n`` (log of a mean).
    """
    check_float_tensor(queries, "queries")
    check_float_tensor(sample, "sample")
    if queries.dim() != 2 or sample.dim() not in (2, 3) or sample.shape[-1] != queries.shape[-1] \
            or (sample.dim() == 3 and sample.shape[0] != queries.shape[0]):
        raise ValueError(f"queries must be (B, d) and sample (B, n, d) or (n, d); got queries {tuple(queries.shape)} "
                         f"and sample {tuple(sample.shape)}")
    if queries.shape[0] == 0 or sample.shape[-2] == 0:
        raise ValueError(f"queries and sample must be non-empty; got queries {tuple(queries.shape)}, "
                         f"sample {tuple(sample.shape)}")
    check_unit_norm(queries, "queries")
    check_unit_norm(sample, "sample")
    beta = 1.0 / check_tau(tau)
    s = queries @ sample.T if sample.dim() == 2 else torch.einsum("bd,bnd->bn", queries, sample)
    z = beta * s
    log_q = z - torch.logsumexp(z, dim=-1, keepdim=True)
    return (torch.exp(log_q) * z).sum(-1) - (torch.logsumexp(z, dim=-1) - math.log(s.shape[-1]))


def empirical_kl_softmax_interval(queries: torch.Tensor, sample: torch.Tensor, tau, level: float = 0.95) -> Estimate:
    """Mean of :func:`empirical_kl_softmax` over the queries with a normal ``level`` interval:
    an estimate of ``E_x KL(Q_tau(x, .) || pi)`` for any embedding (queries drawn independently,
    each with its own sample ``(B, n, d)``, or a shared sample ``(n, d)``; with a shared sample the
    interval ignores the sample's own variability).

    Returns:
        an :class:`~infonce_book.theory.stats.Estimate`, in nats.
    """
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
    kl = empirical_kl_softmax(queries, sample, tau).double()
    if kl.numel() < 2:
        raise ValueError(f"queries must hold at least 2 queries for an interval, got shape {tuple(queries.shape)}")
    n = kl.numel()
    return Estimate(float(kl.mean()), float(kl.std()) / math.sqrt(n), n, level, method="monte carlo")


def monte_carlo_search_cross_entropy(sample_batch, k: int, n_queries: int, tau: float, batch_size: int) -> Estimate:
    """Monte Carlo mean of ``H(M_hat_k, Q_hat_k) - log k`` over ``n_queries`` queries, with a 95%
    normal interval (book, Chapter 2).

    ``sample_batch(n)`` returns ``(s_db, log_m_db)`` of shape (n, k) for n fresh queries (each with
    its own database of k unseen items): the similarities and log density ratios.
    """
    vals = []
    for lo in range(0, n_queries, batch_size):
        s_db, log_m_db = sample_batch(min(batch_size, n_queries - lo))
        vals.append((search_cross_entropy(s_db, log_m_db, tau) - math.log(k)).double().cpu().numpy())
    return Estimate.from_samples(np.concatenate(vals), 0.95, method="monte_carlo")
